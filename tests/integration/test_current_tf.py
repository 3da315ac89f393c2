"""Current TensorFlow on the sandbox: Keras strategies, plain functions, progress, hdfs:// dirs.

Runs in both test environments: TensorFlow 2.15 (tf.keras 2) and 2.21 (Keras 3,
or tf-keras where the strategy needs it). Model directories are ``hdfs://``
URIs: TensorFlow's wheels cannot open them, the tasks sync them themselves.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tfyarn_jupyter import TaskSpec, distributed, submit
from tfyarn_jupyter.core import program
from tfyarn_jupyter.hadoop import filesystem

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.current_tf]

SMALL = TaskSpec("1G", 1)
RUN_TIMEOUT_S = 600
TF = program.tensorflow_version() or (0, 0)


@pytest.fixture
def hdfs_dir(sandbox) -> Iterator[str]:
    """A fresh ``hdfs://`` folder under the user's home, deleted afterwards."""
    path = f"{filesystem.home()}/tfyarn-test/{unique('model')}"
    yield filesystem.qualify(path)
    filesystem.client().delete(path, recursive=True)


def drive(run, timeout: float = RUN_TIMEOUT_S, until=None) -> list:
    """Advance the run until it ends (or ``until(status)``); every snapshot, in order."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        st = run.advance()
        seen.append(st)
        if st.ended or (until is not None and until(st)):
            return seen
        assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state}: {st.pending}"
        time.sleep(1.0)


def remote_files(uri: str) -> set[str]:
    """The names in an HDFS folder (none while it does not exist yet)."""
    path = filesystem.strip_scheme(uri)
    return set(filesystem.client().list(path)) if filesystem.exists(path) else set()


def keras_env(strategy_needs_legacy: bool) -> dict[str, str]:
    """Keras 3 trains neither strategy (README: the Keras table); tf-keras does."""
    return {"TF_USE_LEGACY_KERAS": "1"} if strategy_needs_legacy and TF >= (2, 16) else {}


def test_a_strategy_keras_3_cannot_train_is_refused_before_anything_is_submitted(
    sandbox, cancer, app_names, monkeypatch
):
    from tfyarn_jupyter import SpecError

    # What the 2.21 environment has (set here so that both environments prove it).
    monkeypatch.setattr(program, "tensorflow_version", lambda: (2, 21))

    def experiment_fn():
        return cancer.keras_experiment("hdfs:///nowhere")

    name = unique("tfyarn-refused")
    with pytest.raises(SpecError, match="TF_USE_LEGACY_KERAS"):
        submit(experiment_fn, {"chief": SMALL, "worker": SMALL}, name=name)
    assert name not in app_names()


def test_keras_multi_worker_mirrored_trains_chief_and_two_workers_into_an_hdfs_model_dir(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=2, steps_per_epoch=20)

    specs = {"chief": SMALL, "worker": TaskSpec("1G", 1, instances=2)}
    run = submit(experiment_fn, specs, files=cancer_files, name=unique("tfyarn-mwms"),
                 env=keras_env(strategy_needs_legacy=True))  # fmt: skip
    runs.append(run)
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert result.final_status == "SUCCEEDED"
    assert any(name.startswith("ckpt") or name == "checkpoint" for name in remote_files(hdfs_dir))
    assert set(result.training_time_s_per_task) == {"chief:0", "worker:0", "worker:1"}


def test_keras_parameter_server_trains_with_a_chief_a_worker_and_a_ps(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=2, steps_per_epoch=20)

    specs = {"chief": SMALL, "worker": SMALL, "ps": TaskSpec("512M", 1)}
    run = submit(experiment_fn, specs, files=cancer_files, name=unique("tfyarn-pss"),
                 env=keras_env(strategy_needs_legacy=True))  # fmt: skip
    runs.append(run)
    assert run.wait(timeout=RUN_TIMEOUT_S).final_status == "SUCCEEDED"


def test_the_evaluator_reads_the_hdfs_model_dir_and_publishes_metrics(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=3, steps_per_epoch=20)

    run = submit(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, files=cancer_files,
                 name=unique("tfyarn-eval"))  # fmt: skip
    runs.append(run)
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert "loss" in result.metrics and "accuracy" in result.metrics, result.metrics
    assert result.eval_time_s > 0


def test_progress_increases_while_running_and_says_steps_per_second(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        # Long enough (about a minute and a half at 1000 steps/s) that three reports come
        # while it runs, whatever the machine's speed; the test cancels it after them.
        return cancer.keras_experiment(hdfs_dir, epochs=40, steps_per_epoch=2500)

    run = submit(experiment_fn, {"chief": SMALL}, files=cancer_files, name=unique("tfyarn-prog"))
    runs.append(run)
    steps: list[int] = []

    def two_reports(st) -> bool:
        p = st.progress.get("chief:0") or {}
        if p.get("step") is None:  # resources only: training has not reported yet
            return False
        if st.app.state == "RUNNING" and (not steps or p["step"] != steps[-1]):
            steps.append(p["step"])
            assert p["steps_per_s"] > 0 and "loss" in p, p
        return len(steps) >= 3

    drive(run, until=two_reports)
    run.cancel()
    assert steps == sorted(steps) and steps[0] < steps[-1], steps


def test_a_run_killed_mid_way_resumes_from_its_hdfs_checkpoint(
    sandbox, cancer, cancer_files, hdfs_dir, runs
):
    def experiment_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=40, steps_per_epoch=10)

    first = submit(experiment_fn, {"chief": SMALL}, files=cancer_files, name=unique("tfyarn-kill"))
    runs.append(first)
    drive(first, until=lambda st: "checkpoint" in remote_files(hdfs_dir))
    first.cancel()
    drive(first)

    def short_fn():
        return cancer.keras_experiment(hdfs_dir, epochs=1, steps_per_epoch=10)

    second = submit(short_fn, {"chief": SMALL}, files=cancer_files, name=unique("tfyarn-resume"))
    runs.append(second)
    second.wait(timeout=RUN_TIMEOUT_S)
    logs = second.logs("chief:0")
    assert "restored" in (logs.stderr + logs.stdout).lower(), logs.stderr[-2000:]


def test_a_plain_function_runs_on_workers_only_with_rank_and_world_size(sandbox, runs):
    def train():
        import json
        import os

        import tfyarn_jupyter

        info = tfyarn_jupyter.task_info()
        cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
        assert int(os.environ["WORLD_SIZE"]) == 2 == info.world_size
        assert "chief" not in cluster and len(cluster["worker"]) == 2
        for step in range(1, 4):
            tfyarn_jupyter.report(step=step, loss=1.0 / step)
        print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}, master "
              f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")  # fmt: skip

    run = distributed.submit(
        train, {"worker": TaskSpec("512M", 1, instances=2)}, name=unique("tfyarn-fn")
    )
    runs.append(run)
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert result.final_status == "SUCCEEDED"
    out = run.logs("worker:1").stdout
    assert "rank 1 of 2" in out, out[-2000:]
