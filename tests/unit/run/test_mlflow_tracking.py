"""The MLflow tracker: when it is on, what it logs, and that MLflow failing never fails a run.

The figures come from :class:`~tfyarn_jupyter.core.state.RunStatus` snapshots as the
run's driver step sees them; MLflow is the real client on a file store in
``tmp_path`` (the sandbox test drives it from a real run).
"""

from __future__ import annotations

import types

import mlflow
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


@pytest.fixture
def user_run(store, monkeypatch):
    """The notebook's active MLflow run (the fluent API's, as ``mlflow.start_run()`` makes it);
    the test ends it, as its user would."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    active = mlflow.start_run()
    try:
        yield active.info.run_id
    finally:
        mlflow.end_run()


def run_to_its_end(tracker, run, state: str, final: str) -> None:
    """One progress report, then the launch's end as ``state`` / ``final``."""
    tracker.observe(run, status(progress={"chief:0": {"step": 10, "loss": 0.9, "t": 1.0}}))
    run.ended = True
    tracker.observe(run, status(state, final, metrics=[{"step": 10, "accuracy": 0.8, "t": 2.0}]))


def test_an_active_user_run_gets_the_launch_logged_into_it_and_is_left_running(store, user_run):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions(queue="ml", name="demo"))
    assert tracker.run_id == user_run and not tracker.owned
    run_to_its_end(tracker, run, "FINISHED", "SUCCEEDED")
    tracker.close("KILLED")  # what the exit hook calls: never for the user's run

    got = client.get_run(user_run)
    assert got.info.status == "RUNNING"
    assert mlflow.active_run().info.run_id == user_run
    assert (got.data.metrics["loss"], got.data.metrics["eval_accuracy"]) == (0.9, 0.8)
    assert got.data.params["topology"] == "chief=1,worker=2,tensorboard=1"
    assert got.data.tags["tfyarn.app_id"] == "application_1_0001"
    assert got.data.tags["tfyarn.final_status"] == "SUCCEEDED"
    assert got.data.tags["tfyarn.run_status"] == "FINISHED"
    assert "tfyarn_status.json" in {f.path for f in client.list_artifacts(user_run)}
    assert [r.info.run_id for r in client.search_runs(["0"])] == [user_run]  # none nested


def test_params_the_active_run_already_has_are_kept_and_logging_goes_on(store, user_run, caplog):
    mlflow.log_param("queue", "the-users-queue")
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions(queue="ml"))
    tracker.observe(run, status(progress={"chief:0": {"step": 10, "loss": 0.9, "t": 1.0}}))

    assert tracker.enabled
    got = client.get_run(user_run)
    assert got.data.params["queue"] == "the-users-queue"
    assert got.data.params["topology"] == "chief=1,worker=2,tensorboard=1"
    assert got.data.metrics["loss"] == 0.9
    assert "parameter queue is already 'the-users-queue', not 'ml'" in caplog.text


@pytest.mark.parametrize(
    ("state", "final", "mlflow_status"),
    [("FINISHED", "SUCCEEDED", "FINISHED"), ("FINISHED", "FAILED", "FAILED"),
     ("KILLED", "KILLED", "KILLED")],
)  # fmt: skip
def test_without_an_active_run_the_created_run_is_ended_as_the_launch_ended(
    store, state, final, mlflow_status
):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions(name="demo"))
    assert tracker.owned and client.get_run(tracker.run_id).info.status == "RUNNING"
    run_to_its_end(tracker, run, state, final)

    (got,) = client.search_runs(["0"])
    assert got.info.run_id == tracker.run_id and got.info.status == mlflow_status
    assert got.data.tags["tfyarn.run_status"] == mlflow_status
    assert "mlflow.parentRunId" not in got.data.tags
    assert got.info.run_name == "demo application_1_0001"


@pytest.mark.parametrize(
    ("final", "mlflow_status"),
    [("SUCCEEDED", "FINISHED"), ("FAILED", "FAILED"), ("KILLED", "KILLED")],
)
def test_an_artifact_upload_that_raises_leaves_no_run_running(
    store, monkeypatch, caplog, final, mlflow_status
):
    client = MlflowClient(store)

    def unreachable(*args, **kwargs):
        raise OSError("artifact store unreachable")

    monkeypatch.setattr(client, "log_artifacts", unreachable)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions())
    run_to_its_end(tracker, run, "KILLED" if final == "KILLED" else "FINISHED", final)

    statuses = [r.info.status for r in client.search_runs(["0"])]
    assert statuses == [mlflow_status]
    assert client.get_run(tracker.run_id).data.metrics["duration_s"] == 60.0  # logged before it
    assert "logging the end failed" in caplog.text and "artifact store unreachable" in caplog.text


def test_an_interrupt_while_uploading_still_ends_the_run_and_goes_on_up(store, monkeypatch):
    client = MlflowClient(store)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(client, "log_artifacts", interrupted)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions())
    with pytest.raises(KeyboardInterrupt):
        run_to_its_end(tracker, run, "FINISHED", "SUCCEEDED")
    assert client.get_run(tracker.run_id).info.status == "FINISHED"


def test_a_run_whose_logging_failed_midway_is_still_ended(store, monkeypatch):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions())

    def refused(*args, **kwargs):
        raise ConnectionError("tracking server restarting")

    monkeypatch.setattr(client, "log_batch", refused)
    run_to_its_end(tracker, run, "FINISHED", "FAILED")

    got = client.get_run(tracker.run_id)
    assert not tracker.enabled
    assert got.info.status == "FAILED"
    assert "tfyarn.final_status" not in got.data.tags  # the end was not logged, the run ended


def test_a_run_still_open_when_the_process_exits_is_ended_killed(store):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions())
    mlflow_tracking._end_open_runs()

    got = client.get_run(tracker.run_id)
    assert got.info.status == "KILLED"
    assert got.data.tags["tfyarn.ended_by"] == "the process exited before the run ended"
    assert tracker not in mlflow_tracking._OPEN
    run_to_its_end(tracker, run, "FINISHED", "SUCCEEDED")  # seen later: logged, not re-ended
    assert client.get_run(tracker.run_id).info.status == "KILLED"


def test_ending_a_run_is_tried_again_when_the_first_request_fails(store, monkeypatch, caplog):
    client = MlflowClient(store)
    tracker, run = mlflow_tracking.Tracker(client), FakeRun()
    tracker.start(run, LaunchOptions())
    real_set_terminated, calls = client.set_terminated, []

    def reset_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise ConnectionError("connection reset by peer")
        return real_set_terminated(*args, **kwargs)

    monkeypatch.setattr(client, "set_terminated", reset_once)
    run_to_its_end(tracker, run, "FINISHED", "SUCCEEDED")

    assert len(calls) == 2
    assert client.get_run(tracker.run_id).info.status == "FINISHED"
    assert "connection reset by peer" in caplog.text
