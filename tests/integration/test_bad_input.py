"""Bad input: each mistake gives a clear error; what can be caught locally submits nothing.

What only the cluster can see (what ``experiment_fn`` returns or raises when
it runs there, a request no node can take now) ends the run with a message
that says what went wrong, within a bound. The configuration mistakes
(no ``HADOOP_CONF_DIR``, a ResourceManager that is not there) run in a
subprocess with a changed environment, so this session's skein driver is
left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from tfyarn_sandbox.site_xml import to_xml

from tfyarn_jupyter import NodeLabel, RunFailed, SpecError, TaskSpec, submit
from tfyarn_jupyter.hadoop import filesystem, resourcemanager
from tfyarn_jupyter.hadoop.filesystem import read_conf
from tfyarn_jupyter.ship import layered_launch, packing

from .helpers import unique

pytestmark = pytest.mark.sandbox

SMALL = TaskSpec("512M", 1)
RUN_TIMEOUT_S = 600


def wait_failed(run, timeout: float = RUN_TIMEOUT_S) -> tuple[RunFailed, list]:
    """Poll until the run ended; return its RunFailed and every snapshot seen."""
    snapshots = []
    deadline = time.monotonic() + timeout
    while not (st := run.status()).ended:
        snapshots.append(st)
        assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state}: {st.pending}"
        time.sleep(1.0)
    snapshots.append(st)
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=60)
    return exc.value, snapshots


# -- caught on the cluster ---------------------------------------------------------------
def test_experiment_fn_returning_something_else_fails_the_run_saying_what_it_returned(
    sandbox, runs
):
    def experiment_fn():
        return {"estimator": None, "note": "not an Experiment"}

    run = submit(experiment_fn, {"chief": SMALL}, name=unique("tfyarn-test-notexp"))
    runs.append(run)
    err, _ = wait_failed(run)
    assert err.task == "chief:0"
    assert "experiment_fn must return KerasExperiment(" in str(err)
    assert "or Experiment(estimator, train_spec, eval_spec), got dict" in str(err)
    assert "got dict" in err.traceback
    assert err.status is not None and err.status.app.final_status == "FAILED"


def test_experiment_fn_that_raises_on_the_cluster_fails_with_its_traceback(sandbox, runs):
    token = uuid.uuid4().hex[:12]

    def load_settings():
        raise KeyError(f"no setting {token} on this node")

    def experiment_fn():
        load_settings()

    run = submit(experiment_fn, {"chief": SMALL}, name=unique("tfyarn-test-raises"))
    runs.append(run)
    err, _ = wait_failed(run)
    assert err.task == "chief:0"
    assert "Traceback (most recent call last)" in err.traceback
    assert f"KeyError: 'no setting {token} on this node'" in err.traceback
    # The user's own frames, in order: where it was called and where it raised.
    assert err.traceback.index("in experiment_fn") < err.traceback.index("in load_settings")
    assert err.traceback in str(err)


def test_request_that_fits_a_node_but_not_the_queue_with_its_master_is_refused(sandbox, app_names):
    # 8 GiB / 8 vcores fits the unlabelled node on paper, but with the chief, the ps and
    # the run's own application master it exceeds what queue default may ever hold there:
    # once it waited for ever (until the peer timeout); now it is refused before submission.
    # (A run that fits but waits is tests/integration/test_dashboard_data.py's.)
    specs = {"chief": SMALL, "ps": SMALL, "worker": TaskSpec("8G", 8)}
    name = unique("tfyarn-test-pending")
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, specs, name=name, peer_timeout_s=30.0)
    text = str(exc.value)
    assert text.startswith("the run needs 9728 MiB / 11 vcores in the unlabelled partition")
    assert "worker 1x8192 MiB/8 vcores" in text
    assert "queue 'default' can hold at most 8192 MiB / 8 vcores there" in text
    assert name not in app_names()


def test_a_task_module_that_dies_before_reporting_fails_quoting_its_last_error_line(
    sandbox, runs, tmp_path
):
    # A module of one's own, shipped with files=, that imports tf-yarn (not shipped): every
    # container dies before reporting anything, and skein's master says only "see logs".
    task = tmp_path / "uses_tf_yarn.py"
    task.write_text("from tf_yarn import event  # tf-yarn's helpers, not shipped\n")
    name = unique("tfyarn-test-noreport")
    run = submit(lambda: None, {"chief": SMALL}, files={"uses_tf_yarn.py": task},
                 custom_task_module="uses_tf_yarn", name=name)  # fmt: skip
    runs.append(run)
    err, _ = wait_failed(run)
    assert err.task == "chief:0"
    assert err.traceback.startswith(
        "chief:0 ended before reporting to tfyarn; the last error in its stderr:\n"
    )
    assert "\nModuleNotFoundError: No module named 'tf_yarn'\n" in err.traceback
    assert err.traceback.endswith("chief:0: its process exited with status 1")
    assert "see logs" not in str(err)
    # It failed by itself: it ends the run, it is not restarted in the application.
    assert [t.restarts for t in err.status.tasks if t.task == "chief:0"] == [0]


# -- caught before submission --------------------------------------------------------------
@pytest.fixture
def nothing_shipped(monkeypatch) -> list[str]:
    """The upload and submission steps of a launch, each recorded (and stopped) if reached."""
    reached: list[str] = []

    def step(name: str):
        def reached_step(*args, **kwargs):
            reached.append(name)
            raise AssertionError(f"{name} reached")

        return reached_step

    monkeypatch.setattr(packing, "ensure_env", step("packing.ensure_env"))
    monkeypatch.setattr(layered_launch, "launch_layers", step("layered_launch.launch_layers"))
    monkeypatch.setattr(filesystem, "upload_stream", step("filesystem.upload_stream"))
    monkeypatch.setattr(resourcemanager, "submit_spec", step("resourcemanager.submit_spec"))
    return reached


def test_a_custom_task_module_that_does_not_exist_is_refused_before_upload_or_submission(
    sandbox, app_names, nothing_shipped
):
    name = unique("tfyarn-test-nomodule")
    module = "no_such_package_e51b.tasks.train"
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, {"chief": SMALL}, custom_task_module=module, name=name)
    message = str(exc.value)
    assert message.startswith(f"custom_task_module={module!r} is not in the environment")
    assert "No module named" in message and "files=" in message
    assert nothing_shipped == []
    assert name not in app_names()


def test_horovods_gloo_task_is_refused_before_upload_or_submission_saying_what_to_use(
    sandbox, app_names, nothing_shipped
):
    name = unique("tfyarn-test-gloo")
    module = "tf_yarn.tensorflow.tasks.gloo_allred_task"
    specs = {"chief": SMALL, "worker": TaskSpec("512M", 1, instances=2)}
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, specs, custom_task_module=module, name=name)
    message = str(exc.value)
    assert message.startswith(f"custom_task_module={module!r} is tf-yarn's Horovod task")
    assert "Horovod is not shipped" in message and "return a KerasExperiment" in message
    assert nothing_shipped == []
    assert name not in app_names()


def test_more_vcores_than_any_node_has_is_refused_before_submission(sandbox, app_names):
    name = unique("tfyarn-test-vcores")
    with pytest.raises(SpecError, match="does not fit any node") as exc:
        submit(lambda: None, {"chief": TaskSpec("512M", 64)}, name=name)
    assert str(exc.value).startswith("chief: 512 MiB / 64 vcores")
    assert "largest: 8192 MiB / 8 vcores" in str(exc.value)
    assert name not in app_names()


def test_node_label_the_queue_cannot_reach_is_refused_before_submission(sandbox, app_names):
    # Submitted anyway, YARN would fail it at allocation ("queue=default doesn't
    # have permission to access all labels"); tfyarn says so up front.
    name = unique("tfyarn-test-label")
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, {"chief": TaskSpec("512M", 1, label=NodeLabel.GPU)}, name=name)
    message = str(exc.value)
    assert message.startswith("chief: queue 'default' cannot use nodes labelled 'gpu'")
    assert "unlabelled nodes only" in message
    assert name not in app_names()


def test_files_source_that_does_not_exist_is_refused_before_submission(
    sandbox, app_names, tmp_path
):
    name = unique("tfyarn-test-nofile")
    missing = tmp_path / "no-such-data.csv"
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, {"chief": SMALL}, files={"data.csv": missing}, name=name)
    assert str(exc.value) == f"files['data.csv']: {missing} does not exist"
    assert name not in app_names()


# -- configuration mistakes, in a subprocess --------------------------------------------------
_SUBMIT = textwrap.dedent(
    """\
    import json, sys, time
    t0 = time.monotonic()
    from tfyarn_jupyter import TaskSpec, submit
    try:
        submit(lambda: None, {"chief": TaskSpec("512M", 1)}, name=sys.argv[1])
        out = {"type": None, "error": ""}
    except Exception as exc:
        out = {"type": type(exc).__name__, "error": str(exc)}
    out["seconds"] = time.monotonic() - t0
    print("RESULT " + json.dumps(out))
    """
)


def submit_elsewhere(env: dict[str, str], name: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _SUBMIT, name],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def test_missing_hadoop_conf_dir_says_what_to_set(sandbox, app_names):
    name = unique("tfyarn-test-noconf")
    env = {k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"}
    out = submit_elsewhere(env, name)
    assert out["type"] == "ClusterConfigError", out
    assert out["error"].startswith("HADOOP_CONF_DIR is not set: point it at")
    assert "tfyarn-sandbox env" in out["error"]
    assert name not in app_names()


def test_unreachable_resourcemanager_says_which_address_and_what_to_set(
    sandbox, app_names, tmp_path
):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    conf = tmp_path / "conf"
    shutil.copytree(os.environ["HADOOP_CONF_DIR"], conf)
    yarn_site = read_conf("yarn-site.xml")
    for key in ("yarn.resourcemanager.address", "yarn.resourcemanager.scheduler.address"):
        yarn_site[key] = dead
    (conf / "yarn-site.xml").write_bytes(to_xml(yarn_site))
    name = unique("tfyarn-test-normm")
    out = submit_elsewhere({**os.environ, "HADOOP_CONF_DIR": str(conf)}, name)
    print(f"refused after {out['seconds']:.1f}s")
    assert out["type"] == "ClusterConfigError", out
    message = out["error"]
    assert message.startswith(f"cannot reach the ResourceManager ({dead}: ")
    assert f"yarn.resourcemanager.address in {conf}/yarn-site.xml" in message
    assert "HADOOP_CONF_DIR" in message
    assert name not in app_names()
