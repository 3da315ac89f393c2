"""What a sandbox is made of (tfyarn_sandbox.config): ports, files, commands; no Java."""

from __future__ import annotations

import os
import socket
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox.config import DAEMONS, SandboxError
from tfyarn_sandbox.site_xml import GPU_LABEL, PORT_NAMES, Layout


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 42000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path / "box", tmp_path / "lib", ports, "alice")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port some other socket is listening on for the test."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def props(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.findtext("name") or "": p.findtext("value") or "" for p in root}


# -- folders -------------------------------------------------------------------------------
def test_cache_and_default_root_follow_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("TFYARN_SANDBOX_DIR", raising=False)
    monkeypatch.setenv("TFYARN_CACHE", str(tmp_path / "cache"))
    assert sandbox_conf.cache_dir() == tmp_path / "cache"
    assert sandbox_conf.default_root() == tmp_path / "cache" / "sandbox"
    monkeypatch.setenv("TFYARN_SANDBOX_DIR", str(tmp_path / "box"))
    assert sandbox_conf.default_root() == tmp_path / "box"


def test_cache_defaults_to_the_home_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("TFYARN_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sandbox_conf.cache_dir() == tmp_path / ".cache" / "tfyarn"


# -- ports ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "ports"),
    [
        (None, {}),
        ("", {}),
        ("rm=8032", {"rm": 8032}),
        (" rm = 8032 ,namenode_rpc=9000,", {"rm": 8032, "namenode_rpc": 9000}),
    ],
)
def test_parse_ports(spec, ports):
    assert sandbox_conf.parse_ports(spec) == ports


@pytest.mark.parametrize("spec", ["rm", "rm:8032", "nope=1", "rm=", "rm=80a", "rm=-1", "=1"])
def test_parse_ports_refuses_bad_settings_and_lists_the_names(spec):
    with pytest.raises(SandboxError, match="bad port setting") as err:
        sandbox_conf.parse_ports(f"namenode_rpc=9000,{spec}")
    assert repr(spec.split(",")[-1]) in str(err.value)
    assert ", ".join(PORT_NAMES) in str(err.value)


def test_port_free(taken_port):
    assert not sandbox_conf.port_free(taken_port)
    [free] = sandbox_conf.free_ports(1)
    assert sandbox_conf.port_free(free)


def test_free_ports_are_distinct():
    ports = sandbox_conf.free_ports(len(PORT_NAMES))
    assert len(set(ports)) == len(PORT_NAMES)
    assert all(p > 0 for p in ports)


def test_choose_ports_gives_every_name_a_distinct_port():
    ports = sandbox_conf.choose_ports({}, {})
    assert sorted(ports) == sorted(PORT_NAMES)
    assert len(set(ports.values())) == len(PORT_NAMES)


def test_choose_ports_keeps_fixed_ones_and_reuses_free_previous_ones(taken_port):
    [fixed, previous] = sandbox_conf.free_ports(2)
    ports = sandbox_conf.choose_ports(
        {"rm": fixed},
        {"rm": 1, "rm_http": previous, "nm_cpu": taken_port, "not_a_port": 5},
    )
    assert ports["rm"] == fixed
    assert ports["rm_http"] == previous
    assert ports["nm_cpu"] != taken_port
    assert "not_a_port" not in ports
    assert sorted(ports) == sorted(PORT_NAMES)


def test_choose_ports_refuses_a_fixed_port_in_use(taken_port):
    with pytest.raises(SandboxError, match=f"port {taken_port} \\(rm_http\\) is already in use"):
        sandbox_conf.choose_ports({"rm_http": taken_port}, {})


