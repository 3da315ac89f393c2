"""Time to the first step, phase by phase (issue 23): every task reports the phases of its
start as events, in order, and the run's status (the panel's data) and result carry them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tfyarn_jupyter import TaskSpec, submit
from tfyarn_jupyter.core.timeline import PHASES
from tfyarn_jupyter.hadoop import filesystem

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.current_tf]

SMALL = TaskSpec("1G", 1)


@pytest.fixture
def hdfs_dir(sandbox) -> Iterator[str]:
    path = f"{filesystem.home()}/tfyarn-test/{unique('phases')}"
    yield filesystem.qualify(path)
    filesystem.client().delete(path, recursive=True)


def test_the_phases_of_each_tasks_start_arrive_in_order_and_reach_the_result(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=2, steps_per_epoch=20)

    run = submit(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, files=cancer_files,
                 name=unique("tfyarn-phases"))  # fmt: skip
    runs.append(run)
    result = run.wait(timeout=600)
    assert result.final_status == "SUCCEEDED"
    chief = result.phases_s_per_task["chief:0"]
    print(f"chief's start, seconds from its container's start: {chief}")
    print(f"evaluator's: {result.phases_s_per_task.get('evaluator:0')}")
    expected = ["interpreter", "cluster", "tensorflow", "model", "restored", "train_start",
                "first_step"]  # fmt: skip
    assert list(chief) == expected, chief
    # In the order they happened, but for the cluster and TensorFlow's import, which overlap.
    assert chief["interpreter"] <= min(chief["cluster"], chief["tensorflow"])
    after = [chief[p] for p in expected[2:]]
    assert after == sorted(after) and chief["cluster"] <= chief["model"], chief
    assert {"interpreter", "tensorflow", "model"} <= set(result.phases_s_per_task["evaluator:0"])
    panel_task = next(t for t in run.last_status.to_dict()["tasks"] if t["task"] == "chief:0")
    assert list(panel_task["phases"]) == expected and set(expected) <= set(PHASES)
