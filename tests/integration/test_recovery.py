"""Runs that survive a lost task (issue 25), on the sandbox: a task nothing waits on is
restarted alone, in the same application, by YARN's application master."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tfyarn_jupyter import TaskSpec, submit
from tfyarn_jupyter.hadoop import filesystem

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.tf215_only]

SMALL = TaskSpec("1G", 1)


def _evaluator_pid(run) -> int | None:
    container = run.source.events.task("evaluator:0").get("container") or {}
    return container.get("pid")


def test_a_killed_evaluator_restarts_alone_and_the_chief_never_stops(
    sandbox, skein_client, cancer, cancer_files, runs
):
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('recover')}")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=1500, step_delay_s=0.02)

    run = submit(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, files=cancer_files,
                 name=unique("tfyarn-recover-eval"))  # fmt: skip
    runs.append(run)
    deadline = time.monotonic() + 300
    while True:
        st = run.status()  # reads the tasks' events
        pid = _evaluator_pid(run)
        if pid is not None and (st.progress.get("chief:0") or {}).get("step"):
            break
        assert time.monotonic() < deadline, f"the evaluator never started: {st.pending}"
        time.sleep(1)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)  # the sandbox's NodeManagers run on this machine
    app = skein_client.connect(run.app_id)
    while True:
        evaluators = app.get_containers(services=["evaluator"], states=list(_states()))
        if len(evaluators) >= 2 and any(str(c.state) == "RUNNING" for c in evaluators):
            break
        assert time.monotonic() - killed_at < 120, evaluators
        time.sleep(1)
    print(f"evaluator back {time.monotonic() - killed_at:.1f} s after it was killed")
    chiefs = app.get_containers(services=["chief"], states=list(_states()))
    result = run.wait(timeout=600)
    assert result.final_status == "SUCCEEDED"
    assert result.attempts == [run.app_id], "the same application: no new attempt"
    assert len(chiefs) == 1 and str(chiefs[0].state) in ("RUNNING", "SUCCEEDED")
    assert result.tasks["chief:0"]["state"] == "succeeded"
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)


def _states():
    from skein.model import ContainerState

    return ContainerState
