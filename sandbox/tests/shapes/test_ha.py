"""Two NameNodes and viewfs (tfyarn_sandbox.shapes.ha): properties, and the failover
driven through a fake ``hdfs`` launcher and fabricated JMX answers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tfyarn_sandbox.config import SandboxError
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes.shape import Shape, port_names
from tfyarn_sandbox.site_xml import Layout


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 47000 + i for i, name in enumerate(port_names(Shape(ha=True)))}
    return Layout(tmp_path / "box", Path("/lib"), ports, "root")


def jmx(states: Mapping[str, str], layout: Layout):
    """A JsonGet answering NameNodeStatus with ``states`` (by NameNode id)."""
    by_port = {str(layout.ports[sandbox_ha.NAMENODE_PORTS[nn][1]]): s for nn, s in states.items()}

    def get(url: str, params: Mapping[str, str]) -> Any:
        assert params == {"qry": "Hadoop:service=NameNode,name=NameNodeStatus"}
        port = url.split(":")[2].split("/")[0]
        return {"beans": [{"State": by_port[port]}]}

    return get


def test_ha_hdfs_site_is_plain_data(layout):
    single = {
        "dfs.replication": "1",
        "dfs.namenode.rpc-address": "x:1",
        "dfs.namenode.http-address": "x:2",
    }
    props = sandbox_ha.ha_hdfs_site(single, layout)
    assert props["dfs.replication"] == "1"
    assert not {"dfs.namenode.rpc-address", "dfs.namenode.http-address"} & set(props)
    assert props["dfs.ha.automatic-failover.enabled"] == "false"
    assert props["dfs.ha.fencing.methods"] == "shell(/bin/true)"
    assert props["dfs.namenode.http-address.tfyarn-ns.nn1"] == layout.addr("namenode_http")
    assert single["dfs.namenode.rpc-address"] == "x:1"  # the input is left alone


def test_viewfs_core_site():
    assert sandbox_ha.viewfs_core_site("hdfs://nn:1/") == {
        "fs.defaultFS": "viewfs://tfyarn/",
        "fs.viewfs.mounttable.tfyarn.link./user": "hdfs://nn:1/user",
        "fs.viewfs.mounttable.tfyarn.link./tmp": "hdfs://nn:1/tmp",
        "fs.viewfs.mounttable.tfyarn.link./data": "hdfs://nn:1/data",
    }


def test_namenode_site(layout):
    assert sandbox_ha.namenode_site(layout, "nn2") == {
        "dfs.ha.namenode.id": "nn2",
        "dfs.namenode.name.dir": f"file://{layout.root}/hdfs/name-nn2",
    }
    assert sandbox_ha.namenode_id("namenode") == "nn1"


@pytest.mark.parametrize(
    ("states", "active"),
    [({"nn1": "active", "nn2": "standby"}, "nn1"), ({"nn1": "standby", "nn2": "active"}, "nn2"),
     ({"nn1": "standby", "nn2": "standby"}, None)],
)  # fmt: skip
def test_active_namenode(layout, states, active):
    assert sandbox_ha.active_namenode(layout, jmx(states, layout)) == active


@pytest.fixture
def haadmin_calls(layout) -> Path:
    """A fake ``hdfs`` launcher in the sandbox; the returned file gets its arguments."""
    calls = layout.root / "hdfs-calls"
    hdfs = layout.root / "bin" / "hdfs"
    hdfs.parent.mkdir(parents=True)
    hdfs.write_text(
        f'#!/bin/sh\necho "$@ $KRB5CCNAME ${{HADOOP_USER_NAME:-none}}" >> "{calls}"\n'
        '[ -z "$HDFS_FAIL" ] || { echo refused >&2; exit 1; }\n'
    )
    hdfs.chmod(0o755)
    return calls


def test_failover_hands_the_active_role_to_the_other_namenode(layout, haadmin_calls, monkeypatch):
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    get = jmx({"nn1": "standby", "nn2": "active"}, layout)
    assert sandbox_ha.failover(layout, get, {"KRB5CCNAME": "/cc/root"}) == ("nn2", "nn1")
    assert haadmin_calls.read_text() == "haadmin -failover nn2 nn1 /cc/root none\n"


def test_failover_failures_say_why(layout, haadmin_calls, monkeypatch):
    with pytest.raises(SandboxError, match="no NameNode is active"):
        sandbox_ha.failover(layout, jmx({"nn1": "standby", "nn2": "standby"}, layout), {})
    monkeypatch.setenv("HDFS_FAIL", "1")
    with pytest.raises(SandboxError, match="hdfs haadmin -failover nn1 nn2 failed: refused"):
        sandbox_ha.failover(layout, jmx({"nn1": "active", "nn2": "standby"}, layout), {})


def test_copy_metadata_gives_nn2_what_nn1_was_formatted_with_once(layout):
    first = sandbox_ha.name_dir(layout, "nn1") / "current"
    first.mkdir(parents=True)
    (first / "VERSION").write_text("clusterID=c1\n")
    sandbox_ha.copy_metadata(layout)
    second = sandbox_ha.name_dir(layout, "nn2") / "current" / "VERSION"
    assert second.read_text() == "clusterID=c1\n"
    second.write_text("clusterID=c1\nlater=1\n")
    sandbox_ha.copy_metadata(layout)
    assert second.read_text() == "clusterID=c1\nlater=1\n"  # an existing one is kept
