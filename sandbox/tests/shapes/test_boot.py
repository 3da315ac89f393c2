"""A shaped sandbox as the Sandbox and its command see it (no daemon is started).

Each test writes the state a shaped start would have left; the options are read
back from it by ``env``, ``status``, ``failover`` and ``stop``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tfyarn_sandbox import cli
from tfyarn_sandbox.cli import main
from tfyarn_sandbox.sandbox import Sandbox, SandboxError
from tfyarn_sandbox.shapes import boot
from tfyarn_sandbox.shapes.shape import Shape, default_host, host_plan, port_names

DEAD_PID = 2**22 + 1


@pytest.fixture(autouse=True)
def _no_ports_from_the_environment(monkeypatch):
    monkeypatch.delenv("TFYARN_SANDBOX_PORTS", raising=False)


def shaped(root: Path, shape: Shape) -> Sandbox:
    """A stopped sandbox of ``shape`` at ``root``."""
    root.mkdir(parents=True)
    plan = host_plan(shape, 6) if shape.hosts else {}
    daemons = ["namenode", "datanode", "kdc"] if shape.kerberos else ["namenode", "datanode"]
    state = {
        "ports": {name: 48000 + i for i, name in enumerate(port_names(shape))},
        "pids": {name: DEAD_PID for name in daemons},
        "user": "root",
        "lib": "/lib",
        "java_home": "/jdk",
        "hadoop_version": "3.5.0",
        "shape": shape.to_state(),
        "host": default_host(shape),
        "hosts": plan,
        "hosts_block": 6 if shape.hosts else None,
    }
    (root / "state.json").write_text(json.dumps(state))
    return Sandbox(root)


def test_layout_of_a_shaped_state_has_its_hosts(tmp_path):
    box = shaped(tmp_path / "b", Shape(kerberos=True, hosts=True))
    layout = box.layout()
    assert layout.addr("rm") == f"rm.s6.tfyarn.test:{layout.ports['rm']}"
    assert layout.host == "localhost" and layout.ports["kdc"] == 48000 + port_names(
        Shape(True)
    ).index("kdc")
    assert box.current_shape() == Shape(kerberos=True, hosts=True)


def test_status_names_the_shape_and_every_process(tmp_path, capsys):
    box = shaped(tmp_path / "b", Shape(kerberos=True, ha=True))
    st = box.status()
    assert st["shape"] == ["--kerberos", "--ha"]
    assert st["daemons"]["kdc"] == {"pid": DEAD_PID, "alive": False}
    assert main(["--dir", str(box.root), "status"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "shape: --kerberos --ha"


def test_a_start_with_other_options_is_refused_before_anything_runs(tmp_path):
    box = shaped(tmp_path / "b", Shape(ha=True))
    before = box.state_file.read_text()
    with pytest.raises(SandboxError, match="was made with --ha: stop it and remove the folder"):
        Sandbox(box.root, shape=Shape(kerberos=True)).start()
    assert box.state_file.read_text() == before
    with pytest.raises(SandboxError, match="was made with no options"):
        default = tmp_path / "d"
        default.mkdir()
        (default / "state.json").write_text(json.dumps({"ports": {}, "pids": {}}))
        Sandbox(default, shape=Shape(viewfs=True)).start()


def test_env_of_a_simple_shaped_sandbox_sets_or_unsets_the_user(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin")
    box = shaped(tmp_path / "b", Shape(viewfs=True))
    assert box.env("alice")["HADOOP_USER_NAME"] == "alice"
    assert "HADOOP_USER_NAME" not in box.env()
    assert (box.unset_vars("alice"), box.unset_vars()) == ([], ["HADOOP_USER_NAME"])
    assert main(["--dir", str(box.root), "env", "--user", "mallory"]) == 0
    assert "export HADOOP_USER_NAME=mallory\n" in capsys.readouterr().out
    assert main(["--dir", str(box.root), "env"]) == 0
    assert capsys.readouterr().out.endswith("unset HADOOP_USER_NAME\n")


def test_a_kerberized_sandbox_never_has_a_simple_user(tmp_path):
    box = shaped(tmp_path / "b", Shape(kerberos=True))
    assert box.unset_vars() == box.unset_vars("alice") == ["HADOOP_USER_NAME"]


def test_failover_needs_two_namenodes(tmp_path, capsys):
    box = shaped(tmp_path / "b", Shape(kerberos=False, viewfs=True))
    with pytest.raises(SandboxError, match="failover needs a sandbox started with --ha"):
        box.failover()
    assert main(["--dir", str(box.root), "failover"]) == 1
    assert "tfyarn-sandbox: failover needs" in capsys.readouterr().err


def test_stop_undoes_the_hosts_of_a_hosts_sandbox_only(tmp_path, monkeypatch):
    removed = []
    monkeypatch.setattr(
        boot.sandbox_hosts, "remove", lambda plan, root: removed.append((set(plan), root))
    )
    shaped(tmp_path / "plain", Shape(ha=True)).stop()
    assert removed == []
    box = shaped(tmp_path / "hosts", Shape(hosts=True))
    box.stop()
    assert removed == [({"nn1", "dn", "rm", "nm-cpu", "nm-gpu"}, box.root)]
    assert json.loads(box.state_file.read_text())["pids"] == {}


def test_daemon_stopped_knows_the_second_namenode(tmp_path):
    box = shaped(tmp_path / "b", Shape(ha=True))
    with (
        pytest.raises(SandboxError, match="sandbox daemon namenode2 is not running"),
        box.daemon_stopped("namenode2"),
    ):
        pytest.fail("the block ran")
    with pytest.raises(SandboxError, match="unknown daemon 'kdc'"), box.daemon_stopped("kdc"):
        pytest.fail("the block ran")


@pytest.mark.parametrize(
    ("argv", "shape"),
    [(["start"], None), (["start", "--hosts"], Shape(hosts=True)), (["stop"], None),
     (["start", "--kerberos", "--ha", "--viewfs", "--hosts"], Shape(True, True, True, True))],
)  # fmt: skip
def test_the_command_line_options_make_the_shape(argv, shape):
    assert cli._shape(cli.parser().parse_args(argv)) == shape


def test_shaped_starts_need_root_for_kerberos_and_hosts(tmp_path, monkeypatch):
    monkeypatch.setattr(boot.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxError, match="--kerberos --hosts needs root"):
        Sandbox(tmp_path / "b", shape=Shape(kerberos=True, viewfs=True, hosts=True)).start()
    assert not (tmp_path / "b" / "state.json").exists()
