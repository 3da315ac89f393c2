"""Restarts (issue 25): the recovery configuration, ``tfyarn-sandbox restart`` and its parts.

The ResourceManager keeps its applications in a state store under the sandbox
folder and the NodeManagers keep their containers' state, so one daemon restarted
alone loses no work; a whole start forgets both. Nothing here starts Java: the
"daemons" are ``sleep`` processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tfyarn_sandbox import cli
from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox import daemons as sandbox_daemons
from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.config import DAEMONS
from tfyarn_sandbox.sandbox import Sandbox, SandboxError
from tfyarn_sandbox.site_xml import GPU_LABEL, PORT_NAMES, Layout

#: What the default sandbox wrote before issue 25 (``conf_folders`` of the layout below).
BEFORE = Path(__file__).parent / "data" / "default_conf.json"


@pytest.fixture
def layout() -> Layout:
    ports = {name: 40000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(Path("/ROOT"), Path("/LIB"), ports, "alice")


def rm_recovery_props() -> dict[str, str]:
    return {
        "yarn.resourcemanager.recovery.enabled": "true",
        "yarn.resourcemanager.work-preserving-recovery.enabled": "true",
        "yarn.resourcemanager.store.class": (
            "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore"
        ),
        "yarn.resourcemanager.fs.state-store.uri": "file:///ROOT/rm-state",
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms": "3000",
        "yarn.resourcemanager.connect.max-wait.ms": "120000",
    }


# -- the configuration -------------------------------------------------------------------------
def test_the_default_sandbox_writes_what_it_wrote_plus_recovery_only(layout):
    """Exactly the files and properties of before, with recovery on and the containers' JVM
    options: no GPU, no preemption."""
    expected = json.loads(BEFORE.read_text())
    expected["conf"]["yarn-site.xml"].update(rm_recovery_props())
    for nm in ("cpu", GPU_LABEL):
        expected[f"conf-nm-{nm}"]["yarn-site.xml"].update(
            {**rm_recovery_props(), "yarn.nodemanager.recovery.enabled": "true"}
        )
        # since: the containers' JVMs get the daemons' JVM options (C1, serial collector)
        expected[f"conf-nm-{nm}"]["yarn-site.xml"]["yarn.nodemanager.admin-env"] = (
            "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,"
            "JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        )
    for files in expected.values():  # and the node-attribute store under the root, not /tmp
        files["yarn-site.xml"]["yarn.node-attribute.fs-store.root-dir"] = (
            "file:///ROOT/node-attributes"
        )
        # and since: the scheduler's asynchronous pass every 50 ms, not 5 (an idle RM's CPU)
        files["capacity-scheduler.xml"][
            "yarn.scheduler.capacity.schedule-asynchronously.scheduling-interval-ms"
        ] = "50"
    now = {str(d.relative_to("/ROOT")): f for d, f in sandbox_conf.conf_folders(layout).items()}
    assert now == expected


def test_the_resourcemanager_recovers_from_a_store_in_the_sandbox_folder(layout):
    yarn = hadoop_conf.yarn_site(layout)
    assert {k: yarn[k] for k in rm_recovery_props()} == rm_recovery_props()
    assert hadoop_conf.rm_state_store(layout.root) == Path("/ROOT/rm-state")


def test_masters_and_nodes_wait_out_a_resourcemanager_restart(layout):
    """An application master (it reads the client's yarn-site) or a NodeManager that gave
    up on the ResourceManager within a restart's ~10-30 s would end its work."""
    yarn = hadoop_conf.yarn_site(layout)
    assert int(yarn["yarn.resourcemanager.connect.max-wait.ms"]) >= 60_000
    for nm in ("cpu", GPU_LABEL):
        nm_yarn = hadoop_conf.nodemanager_site(layout, nm)
        assert "yarn.nodemanager.resourcemanager.connect.max-wait.ms" not in nm_yarn


@pytest.mark.parametrize("nm", ["cpu", GPU_LABEL])
def test_each_nodemanager_recovers_at_its_fixed_port(layout, nm):
    props = hadoop_conf.nodemanager_site(layout, nm)
    assert props["yarn.nodemanager.recovery.enabled"] == "true"
    assert props["yarn.nodemanager.recovery.dir"] == f"/ROOT/nm/{nm}/recovery"
    assert props["yarn.nodemanager.recovery.dir"] == str(
        hadoop_conf.nm_recovery_dir(layout.root, nm)
    )
    port = int(props["yarn.nodemanager.address"].rsplit(":", 1)[1])
    assert port == layout.ports[f"nm_{nm}"] != 0
    # Not supervised: a stopped NodeManager kills its containers, as a lost node does.
    assert "yarn.nodemanager.recovery.supervised" not in props
    assert "yarn.nodemanager.recovery.enabled" not in hadoop_conf.yarn_site(layout)


def test_a_whole_start_forgets_the_recovery_state_and_keeps_the_rest(tmp_path):
    root = tmp_path / "box"
    state = sandbox_conf.recovery_state(root)
    assert state == [
        root / "rm-state",
        root / "nm" / "cpu" / "recovery",
        root / "nm" / "gpu" / "recovery",
    ]
    for path in [*state, root / "hdfs" / "name", root / "nm" / "cpu" / "local"]:
        path.mkdir(parents=True)
        (path / "f").write_text("x")
    sandbox_conf.forget_recovery_state(root)
    sandbox_conf.forget_recovery_state(tmp_path / "never-started")
    assert not any(p.exists() for p in state)
    assert (root / "hdfs" / "name" / "f").exists() and (
        root / "nm" / "cpu" / "local" / "f"
    ).exists()


def test_start_forgets_before_it_configures(tmp_path, monkeypatch):
    box = Sandbox(tmp_path / "box")
    store = hadoop_conf.rm_state_store(box.root)
    store.mkdir(parents=True)
    seen = []

    def configure(self):
        seen.append(store.exists())
        raise SandboxError("stop here")

    monkeypatch.setattr(Sandbox, "_configure", configure)
    with pytest.raises(SandboxError, match="stop here"):
        box.start()
    assert seen == [False]


# -- stopping one process ------------------------------------------------------------------------
def test_terminate_ends_a_process_and_collects_a_child(tmp_path):
    proc = subprocess.Popen(["sleep", "60"])
    t0 = time.monotonic()
    sandbox_daemons.terminate(psutil.Process(proc.pid))
    assert time.monotonic() - t0 < 5
    assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == "zombie"


def test_terminate_takes_a_zombie_for_ended():
    """A daemon whose parent (say, the test session that started the sandbox) has not
    collected it is a zombie: it has ended, though it still has a pid."""
    code = (
        "import subprocess, time; p = subprocess.Popen(['true']); "
        "print(p.pid, flush=True); time.sleep(30)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = psutil.Process(int(parent.stdout.readline()))
        deadline = time.monotonic() + 10
        while not sandbox_daemons.ended(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert child.status() == psutil.STATUS_ZOMBIE
        t0 = time.monotonic()
        sandbox_daemons.terminate(child, timeout=20)
        assert time.monotonic() - t0 < 2
    finally:
        parent.kill()
        parent.wait()


def test_terminate_kills_what_ignores_sigterm():
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; exec sleep 60"])  # sleep ignores TERM
    time.sleep(0.2)
    t0 = time.monotonic()
    sandbox_daemons.terminate(psutil.Process(proc.pid), timeout=0.5)
    assert 0.5 <= time.monotonic() - t0 < 5
    assert not psutil.pid_exists(proc.pid)  # killed, and collected


def test_web_listening_is_a_connect_to_the_daemons_web_port(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        lay = Layout(tmp_path, tmp_path, {"rm_http": port, "nm_gpu_http": 1}, "u")
        assert sandbox_daemons.web_listening(lay, "resourcemanager")
        assert not sandbox_daemons.web_listening(lay, "nodemanager-gpu")
    assert set(sandbox_daemons.DAEMON_WEB_PORT) == {*DAEMONS, "namenode2"}


# -- the command ---------------------------------------------------------------------------------
@pytest.mark.parametrize("daemon", [*DAEMONS, "namenode2"])
def test_restart_takes_a_daemon(daemon):
    args = cli.parser().parse_args(["restart", daemon])
    assert (args.cmd, args.daemon) == ("restart", daemon)
    assert cli._shape(args) is None


@pytest.mark.parametrize("argv", [["restart"], ["restart", "nodemanager"], ["restart", "kdc"]])
def test_restart_refuses_anything_else(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parser().parse_args(argv)
    assert exc.value.code == 2
    assert "restart" in capsys.readouterr().err


def test_restart_prints_how_long_the_daemon_was_down(tmp_path, monkeypatch, capsys):
    calls = []

    def restart(self, name, timeout=180.0):
        calls.append((self.root, name))
        return 1.25, 9.5

    monkeypatch.setattr(Sandbox, "restart", restart)
    assert cli.main(["--dir", str(tmp_path), "restart", "resourcemanager"]) == 0
    assert calls == [(tmp_path, "resourcemanager")]
    assert capsys.readouterr().out == (
        "resourcemanager restarted: down 9.5s (stopped in 1.2s, back with the cluster ready "
        "8.2s later)\n"
    )


def test_restart_of_a_daemon_that_is_not_running_says_so(tmp_path, capsys):
    root = tmp_path / "box"
    root.mkdir()
    state = {"ports": {}, "pids": {"resourcemanager": 2**22 + 1}, "user": "u", "lib": "/l",
             "java_home": "/j"}  # fmt: skip
    (root / "state.json").write_text(json.dumps(state))
    assert cli.main(["--dir", str(root), "restart", "resourcemanager"]) == 1
    assert capsys.readouterr().err == (
        "tfyarn-sandbox: sandbox daemon resourcemanager is not running\n"
    )


def test_sandbox_restart_times_the_stop_and_the_whole_outage(tmp_path, monkeypatch):
    import contextlib

    @contextlib.contextmanager
    def stopped(self, name, timeout=180.0):
        time.sleep(0.1)
        yield
        time.sleep(0.2)

    monkeypatch.setattr(Sandbox, "daemon_stopped", stopped)
    stop, down = Sandbox(tmp_path).restart("datanode")
    assert 0.1 <= stop < down and down >= 0.3