# -- configuration files -------------------------------------------------------------------
def test_write_conf_gives_the_client_and_each_nodemanager_a_folder(layout):
    sandbox_conf.write_conf(layout)
    names = {"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "capacity-scheduler.xml"}
    client = layout.conf_dir
    assert {p.name for p in client.iterdir()} == names | {
        "log4j.properties",
        "log4j-cli.properties",
    }
    for nm in ("cpu", GPU_LABEL):
        folder = layout.nm_conf_dir(nm)
        assert {p.name for p in folder.iterdir()} == names | {"log4j.properties"}
        yarn = props(folder / "yarn-site.xml")
        assert yarn["yarn.nodemanager.address"] == layout.addr(f"nm_{nm}")
        assert props(folder / "core-site.xml") == props(client / "core-site.xml")
    assert "yarn.nodemanager.address" not in props(client / "yarn-site.xml")
    assert props(client / "core-site.xml")["fs.defaultFS"] == layout.default_fs


def test_write_conf_makes_the_cli_quieter_than_the_daemons(layout):
    sandbox_conf.write_conf(layout)
    daemon = (layout.conf_dir / "log4j.properties").read_text()
    cli = (layout.conf_dir / "log4j-cli.properties").read_text()
    assert "log4j.rootLogger=INFO,console" in daemon
    assert "log4j.rootLogger=WARN,console" in cli
    assert cli.replace("WARN,console", "INFO,console", 1) == daemon


def test_write_conf_adds_the_hdfs_web_app_folders(layout):
    sandbox_conf.write_conf(layout)
    webapps = layout.root / "web" / "webapps"
    assert sorted(p.name for p in webapps.iterdir()) == ["datanode", "hdfs"]


# -- launchers -----------------------------------------------------------------------------
@pytest.fixture
def fake_java(tmp_path) -> Path:
    """A JAVA_HOME whose ``java`` prints its arguments, one a line."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    java.chmod(0o755)
    return home


def run_launcher(layout: Layout, tool: str, *args: str, **env: str):
    return subprocess.run(
        [str(sandbox_conf.bin_dir(layout.root) / tool), *args],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], **env},
        timeout=30,
    )


def test_launchers_run_the_hadoop_class_of_each_subcommand(layout, fake_java):
    sandbox_conf.write_launchers(layout, fake_java)
    proc = run_launcher(layout, "yarn", "rmadmin", "-refreshQueues")
    assert proc.returncode == 0, proc.stderr
    argv = proc.stdout.splitlines()
    assert argv[-2:] == [sandbox_conf.YARN_CLI["rmadmin"], "-refreshQueues"]
    assert argv[argv.index("-cp") + 1] == f"{layout.conf_dir}:{layout.lib}/*"
    assert f"-Dlog4j.configuration=file:{layout.conf_dir}/log4j-cli.properties" in argv
    proc = run_launcher(layout, "hdfs", "dfs", "-ls", "/")
    assert proc.stdout.splitlines()[-3:] == [sandbox_conf.HDFS_CLI["dfs"], "-ls", "/"]


def test_application_commands_pass_their_own_name_on(layout, fake_java):
    """ApplicationCLI reads which command it runs from its first argument."""
    sandbox_conf.write_launchers(layout, fake_java)
    for sub in ("application", "applicationattempt", "container"):
        argv = run_launcher(layout, "yarn", sub, "-list").stdout.splitlines()
        assert argv[-3:] == [sandbox_conf.YARN_CLI[sub], sub, "-list"]


def test_launchers_honour_a_given_hadoop_conf_dir(layout, fake_java, tmp_path):
    sandbox_conf.write_launchers(layout, fake_java)
    argv = run_launcher(layout, "yarn", "version", HADOOP_CONF_DIR=str(tmp_path)).stdout
    lines = argv.splitlines()
    assert lines[lines.index("-cp") + 1] == f"{tmp_path}:{layout.lib}/*"


@pytest.mark.parametrize(("args", "message"), [((), "usage: yarn {"), (("nope",), "unknown")])
def test_launchers_refuse_a_missing_or_unknown_subcommand(layout, fake_java, args, message):
    sandbox_conf.write_launchers(layout, fake_java)
    proc = run_launcher(layout, "yarn", *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "rmadmin" in proc.stderr
    assert proc.stdout == ""


# -- daemon command lines ------------------------------------------------------------------
@pytest.mark.parametrize("name", DAEMONS)
def test_java_command_of_each_daemon(layout, name):
    cmd = sandbox_conf.java_command(layout, Path("/jdk"), name)
    conf = layout.nm_conf_dir(name.split("-")[1]) if "nodemanager" in name else layout.conf_dir
    assert cmd[0] == "/jdk/bin/java"
    assert cmd[1] == f"-Xmx{sandbox_conf.DAEMON_HEAP[name]}"
    assert cmd[-1] == sandbox_conf.DAEMON_MAIN[name]
    assert cmd[cmd.index("-cp") + 1] == f"{conf}:{layout.root}/web:{layout.lib}/*"
    assert f"-Dlog4j.configuration=file:{conf}/log4j.properties" in cmd
    assert f"-Dtfyarn.sandbox={layout.root}" in cmd
    assert f"-Dhadoop.log.dir={layout.root}/logs" in cmd
    assert f"-Djava.io.tmpdir={layout.root}/tmp" in cmd and "-XX:-UsePerfData" in cmd
    assert set(sandbox_conf.JAVA17_OPENS) <= set(cmd)


def test_java_command_appends_arguments_after_the_main_class(layout):
    cmd = sandbox_conf.java_command(layout, Path("/jdk"), "namenode", "-format", "-force")
    assert cmd[-3:] == [sandbox_conf.DAEMON_MAIN["namenode"], "-format", "-force"]


def test_every_daemon_has_a_main_class_and_a_heap():
    assert set(sandbox_conf.DAEMON_MAIN) == set(DAEMONS) == set(sandbox_conf.DAEMON_HEAP)
    assert {f"nodemanager-{nm}" for nm in sandbox_conf.NODEMANAGERS} <= set(DAEMONS)
