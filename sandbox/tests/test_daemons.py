"""Recognising the sandbox's processes and reading its daemons' answers (sandbox_daemons).

The daemons' HTTP answers are fabricated (``requests.get`` is replaced) and
the "daemons" are ``sleep`` processes with a daemon's command line: no Java.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tfyarn_sandbox import daemons as sandbox_daemons
from tfyarn_sandbox.config import DAEMON_MAIN, SandboxError
from tfyarn_sandbox.site_xml import GPU_LABEL, PORT_NAMES, Layout


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 44000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path / "box", tmp_path / "lib", ports, "alice")


class FakeResponse:
    def __init__(self, body: Any) -> None:
        self.body = body

    def json(self) -> Any:
        return self.body

    def raise_for_status(self) -> None:
        pass


@pytest.fixture
def answers(monkeypatch) -> dict[str, Any]:
    """Maps a URL path (``/jmx``, ``/ws/v1/cluster/nodes``, ...) to the JSON it answers."""
    bodies: dict[str, Any] = {}

    def get(url: str, **kwargs: Any) -> FakeResponse:
        return FakeResponse(bodies["/" + url.split("/", 3)[3]])

    monkeypatch.setattr(sandbox_daemons.requests, "get", get)
    return bodies


def node(layout: Layout, nm: str, labels: list[str], state: str = "RUNNING") -> dict:
    return {"id": f"127.0.0.1:{layout.ports[f'nm_{nm}']}", "state": state, "nodeLabels": labels}


# -- readiness -----------------------------------------------------------------------------
def test_nodes_ready_when_both_nodemanagers_run_with_their_labels(layout, answers):
    cpu, gpu = node(layout, "cpu", []), node(layout, "gpu", [GPU_LABEL])
    answers["/ws/v1/cluster/nodes"] = {"nodes": {"node": [cpu, gpu]}}
    assert sandbox_daemons.rm_nodes(layout) == [cpu, gpu]
    assert sandbox_daemons.nodes_ready(layout)
    del cpu["nodeLabels"]  # an unlabelled node may leave the field out
    assert sandbox_daemons.nodes_ready(layout)


@pytest.mark.parametrize(
    "nodes",
    [
        [],
        [("cpu", [], "RUNNING")],
        [("cpu", [], "RUNNING"), ("gpu", [], "RUNNING")],
        [("cpu", [GPU_LABEL], "RUNNING"), ("gpu", [GPU_LABEL], "RUNNING")],
        [("cpu", [], "RUNNING"), ("gpu", [GPU_LABEL], "UNHEALTHY")],
    ],
)
def test_nodes_not_ready(layout, answers, nodes):
    body = [node(layout, nm, labels, state) for nm, labels, state in nodes]
    answers["/ws/v1/cluster/nodes"] = {"nodes": {"node": body} if body else None}
    assert not sandbox_daemons.nodes_ready(layout)


def test_a_node_of_another_sandbox_is_not_ready(layout, answers):
    stranger = {"id": "127.0.0.1:1", "state": "RUNNING", "nodeLabels": []}
    ours = [node(layout, "cpu", []), node(layout, "gpu", [GPU_LABEL])]
    answers["/ws/v1/cluster/nodes"] = {"nodes": {"node": [*ours, stranger]}}
    assert not sandbox_daemons.nodes_ready(layout)


@pytest.mark.parametrize(
    ("safemode", "live", "off"),
    [("", {"dn": {}}, True), ("Safe mode is ON.", {"dn": {}}, False), ("", {}, False)],
)
def test_safemode_off_needs_a_live_datanode(layout, answers, safemode, live, off):
    answers["/jmx"] = {"beans": [{"Safemode": safemode, "LiveNodes": json.dumps(live)}]}
    assert sandbox_daemons.safemode_off(layout) is off


# -- the gpu label -------------------------------------------------------------------------
@pytest.fixture
def yarn_calls(layout) -> Path:
    """A fake ``yarn`` launcher in the sandbox; the returned file gets its arguments."""
    calls = layout.root / "yarn-calls"
    yarn = layout.root / "bin" / "yarn"
    yarn.parent.mkdir(parents=True)
    yarn.write_text(
        f'#!/bin/sh\necho "$@" >> "{calls}"\n[ -z "$YARN_FAIL" ] || {{ echo no >&2; exit 1; }}\n'
    )
    yarn.chmod(0o755)
    return calls


@pytest.mark.parametrize("info", [{"name": GPU_LABEL}, [{"name": "x"}, {"name": GPU_LABEL}]])
def test_an_existing_gpu_label_is_left_alone(layout, answers, yarn_calls, info):
    answers["/ws/v1/cluster/get-node-labels"] = {"nodeLabelInfo": info}
    sandbox_daemons.ensure_cluster_label(layout)
    assert not yarn_calls.exists()


@pytest.mark.parametrize("labels", [None, {}, {"nodeLabelInfo": {"name": "x"}}])
def test_a_missing_gpu_label_is_added_as_exclusive(layout, answers, yarn_calls, labels):
    answers["/ws/v1/cluster/get-node-labels"] = labels
    sandbox_daemons.ensure_cluster_label(layout)
    assert (
        yarn_calls.read_text() == f"rmadmin -addToClusterNodeLabels {GPU_LABEL}(exclusive=true)\n"
    )


def test_adding_the_gpu_label_can_fail(layout, answers, yarn_calls, monkeypatch):
    answers["/ws/v1/cluster/get-node-labels"] = {}
    monkeypatch.setenv("YARN_FAIL", "1")
    with pytest.raises(SandboxError, match="adding the node label 'gpu' failed: no"):
        sandbox_daemons.ensure_cluster_label(layout)


# -- processes -----------------------------------------------------------------------------
@pytest.fixture
def fake_namenode(layout) -> Iterator[subprocess.Popen]:
    """A process whose command line is that of this sandbox's NameNode."""
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    proc = subprocess.Popen([*sleep, DAEMON_MAIN["namenode"], f"-Dtfyarn.sandbox={layout.root}"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_daemon_is_recognised_by_its_class_and_sandbox(layout, fake_namenode, tmp_path):
    pid = fake_namenode.pid
    assert sandbox_daemons.pid_alive(layout.root, "namenode", pid)
    assert not sandbox_daemons.pid_alive(layout.root, "datanode", pid)
    assert not sandbox_daemons.pid_alive(tmp_path / "other", "namenode", pid)
    assert not sandbox_daemons.pid_alive(layout.root, "namenode", os.getpid())
    fake_namenode.kill()
    fake_namenode.wait()
    assert not sandbox_daemons.pid_alive(layout.root, "namenode", pid)


def test_sandbox_processes_are_its_daemons_and_containers(layout, fake_namenode, tmp_path):
    container_dir = layout.root / "nm" / "cpu" / "local"
    container_dir.mkdir(parents=True)
    container = subprocess.Popen(["sleep", "60"], cwd=container_dir)
    elsewhere = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    try:
        pids = {p.pid for p in sandbox_daemons.sandbox_processes(layout.root)}
        assert pids == {fake_namenode.pid, container.pid}
        assert sandbox_daemons.sandbox_processes(tmp_path / "other") == []
    finally:
        for proc in (container, elsewhere):
            proc.kill()
            proc.wait()
