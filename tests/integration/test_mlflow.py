"""MLflow on the sandbox: a real run logged to a local file store, and to an ``mlflow server``.

A chief and an evaluator train the quickstart's Estimator (TensorFlow 2.15);
``run_on_yarn`` finds the tracking URI in the environment and logs the launch's
parameters, the chief's loss by step, the evaluations by step, the final
status and every task's logs. MLflow 3 keeps its file store only with
``MLFLOW_ALLOW_FILE_STORE=true`` (it prefers a database); the first test sets it.
The others start a real tracking server (the full ``mlflow`` of the ``test``
extra) on a free local port, with a SQLite backend and the artifacts served
through it (``mlflow-artifacts:``), and log over HTTP: into a new run, into the
run the user started (tf-yarn's ``mlflow_example`` and its own check), and
with an artifact store that refuses every upload.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient

from tfyarn_jupyter import TaskSpec, run_on_yarn
from tfyarn_jupyter.run import mlflow_tracking

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.tf215_only]


SERVER_START_TIMEOUT_S = 120
#: The full mlflow, whose `mlflow server` the test starts, lives in a venv of its own
#: (.ci/setup's .venv-mlflow): the test environments, shipped to YARN, keep the tracking
#: client (mlflow-skinny) a user's notebook has. TFYARN_MLFLOW_SERVER names another.
MLFLOW_SERVER = Path(
    os.environ.get("TFYARN_MLFLOW_SERVER")
    or Path(__file__).resolve().parents[2] / ".venv-mlflow" / "bin" / "mlflow"
)


def launch_with_mlflow(experiment_fn, cancer_files, uri: str):
    """Launch the two-task run (the tracking URI already set) and check it succeeded."""
    specs = {"chief": TaskSpec("1G", 1), "evaluator": TaskSpec("1G", 1)}
    name = unique("mlflow")
    t0 = time.monotonic()
    result = run_on_yarn(experiment_fn, specs, files=cancer_files, name=name, queue="default")
    print(f"\nrun and MLflow logging ({uri.split(':')[0]}): {time.monotonic() - t0:.1f}s")
    assert result.final_status == "SUCCEEDED"
    return result


def run_and_check_mlflow(experiment_fn, cancer_files, uri: str, tmp_path: Path, max_steps: int):
    """Launch the two-task run with ``MLFLOW_TRACKING_URI=uri`` set and check what MLflow has."""
    result = launch_with_mlflow(experiment_fn, cancer_files, uri)
    return check_mlflow(uri, result, tmp_path, max_steps)


def check_mlflow(uri: str, result, tmp_path: Path, max_steps: int, experiment: str = "0"):
    """The run logged for ``result``, checked: ended FINISHED, parameters, metrics, logs."""
    client = MlflowClient(uri)
    (logged,) = client.search_runs([experiment], f"tags.`tfyarn.app_id` = '{result.app_id}'")
    run_id = logged.info.run_id
    assert logged.info.status == "FINISHED"
    params = logged.data.params
    assert params["topology"] == "chief=1,evaluator=1" and params["queue"] == "default"
    assert (params["chief_memory_mib"], params["chief_vcores"]) == ("1024", "1")
    assert params["tensorflow_version"] == mlflow_tracking.tf_version().strip()
    assert params["tensorflow_version"].startswith("2.15")
    assert logged.data.tags["tfyarn.final_status"] == "SUCCEEDED"
    assert logged.data.tags["tfyarn.run_status"] == "FINISHED"

    loss = client.get_metric_history(run_id, "loss")
    steps = [m.step for m in loss]
    print(f"loss logged at {len(steps)} steps: {steps}")
    assert steps and steps == sorted(set(steps)) and all(m.value > 0 for m in loss)
    evals = client.get_metric_history(run_id, "eval_accuracy")
    assert evals and max(m.step for m in evals) == max_steps
    assert all(0.0 <= m.value <= 1.0 for m in evals)
    assert logged.data.metrics["duration_s"] > 0

    names = {f.path for f in client.list_artifacts(run_id, "logs")}
    for task in ("chief_0", "evaluator_0"):
        assert {f"logs/{task}.stdout.log", f"logs/{task}.stderr.log"} <= names
    stderr = Path(client.download_artifacts(run_id, "logs/chief_0.stderr.log", str(tmp_path)))
    assert "chief:0 done" in stderr.read_text()
    assert "tfyarn_status.json" in {f.path for f in client.list_artifacts(run_id)}
    return logged


def test_a_run_logs_params_metrics_by_step_status_and_logs_to_mlflow(
    sandbox, cancer, cancer_files, tmp_path, monkeypatch
):
    store = f"file://{tmp_path}/mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=600, save_checkpoints_steps=100)

    run_and_check_mlflow(experiment_fn, cancer_files, store, tmp_path, max_steps=600)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_mlflow(tmp_path: Path, artifacts: Path) -> Iterator[str]:
    """A real ``mlflow server`` (SQLite backend, artifacts served through it into
    ``artifacts``); its URL.

    It runs in its own process group, stopped (TERM, then KILL) whatever the test did."""
    if not os.access(MLFLOW_SERVER, os.X_OK):
        pytest.fail(
            f"no `mlflow` at {MLFLOW_SERVER}: the MLflow server runs from a venv of its own; "
            "make it with .ci/setup (.venv-mlflow), or point TFYARN_MLFLOW_SERVER at an "
            "`mlflow` executable of the full mlflow package"
        )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "mlflow-server.log").open("wb")
    cmd = [
        str(MLFLOW_SERVER), "server",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
        "--backend-store-uri", f"sqlite:///{tmp_path}/mlflow.db",
        "--serve-artifacts", "--artifacts-destination", str(artifacts),
    ]  # fmt: skip
    # Its temporary files (SQLite's schema lock, db_init_lock-*) in the test's folder, not /tmp.
    # No job runner: MLflow 3 starts one by default (huey consumers polling all the while, 80
    # CPU-seconds of a CI run), and tracking, all a run uses, needs none.
    (tmp := tmp_path / "server-tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)  # fmt: skip
    try:
        t0 = time.monotonic()
        while True:
            assert proc.poll() is None, f"mlflow server exited: {log.name}"
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() - t0 < SERVER_START_TIMEOUT_S, f"no mlflow server: {log.name}"
            time.sleep(0.5)
        print(f"\nmlflow server up in {time.monotonic() - t0:.1f}s at {url}")
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` storing the artifacts in ``tmp_path/artifacts``; its URL."""
    with serve_mlflow(tmp_path, tmp_path / "artifacts") as url:
        yield url


