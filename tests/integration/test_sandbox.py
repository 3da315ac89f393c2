"""The sandbox itself, exercised through raw skein: it is a real YARN + HDFS cluster.

Each application here is a shell service (no TensorFlow), 256 MiB and one
vcore. The session's sandbox is never stopped; the start/stop tests use a
second, throw-away sandbox in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import skein
from tfyarn_sandbox.sandbox import DAEMONS, Sandbox, SandboxError, default_root

from .helpers import unique

pytestmark = pytest.mark.sandbox

LOGS_TIMEOUT_S = 120.0
APP_TIMEOUT_S = 300.0


def shell_service(script: str, node_label: str = "") -> skein.Service:
    return skein.Service(
        resources=skein.Resources(memory=256, vcores=1), script=script, node_label=node_label
    )


def aggregated_logs(app_id: str, timeout: float = LOGS_TIMEOUT_S, **env: str) -> str:
    """The aggregated logs, read with ``yarn logs`` once the NodeManagers uploaded them.

    skein 0.8's ``Client.application_logs`` looks for the pre-3.3 layout
    (``/tmp/logs/<user>/logs/<app>``) and never finds Hadoop 3.5's bucketed
    one (``/tmp/logs/<user>/bucket-logs-tfile/<nnnn>/<app>``), so the
    Hadoop log CLI is the reader here.
    """
    deadline = time.monotonic() + timeout
    while True:
        proc = subprocess.run(
            ["yarn", "logs", "-applicationId", app_id],
            capture_output=True, text=True, timeout=120, env={**os.environ, **env},
        )  # fmt: skip
        if proc.returncode == 0 and "LogAggregationType: AGGREGATED" in proc.stdout:
            return proc.stdout
        if time.monotonic() > deadline:
            raise AssertionError(
                f"logs of {app_id} not aggregated after {timeout}s: {proc.stdout[-1000:]}"
                f"{proc.stderr[-1000:]}"
            )
        time.sleep(1.0)


def wait_running(app: skein.ApplicationClient, services: list[str], timeout: float) -> list:
    """The containers of ``services`` once all are RUNNING (or ended: short scripts)."""
    deadline = time.monotonic() + timeout
    while True:
        containers = app.get_containers(
            services=services, states=["RUNNING", "SUCCEEDED", "FAILED", "KILLED"]
        )
        if len(containers) == len(services):
            return containers
        if time.monotonic() > deadline:
            raise AssertionError(f"containers of {services} not started after {timeout}s")
        time.sleep(0.5)


# -- the cluster runs applications --------------------------------------------------------
def test_shell_service_on_default_queue_succeeds_and_its_logs_are_read_back(sandbox, apps):
    token = uuid.uuid4().hex
    spec = skein.ApplicationSpec(
        name=unique("tfyarn-test-sb-shell"),
        queue="default",
        services={"hello": shell_service(f"echo out-{token}; echo err-{token} >&2")},
    )
    app_id = apps.submit(spec)
    report = apps.wait(app_id, timeout=APP_TIMEOUT_S)
    assert (str(report.state), str(report.final_status)) == ("FINISHED", "SUCCEEDED")
    # Hadoop 3.5 reports the queue's full path.
    assert report.queue in ("default", "root.default")

    t0 = time.monotonic()
    text = aggregated_logs(app_id)
    print(f"aggregated logs readable {time.monotonic() - t0:.1f}s after the end")
    assert f"out-{token}" in text
    assert f"err-{token}" in text
    # The application master's container and the service's.
    containers = set(re.findall(r"^Container: (container_\S+)", text, re.MULTILINE))
    assert len(containers) == 2, containers
    assert "LogType:hello.log" in text  # skein writes a service's stdout and stderr there


def test_gpu_labelled_service_runs_on_the_gpu_node_and_unlabelled_one_on_the_other(
    sandbox, skein_client, apps
):
    nodes = skein_client.get_nodes(states=["RUNNING"])
    labels = {n.http_address: set(n.labels) for n in nodes}
    gpu_nodes = {a for a, ls in labels.items() if ls == {"gpu"}}
    cpu_nodes = {a for a, ls in labels.items() if not ls}
    assert len(gpu_nodes) == 1 and len(cpu_nodes) == 1, labels

    spec = skein.ApplicationSpec(
        name=unique("tfyarn-test-sb-labels"),
        queue="ml-gpu",
        services={
            "ongpu": shell_service("sleep 2", node_label="gpu"),
            "oncpu": shell_service("sleep 2"),
        },
    )
    app = apps.submit_and_connect(spec)
    containers = wait_running(app, ["ongpu", "oncpu"], APP_TIMEOUT_S)
    where = {c.service_name: c.yarn_node_http_address for c in containers}
    assert where["ongpu"] in gpu_nodes, (where, labels)
    assert where["oncpu"] in cpu_nodes, (where, labels)
    report = apps.wait(app.id, timeout=APP_TIMEOUT_S)
    assert str(report.final_status) == "SUCCEEDED", report.diagnostics


def test_key_value_store_carries_values_from_a_container_to_the_client_and_back(
    sandbox, skein_client, apps
):
    # The sandbox is one host: the container can run this very interpreter.
    code = textwrap.dedent(
        """\
        import socket, skein
        app = skein.ApplicationClient.from_current()
        app.kv["hello"] = ("from-container:" + socket.gethostname()).encode()
        ping = app.kv.wait("ping")
        app.kv["pong"] = ping + b"-back"
        """
    )
    script = f"{shlex.quote(sys.executable)} - <<'PY'\n{code}PY\n"
    spec = skein.ApplicationSpec(
        name=unique("tfyarn-test-sb-kv"), services={"echo": shell_service(script)}
    )
    app = apps.submit_and_connect(spec)
    hello = app.kv.wait("hello")
    assert hello.startswith(b"from-container:")
    token = uuid.uuid4().hex.encode()
    app.kv["ping"] = token
    assert app.kv.wait("pong") == token + b"-back"
    report = apps.wait(app.id, timeout=APP_TIMEOUT_S)
    assert str(report.final_status) == "SUCCEEDED", report.diagnostics


# -- lifecycle of the session's sandbox (never stopped) --------------------------------------
def test_start_on_a_running_sandbox_is_a_no_op_and_status_reports_health(sandbox):
    box = Sandbox(default_root())
    before = box.status()
    state_before = box.state_file.read_text()
    t0 = time.monotonic()
    env = box.start()
    elapsed = time.monotonic() - t0
    after = box.status()
    print(f"second start returned in {elapsed:.2f}s")
    assert before["ready"] is True and after["ready"] is True
    assert set(after["daemons"]) == set(DAEMONS)
    assert all(d["alive"] for d in after["daemons"].values())
    assert {n: d["pid"] for n, d in after["daemons"].items()} == {
        n: d["pid"] for n, d in before["daemons"].items()
    }
    assert box.state_file.read_text() == state_before  # nothing rewritten
    assert env == sandbox.env()
    assert Path(env["HADOOP_CONF_DIR"], "yarn-site.xml").exists()


# -- a second, throw-away sandbox ----------------------------------------------------------
@pytest.fixture
def spare_sandbox(tmp_path) -> Iterator[Sandbox]:
    """A second sandbox in ``tmp_path``: the only one a test may stop."""
    box = Sandbox(tmp_path / "spare")
    assert box.root != Sandbox(default_root()).root
    try:
        yield box
    finally:
        box.stop()


def test_start_with_a_taken_port_fails_naming_it_before_any_daemon_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        box = Sandbox(tmp_path / "clash", fixed_ports={"rm": port})
        with pytest.raises(SandboxError) as exc:
            box.start()
    message = str(exc.value)
    assert f"port {port} (rm) is already in use" in message
    assert "TFYARN_SANDBOX_PORTS=rm=PORT" in message  # says how to pick another
    assert box.status()["daemons"] == {}
    assert box._sandbox_processes() == []
    assert not (box.root / "hdfs").exists()  # not even the NameNode was formatted


def test_stop_ends_every_daemon_of_the_sandbox_and_only_that_one(spare_sandbox, sandbox):
    session_pids = {n: d["pid"] for n, d in sandbox.status()["daemons"].items()}
    t0 = time.monotonic()
    env = spare_sandbox.start()
    print(f"spare sandbox ready in {time.monotonic() - t0:.1f}s")
    st = spare_sandbox.status()
    assert st["ready"] is True
    assert env["HADOOP_CONF_DIR"] == str(spare_sandbox.root / "conf")
    pids = {n: d["pid"] for n, d in st["daemons"].items()}
    assert set(pids) == set(DAEMONS)
    assert not set(pids.values()) & set(session_pids.values())
    procs = [psutil.Process(p) for p in pids.values()]

    spare_sandbox.stop()
    _, alive = psutil.wait_procs(procs, timeout=30)
    assert alive == [], [p.pid for p in alive]
    for pid in pids.values():
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert spare_sandbox._sandbox_processes() == []
    after = spare_sandbox.status()
    assert after["running"] is False and after["ready"] is False
    assert json.loads(spare_sandbox.state_file.read_text())["pids"] == {}
    # The session's sandbox was not touched.
    still = sandbox.status()
    assert still["ready"] is True
    assert {n: d["pid"] for n, d in still["daemons"].items()} == session_pids


# -- YARN refuses what our validation would have caught ------------------------------------
def test_yarn_refuses_an_unknown_queue_and_says_so(sandbox, skein_client):
    name = unique("tfyarn-test-sb-noqueue")
    spec = skein.ApplicationSpec(
        name=name, queue="no-such-queue", services={"a": shell_service("true")}
    )
    with pytest.raises(skein.exceptions.SkeinError) as exc:
        skein_client.submit(spec)
    assert "unknown queue: no-such-queue" in str(exc.value)


def test_yarn_refuses_more_memory_than_a_node_has_and_says_so(sandbox, skein_client, apps):
    spec = skein.ApplicationSpec(
        name=unique("tfyarn-test-sb-toobig"),
        services={
            "big": skein.Service(resources=skein.Resources(memory=65536, vcores=1), script="true")
        },
    )
    app_id = apps.submit(spec)  # the master starts; its container request is refused
    report = apps.wait(app_id, timeout=APP_TIMEOUT_S)
    assert str(report.final_status) == "FAILED"
    diag = report.diagnostics
    assert "requested resource is greater than maximum allowed allocation" in diag
    assert "Requested resource type=[memory-mb]" in diag
    assert "memory:65536" in diag
