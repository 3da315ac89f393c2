"""The Sandbox and the tfyarn-sandbox command (tfyarn_sandbox.sandbox), with no cluster.

Each test works on a sandbox folder in ``tmp_path`` that has never been
started, or whose ``state.json`` the test wrote; nothing starts a daemon.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tfyarn_sandbox import sandbox
from tfyarn_sandbox.cli import main
from tfyarn_sandbox.sandbox import DAEMONS, Sandbox, SandboxError, default_root
from tfyarn_sandbox.site_xml import PORT_NAMES

#: A pid no process has (above Linux's pid_max).
DEAD_PID = 2**22 + 1


@pytest.fixture(autouse=True)
def _no_ports_from_the_environment(monkeypatch):
    monkeypatch.delenv("TFYARN_SANDBOX_PORTS", raising=False)


@pytest.fixture
def stopped(tmp_path) -> Sandbox:
    """A sandbox that was started once: its state names ports, jars, JDK and dead pids."""
    box = Sandbox(tmp_path / "box")
    box.root.mkdir()
    state = {
        "ports": {name: 43000 + i for i, name in enumerate(PORT_NAMES)},
        "pids": {name: DEAD_PID for name in DAEMONS},
        "user": "alice",
        "lib": str(tmp_path / "lib"),
        "java_home": "/opt/my jdk",
        "hadoop_version": sandbox.HADOOP_VERSION,
    }
    box.state_file.write_text(json.dumps(state))
    return box


# -- construction --------------------------------------------------------------------------
def test_root_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Sandbox(Path("box")).root == tmp_path / "box"


def test_default_root_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TFYARN_SANDBOX_DIR", str(tmp_path / "there"))
    assert default_root() == tmp_path / "there"
    assert Sandbox().root == tmp_path / "there"


def test_fixed_ports_come_from_the_environment_unless_given(tmp_path, monkeypatch):
    monkeypatch.setenv("TFYARN_SANDBOX_PORTS", "rm=8032,rm_http=8088")
    assert Sandbox(tmp_path).fixed_ports == {"rm": 8032, "rm_http": 8088}
    assert Sandbox(tmp_path, fixed_ports={"rm": 1}).fixed_ports == {"rm": 1}


def test_bad_ports_in_the_environment_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TFYARN_SANDBOX_PORTS", "resourcemanager=8032")
    with pytest.raises(SandboxError, match="bad port setting 'resourcemanager=8032'"):
        Sandbox(tmp_path)


def test_folders_of_a_sandbox(tmp_path):
    box = Sandbox(tmp_path)
    assert (box.state_file, box.log_dir, box.bin_dir) == (
        tmp_path / "state.json",
        tmp_path / "logs",
        tmp_path / "bin",
    )


# -- a sandbox never started ---------------------------------------------------------------
def test_status_of_a_sandbox_never_started(tmp_path):
    assert Sandbox(tmp_path).status() == {
        "running": False,
        "daemons": {},
        "ready": False,
        "root": str(tmp_path),
    }


@pytest.mark.parametrize("state", [None, "{not json"])
def test_layout_and_env_need_a_started_sandbox(tmp_path, state):
    box = Sandbox(tmp_path)
    if state is not None:
        box.state_file.write_text(state)
    for call in (box.layout, box.env):
        with pytest.raises(SandboxError, match=r"no sandbox at .*: run `tfyarn-sandbox start`"):
            call()


def test_stop_of_a_sandbox_never_started_does_nothing(tmp_path):
    Sandbox(tmp_path).stop()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]


def test_stop_discarding_data_removes_hdfs_and_node_caches_and_keeps_the_logs(tmp_path):
    for d in ("hdfs/name", "nm/cpu/local/usercache", "nm/cpu/logs", "nm/gpu/local", "logs"):
        (tmp_path / d).mkdir(parents=True)
    assert main(["--dir", str(tmp_path), "stop", "--discard-data"]) == 0
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_dir())
    assert left == ["logs", "nm", "nm/cpu", "nm/cpu/logs", "nm/gpu"]


def test_stop_keeps_the_data_unless_asked(tmp_path):
    (tmp_path / "hdfs" / "name").mkdir(parents=True)
    Sandbox(tmp_path).stop()
    assert (tmp_path / "hdfs" / "name").is_dir()


# -- a stopped sandbox ---------------------------------------------------------------------
def test_layout_is_read_from_the_state(stopped, tmp_path):
    layout = stopped.layout()
    assert (layout.root, layout.lib, layout.user) == (stopped.root, tmp_path / "lib", "alice")
    assert layout.addr("rm") == f"127.0.0.1:{43000 + PORT_NAMES.index('rm')}"


def test_env_points_clients_at_the_sandbox(stopped, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    env = stopped.env()
    assert env == {
        "HADOOP_CONF_DIR": str(stopped.root / "conf"),
        "JAVA_HOME": "/opt/my jdk",
        "PATH": f"{stopped.bin_dir}{os.pathsep}/usr/bin",
        "TFYARN_SANDBOX_DIR": str(stopped.root),
    }
    monkeypatch.setenv("PATH", env["PATH"])
    assert stopped.env()["PATH"] == env["PATH"]


def test_status_of_a_stopped_sandbox(stopped):
    st = stopped.status()
    assert st["running"] is False
    assert st["ready"] is False
    assert st["daemons"] == {name: {"pid": DEAD_PID, "alive": False} for name in DAEMONS}
    assert st["ports"] == json.loads(stopped.state_file.read_text())["ports"]


def test_a_live_pid_is_not_a_daemon_unless_it_runs_the_daemons_class(stopped):
    """A recycled pid (here: this test's own process) does not count as the daemon."""
    state = json.loads(stopped.state_file.read_text())
    state["pids"]["namenode"] = os.getpid()
    stopped.state_file.write_text(json.dumps(state))
    assert stopped.status()["daemons"]["namenode"] == {"pid": os.getpid(), "alive": False}


def test_stop_forgets_dead_pids_and_keeps_the_rest(stopped):
    before = json.loads(stopped.state_file.read_text())
    stopped.stop()
    after = json.loads(stopped.state_file.read_text())
    assert after == {**before, "pids": {}}


def test_daemon_stopped_refuses_an_unknown_daemon(stopped):
    unknown = "unknown daemon 'nodemanager': one of namenode, "
    with pytest.raises(SandboxError, match=unknown), stopped.daemon_stopped("nodemanager"):
        pytest.fail("the block ran")


def test_daemon_stopped_needs_a_running_daemon(stopped, tmp_path):
    not_running = "sandbox daemon datanode is not running"
    with pytest.raises(SandboxError, match=not_running), stopped.daemon_stopped("datanode"):
        pytest.fail("the block ran")
    empty = Sandbox(tmp_path / "empty")
    with pytest.raises(SandboxError, match="no sandbox at"), empty.daemon_stopped("datanode"):
        pytest.fail("the block ran")


# -- the command ---------------------------------------------------------------------------
def test_status_command_reports_each_daemon_and_fails_when_not_ready(stopped, capsys):
    assert main(["--dir", str(stopped.root), "status"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"cluster: NOT ready ({stopped.root})"
    assert out[0].split() == ["namenode", "pid", str(DEAD_PID), "DOWN"]
    assert len(out) == len(DAEMONS) + 1


def test_env_command_prints_shell_exports(stopped, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    assert main(["--dir", str(stopped.root), "env"]) == 0
    script = capsys.readouterr().out
    assert f"export JAVA_HOME={shlex.quote('/opt/my jdk')}\n" in script
    shell = subprocess.run(
        ["sh", "-c", script + 'printf "%s" "$JAVA_HOME"'], capture_output=True, text=True
    )
    assert shell.stdout == "/opt/my jdk"


def test_commands_report_sandbox_errors_without_a_traceback(tmp_path, capsys):
    assert main(["--dir", str(tmp_path), "env"]) == 1
    assert capsys.readouterr().err.startswith(f"tfyarn-sandbox: no sandbox at {tmp_path}")
    assert main(["start", "--port", "nope=1"]) == 1
    assert "tfyarn-sandbox: bad port setting 'nope=1'" in capsys.readouterr().err


def test_logs_command_lists_the_logs_or_prints_a_tail(stopped, capsys):
    stopped.log_dir.mkdir()
    (stopped.log_dir / "namenode.log").write_text("a\nb\nc\n")
    (stopped.log_dir / "datanode.log").write_text("x\n")
    assert main(["--dir", str(stopped.root), "logs"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        str(stopped.log_dir / "datanode.log"),
        str(stopped.log_dir / "namenode.log"),
    ]
    assert main(["--dir", str(stopped.root), "logs", "namenode", "-n", "2"]) == 0
    assert capsys.readouterr().out == "b\nc\n"


def test_the_module_runs_as_the_command(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tfyarn_sandbox", "--dir", str(tmp_path), "status"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == f"cluster: NOT ready ({tmp_path})\n"