@pytest.fixture
def broken_artifacts_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` whose artifact store fails every upload; its URL.

    Its destination lies under a regular file: the server cannot create it (even
    as root), and answers each upload 500 (``NotADirectoryError``)."""
    (tmp_path / "not-a-folder").write_text("")
    with serve_mlflow(tmp_path, tmp_path / "not-a-folder" / "artifacts") as url:
        yield url


def test_a_run_logs_to_an_mlflow_server_over_http(
    sandbox, cancer, cancer_files, mlflow_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=300, save_checkpoints_steps=100)

    logged = run_and_check_mlflow(experiment_fn, cancer_files, mlflow_server, tmp_path, 300)
    # the artifacts went through the server (proxied), into its destination folder
    assert logged.info.artifact_uri.startswith("mlflow-artifacts:")
    stored = {p.name for p in (tmp_path / "artifacts").rglob("*.log")}
    assert {"chief_0.stderr.log", "evaluator_0.stdout.log"} <= stored


@pytest.fixture
def users_tracking(mlflow_server: str, monkeypatch) -> Iterator[str]:
    """The tracking URI set as tf-yarn's example sets it (``mlflow.set_tracking_uri``, no
    variable); any run the test left active is ended, and the URI unset, afterwards."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    mlflow.set_tracking_uri(mlflow_server)
    try:
        yield mlflow_server
    finally:
        mlflow.end_run()
        mlflow.set_tracking_uri(None)


def test_a_run_the_user_started_gets_the_metrics_and_is_left_to_the_user(
    sandbox, cancer, cancer_files, users_tracking, tmp_path
):
    """tf-yarn's ``mlflow_example``: start a run, launch, end it, read its metrics back."""
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=300, save_checkpoints_steps=100)

    experiment_id = mlflow.create_experiment(unique("tf-yarn-tests"))
    run_id = mlflow.start_run(experiment_id=experiment_id).info.run_id
    result = launch_with_mlflow(experiment_fn, cancer_files, users_tracking)
    client = MlflowClient(users_tracking)
    assert client.get_run(run_id).info.status == "RUNNING"  # the user's: not ended by the launch
    assert [r.info.run_id for r in client.search_runs([experiment_id, "0"])] == [run_id]
    mlflow.end_run()

    # tf-yarn's own check, as its example makes it: the REST API's view of the user's run
    url = f"{users_tracking}/api/2.0/mlflow/runs/get?run_id={run_id}"
    with urllib.request.urlopen(url, timeout=30) as resp:
        run_json = json.load(resp)
    metrics = run_json["run"]["data"]["metrics"]
    assert len(metrics) > 0
    logged = check_mlflow(users_tracking, result, tmp_path, 300, experiment=experiment_id)
    assert logged.info.run_id == run_id


def test_a_failing_artifact_store_leaves_no_run_running(
    sandbox, cancer, cancer_files, broken_artifacts_server, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", broken_artifacts_server)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    # each refused upload fails after one retry, not after MLflow's default 7 (minutes)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=300, save_checkpoints_steps=100)

    result = launch_with_mlflow(experiment_fn, cancer_files, broken_artifacts_server)

    client = MlflowClient(broken_artifacts_server)
    runs = client.search_runs(["0"])
    assert [r.info.status for r in runs] == ["FINISHED"]
    (logged,) = runs
    assert logged.data.tags["tfyarn.app_id"] == result.app_id
    assert logged.data.tags["tfyarn.run_status"] == "FINISHED"
    assert client.get_metric_history(logged.info.run_id, "loss")  # logged before the end
    assert "MLflow: logging the end failed" in caplog.text
