"""The MLflow tracker: when it is on, what it logs, and that MLflow failing never fails a run.

The figures come from :class:`~tfyarn_jupyter.core.state.RunStatus` snapshots as the
run's driver step sees them; MLflow is the real client on a file store in
``tmp_path`` (the sandbox test drives it from a real run).
"""

from __future__ import annotations

import types

import pytest
from mlflow.tracking import MlflowClient

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.core.state import AppInfo, Failure, RunStatus, TaskState
from tfyarn_jupyter.run import mlflow_tracking

SPECS = {"chief": TaskSpec("2G", 4), "worker": TaskSpec("1G", 1, 2, label="gpu"),
         "tensorboard": TaskSpec("1G", 1)}  # fmt: skip


def test_on_when_asked_or_when_a_tracking_uri_is_set():
    assert mlflow_tracking.wanted(True, {})
    assert not mlflow_tracking.wanted(False, {"MLFLOW_TRACKING_URI": "x"})
    assert mlflow_tracking.wanted(None, {"MLFLOW_TRACKING_URI": "http://mlflow:5000"})


def test_asking_for_mlflow_without_it_is_refused_before_submission(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mlflow(name, *args, **kwargs):
        if name.startswith("mlflow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    with pytest.raises(SpecError, match=r"pip install 'tfyarn_jupyter\[mlflow\]'"):
        mlflow_tracking.tracker_for(True)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert mlflow_tracking.tracker_for(None) is None  # only asked for by the variable: a warning


def test_params_hold_topology_resources_queue_and_versions():
    opts = LaunchOptions(queue="ml", name="demo", pip_packages=["a==1"])
    p = mlflow_tracking.params_of(SPECS, opts)
    assert p["topology"] == "chief=1,worker=2,tensorboard=1"
    assert (p["chief_memory_mib"], p["chief_vcores"], p["worker_instances"]) == ("2048", "4", "2")
    assert (p["worker_label"], p["chief_label"]) == ("gpu", "cpu")
    assert (p["queue"], p["name"], p["pip_packages"]) == ("ml", "demo", "a==1")
    assert p["tensorflow_version"] and p["tfyarn_jupyter_version"]
    assert p["tb_model_dir"] == "(the model dir)"


def test_training_points_are_the_checkpointing_trainers_figures_past_the_last_step():
    progress = {"worker:1": {"step": 90, "loss": 9.0, "t": 1.0},
                "chief:0": {"step": 100, "loss": 0.5, "steps_per_s": 12.5, "t": 2.0,
                            "max_steps": 400, "rss_bytes": 5, "history": [[1, 2]],
                            "accuracy": float("nan")}}  # fmt: skip
    points = mlflow_tracking.training_points(progress, after=50)
    assert points == [("loss", 0.5, 100, 2000), ("steps_per_s", 12.5, 100, 2000)]
    assert mlflow_tracking.training_points(progress, after=100) == []
    assert mlflow_tracking.training_points({"worker:0": {"step": 3, "loss": 1}}, -1)[0][:3] == (
        "loss", 1.0, 3)  # fmt: skip


def test_evaluation_points_are_prefixed_and_each_step_is_logged_once():
    metrics = [{"step": 100, "accuracy": 0.9, "global_step": 100, "t": 3.0},
               {"step": 200, "auc": 0.95, "label/mean": 0.6, "t": 4.0}]  # fmt: skip
    points = mlflow_tracking.evaluation_points(metrics, seen={100})
    assert points == [("eval_auc", 0.95, 200, 4000), ("eval_label/mean", 0.6, 200, 4000)]


def status(state: str = "RUNNING", final: str = "UNDEFINED", **kwargs) -> RunStatus:
    app = AppInfo("application_1_0001", queue="ml", user="alice", state=state,
                  final_status=final, start_time=1000.0,
                  finish_time=61000.0 if state != "RUNNING" else 0.0)  # fmt: skip
    tasks = [TaskState("chief:0", "chief", 0, state="running"),
             TaskState("evaluator:0", "evaluator", 0, state="requested")]  # fmt: skip
    return RunStatus(app=app, tasks=tasks, pending=[], failure=None,
                     metrics=kwargs.pop("metrics", []), **kwargs)  # fmt: skip


class FakeRun:
    """What the tracker reads of a Run: its id, topology, attempts, end, and logs."""

    def __init__(self) -> None:
        self.app_id, self.task_specs = "application_1_0001", SPECS
        self.attempts = [self.app_id]
        self.ended = False

    def logs(self, task: str):
        if task == "evaluator:0":
            raise KeyError("no container for task 'evaluator:0'")
        return types.SimpleNamespace(stdout=f"{task} out\n", stderr=f"{task} err\n")


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    return f"file://{tmp_path}/mlruns"


def test_a_run_logs_params_metrics_by_step_final_status_and_task_logs(store):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions(queue="ml", name="demo"))
    assert tracker.run_id
    tracker.observe(run, status(progress={"chief:0": {"step": 10, "loss": 0.9, "t": 1.0}}))
    tracker.observe(run, status(progress={"chief:0": {"step": 10, "loss": 0.9, "t": 1.5}}))
    tracker.observe(run, status(progress={"chief:0": {"step": 20, "loss": 0.7, "t": 2.0}},
                                metrics=[{"step": 20, "accuracy": 0.8, "t": 2.5}]))  # fmt: skip
    run.ended = True
    failed = status("FINISHED", "FAILED", metrics=[{"step": 20, "accuracy": 0.8, "t": 2.5}])
    failed.failure = Failure("chief:0", "Traceback: boom")
    tracker.observe(run, failed)
    tracker.observe(run, failed)  # once ended, nothing more

    got = client.get_run(tracker.run_id)
    assert got.info.status == "FAILED"
    assert got.data.params["queue"] == "ml" and got.data.params["topology"].startswith("chief=1")
    assert got.data.tags["tfyarn.app_id"] == "application_1_0001"
    assert got.data.tags["tfyarn.final_status"] == "FAILED"
    assert got.data.tags["tfyarn.failed_task"] == "chief:0"
    assert [(m.step, m.value) for m in client.get_metric_history(tracker.run_id, "loss")] == [
        (10, 0.9), (20, 0.7)]  # fmt: skip
    assert [m.step for m in client.get_metric_history(tracker.run_id, "eval_accuracy")] == [20]
    assert got.data.metrics["duration_s"] == 60.0
    names = {f.path for f in client.list_artifacts(tracker.run_id, "logs")}
    assert {"logs/chief_0.stdout.log", "logs/chief_0.stderr.log",
            "logs/evaluator_0.stderr.log"} <= names  # fmt: skip
    assert "tfyarn_status.json" in {f.path for f in client.list_artifacts(tracker.run_id)}


def test_mlflow_failing_disables_the_tracker_and_never_raises(store, caplog):
    class Broken:
        def create_run(self, *args, **kwargs):
            raise ConnectionError("tracking server unreachable")

    tracker, run = mlflow_tracking.Tracker(Broken()), FakeRun()
    tracker.start(run, LaunchOptions())
    assert not tracker.enabled and tracker.run_id is None
    run.ended = True
    tracker.observe(run, status("FINISHED", "SUCCEEDED"))  # nothing to log to: no error
    assert "tracking server unreachable" in caplog.text


def test_the_mlflow_status_of_each_end():
    assert mlflow_tracking.final_state(status("FINISHED", "SUCCEEDED")) == "FINISHED"
    assert mlflow_tracking.final_state(status("KILLED", "KILLED")) == "KILLED"
    assert mlflow_tracking.final_state(status("FAILED", "FAILED")) == "FAILED"
