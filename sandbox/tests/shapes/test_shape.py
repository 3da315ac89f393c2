"""The shapes of a sandbox (tfyarn_sandbox.shapes.shape): ports, hosts, folders, commands.

Every configuration here is plain data computed from a Layout; nothing is started.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest
from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox.config import DAEMON_MAIN, DAEMONS
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos
from tfyarn_sandbox.shapes import secure_io
from tfyarn_sandbox.shapes.shape import (
    KERBEROS_HOST,
    ROLE_PORTS,
    Shape,
    conf_folders,
    daemon_conf_dir,
    daemons,
    default_fs,
    default_host,
    hdfs_folders,
    host_plan,
    java_command,
    port_hosts,
    port_names,
)
from tfyarn_sandbox.site_xml import PORT_NAMES, Layout

ALL = Shape(kerberos=True, ha=True, viewfs=True, hosts=True)
#: Every combination of the four options.
SHAPES = [Shape(*flags) for flags in itertools.product([False, True], repeat=4)]


def shaped_layout(root: Path, shape: Shape, block: int = 7) -> Layout:
    ports = {name: 45000 + i for i, name in enumerate(port_names(shape))}
    plan = host_plan(shape, block) if shape.hosts else {}
    return Layout(root, Path("/lib"), ports, "root", default_host(shape), port_hosts(plan))


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "box"


def folders_of(root: Path, shape: Shape) -> dict[Path, dict[str, dict[str, str]]]:
    return conf_folders(shaped_layout(root, shape), shape)


# -- the shape itself ----------------------------------------------------------------------
def test_shape_flags_and_state():
    assert Shape().is_default and Shape().flags() == []
    assert ALL.flags() == ["--kerberos", "--ha", "--viewfs", "--hosts"]
    for shape in SHAPES:
        assert Shape.from_state({"shape": shape.to_state()}) == shape
    assert Shape.from_state(None) == Shape.from_state({"ports": {}}) == Shape()
    assert Shape.from_state({"shape": {"ha": 1}}) == Shape(ha=True)


def _one(name: str) -> Shape:
    """The shape with only option ``name`` on (two GPUs for the count)."""
    return Shape(**{name: 2 if name == "gpus" else True})


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Shape)])
def test_a_default_sandbox_stands_in_for_no_shaped_one(name):
    assert not Shape().covers(_one(name))
    assert _one(name).covers(_one(name))


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Shape)])
def test_only_gpus_and_preemption_may_be_more_than_a_suite_asks(name):
    assert _one(name).covers(Shape()) is (name in ("gpus", "preemption"))


def test_a_suite_asking_for_gpus_gets_its_own_count():
    box = Shape(gpus=2)
    assert box.covers(Shape(gpus=2)) and box.covers(Shape())
    assert not box.covers(Shape(gpus=1)) and not box.covers(Shape(gpus=4))
    assert not box.covers(Shape(preemption=True, gpus=2))
    # preemption adds queues and keeps the usual ones: it stands in for a sandbox without
    assert Shape(preemption=True, gpus=2).covers(Shape(gpus=2))
    assert Shape(preemption=True, gpus=2).covers(Shape(preemption=True))
    assert not Shape(preemption=True).covers(Shape(gpus=2))
    assert not Shape(preemption=True, kerberos=True).covers(Shape(preemption=True))


def test_port_names_add_a_second_namenode_and_the_kdc():
    assert port_names(Shape()) == PORT_NAMES
    assert port_names(Shape(ha=True)) == (*PORT_NAMES, "namenode2_rpc", "namenode2_http")
    assert port_names(Shape(kerberos=True)) == (*PORT_NAMES, "kdc")
    assert port_names(Shape(viewfs=True, hosts=True)) == PORT_NAMES


def test_daemons_start_both_namenodes_first():
    assert daemons(Shape(kerberos=True, hosts=True)) == DAEMONS
    assert daemons(Shape(ha=True)) == ("namenode", "namenode2", *DAEMONS[1:])


def test_host_plan_gives_each_role_its_own_name_and_address():
    plan = host_plan(ALL, 9)
    assert list(plan) == list(ROLE_PORTS)
    assert plan["nn1"] == {"name": "nn1.s9.tfyarn.test", "address": "127.0.9.11"}
    assert len({h["name"] for h in plan.values()}) == len({h["address"] for h in plan.values()})
    assert len({h["address"] for h in plan.values()}) == len(plan) == 6
    assert "nn2" not in host_plan(Shape(hosts=True), 9)


def test_port_hosts_name_the_host_of_every_port():
    hosts = port_hosts(host_plan(ALL, 3))
    assert set(hosts) == set(port_names(ALL)) - {"kdc"}
    assert hosts["nm_gpu_http"] == "nm-gpu.s3.tfyarn.test"
    assert hosts["namenode2_rpc"] == "nn2.s3.tfyarn.test"


# -- configuration folders -----------------------------------------------------------------
def test_the_default_shape_is_the_default_sandbox(root):
    layout = shaped_layout(root, Shape())
    assert conf_folders(layout, Shape()) == sandbox_conf.conf_folders(layout)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: " ".join(s.flags()) or "default")
def test_every_folder_shares_the_clients_files_but_its_own(root, shape):
    folders = folders_of(root, shape)
    client = folders[root / "conf"]
    layout = shaped_layout(root, shape)
    assert client["core-site.xml"]["fs.defaultFS"] == default_fs(layout, shape)
    for folder, files in folders.items():
        assert set(files) == set(client)
        for name, props in files.items():
            own = {"conf-nm-cpu": "yarn-site.xml", "conf-nm-gpu": "yarn-site.xml"}
            own |= {"conf-nn1": "hdfs-site.xml", "conf-nn2": "hdfs-site.xml"}
            if own.get(folder.name) != name:
                assert props == client[name], (folder, name)


def test_ha_puts_two_namenodes_behind_a_nameservice(root):
    layout = shaped_layout(root, Shape(ha=True))
    folders = conf_folders(layout, Shape(ha=True))
    hdfs = folders[root / "conf"]["hdfs-site.xml"]
    ns = sandbox_ha.NAMESERVICE
    assert folders[root / "conf"]["core-site.xml"]["fs.defaultFS"] == f"hdfs://{ns}"
    assert "dfs.namenode.rpc-address" not in hdfs and "dfs.namenode.http-address" not in hdfs
    assert hdfs["dfs.nameservices"] == ns and hdfs[f"dfs.ha.namenodes.{ns}"] == "nn1,nn2"
    assert hdfs[f"dfs.namenode.rpc-address.{ns}.nn2"] == layout.addr("namenode2_rpc")
    assert hdfs[f"dfs.client.failover.proxy.provider.{ns}"] == sandbox_ha.FAILOVER_PROXY
    assert hdfs["dfs.namenode.shared.edits.dir"] == f"file://{root}/hdfs/shared-edits"
    assert "dfs.ha.namenode.id" not in hdfs
    for nn in ("nn1", "nn2"):
        own = folders[root / f"conf-{nn}"]["hdfs-site.xml"]
        assert own["dfs.ha.namenode.id"] == nn
        assert own["dfs.namenode.name.dir"] == f"file://{root}/hdfs/name-{nn}"


@pytest.mark.parametrize("ha", [False, True])
def test_viewfs_links_user_tmp_and_data_to_hdfs(root, ha):
    shape = Shape(viewfs=True, ha=ha)
    layout = shaped_layout(root, shape)
    core = conf_folders(layout, shape)[root / "conf"]["core-site.xml"]
    target = "hdfs://tfyarn-ns" if ha else f"hdfs://127.0.0.1:{layout.ports['namenode_rpc']}"
    assert core["fs.defaultFS"] == "viewfs://tfyarn/"
    links = {k: v for k, v in core.items() if k.startswith("fs.viewfs.mounttable.")}
    assert links == {
        f"fs.viewfs.mounttable.tfyarn.link.{m}": f"{target}{m}" for m in sandbox_ha.MOUNTS
    }


def test_kerberos_secures_every_folder_and_names_hosts(root):
    shape = Shape(kerberos=True)
    layout = shaped_layout(root, shape)
    folders = conf_folders(layout, shape)
    assert layout.addr("rm") == f"{KERBEROS_HOST}:{layout.ports['rm']}"
    for files in folders.values():
        assert files["core-site.xml"]["hadoop.security.authentication"] == "kerberos"
        assert files["core-site.xml"]["hadoop.security.authorization"] == "true"
        assert files["hdfs-site.xml"]["dfs.data.transfer.protection"] == "authentication"
        assert files["yarn-site.xml"]["yarn.resourcemanager.principal"] == "rm/_HOST@TFYARN.SANDBOX"
    q = "yarn.scheduler.capacity.root"
    acls = folders[root / "conf"]["capacity-scheduler.xml"]
    assert (acls[f"{q}.acl_submit_applications"], acls[f"{q}.ml-gpu.acl_submit_applications"]) == (
        " ",
        "root,alice",
    )
    nm = folders[root / "conf-nm-gpu"]["yarn-site.xml"]
    assert f"KRB5_CONFIG={root}/krb5/krb5.conf" in nm["yarn.nodemanager.admin-env"]
    krb5 = f"-Djava.security.krb5.conf={root}/krb5/krb5.conf"
    java = f"JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC {krb5}"
    assert nm["yarn.nodemanager.admin-env"].endswith(java)
    assert "yarn.nodemanager.admin-env" not in folders[root / "conf"]["yarn-site.xml"]


def test_hosts_give_each_daemon_its_own_address(root):
    shape = Shape(hosts=True)
    layout = shaped_layout(root, shape, block=4)
    folders = conf_folders(layout, shape)
    hdfs, yarn = folders[root / "conf"]["hdfs-site.xml"], folders[root / "conf"]["yarn-site.xml"]
    assert hdfs["dfs.namenode.rpc-address"] == f"nn1.s4.tfyarn.test:{layout.ports['namenode_rpc']}"
    assert hdfs["dfs.datanode.hostname"] == "dn.s4.tfyarn.test"
    assert yarn["yarn.resourcemanager.hostname"] == "rm.s4.tfyarn.test"
    for nm in ("cpu", "gpu"):
        own = folders[root / f"conf-nm-{nm}"]["yarn-site.xml"]
        assert own["yarn.nodemanager.hostname"] == f"nm-{nm}.s4.tfyarn.test"
        assert own["yarn.nodemanager.address"].startswith(f"nm-{nm}.s4.tfyarn.test:")
    values = [v for files in folders.values() for p in files.values() for v in p.values()]
    assert not any(v.startswith(("127.0.0.1:", "localhost:")) for v in values)


def test_all_options_together(root):
    folders = folders_of(root, ALL)
    assert set(folders) == {
        root / d for d in ("conf", "conf-nm-cpu", "conf-nm-gpu", "conf-nn1", "conf-nn2")
    }
    client = folders[root / "conf"]
    assert client["core-site.xml"]["fs.defaultFS"] == "viewfs://tfyarn/"
    assert (
        client["core-site.xml"]["fs.viewfs.mounttable.tfyarn.link./data"] == "hdfs://tfyarn-ns/data"
    )
    assert client["hdfs-site.xml"]["dfs.namenode.rpc-address.tfyarn-ns.nn2"].startswith("nn2.s7.")
    assert client["hdfs-site.xml"]["dfs.namenode.kerberos.principal"] == "nn/_HOST@TFYARN.SANDBOX"


# -- commands and HDFS ---------------------------------------------------------------------
def test_java_command_of_the_default_shape_is_the_default_one(root):
    layout = shaped_layout(root, Shape())
    for name in DAEMONS:
        expected = sandbox_conf.java_command(layout, Path("/jdk"), name)
        assert java_command(layout, Path("/jdk"), Shape(), name) == expected


def test_java_command_of_the_second_namenode(root):
    shape = Shape(ha=True)
    layout = shaped_layout(root, shape)
    cmd = java_command(layout, Path("/jdk"), shape, "namenode2", "-x")
    assert cmd[-2:] == [DAEMON_MAIN["namenode"], "-x"]
    assert cmd[cmd.index("-cp") + 1].startswith(f"{root}/conf-nn2:")
    assert daemon_conf_dir(layout, shape, "namenode") == root / "conf-nn1"
    assert daemon_conf_dir(layout, Shape(), "namenode") == root / "conf"


def test_java_command_under_kerberos(root):
    shape = Shape(kerberos=True)
    layout = shaped_layout(root, shape)
    krb5 = f"-Djava.security.krb5.conf={root}/krb5/krb5.conf"
    for name in DAEMONS:
        cmd = java_command(layout, Path("/jdk"), shape, name)
        assert krb5 in cmd
        first = cmd[cmd.index("-cp") + 1].split(":")[0]
        is_nm = name.startswith("nodemanager-")
        assert (first == str(secure_io.classes_dir(root))) is is_nm


def test_hdfs_folders_give_each_user_a_private_home():
    folders = hdfs_folders("root", Shape(viewfs=True))
    assert ("/data", "1777", None) in folders
    assert ("/user/root", "755", None) in folders
    for user in sandbox_kerberos.USERS:
        assert (f"/user/{user}", "700", user) in folders
    assert [p for p, _, _ in folders].index("/user") < [p for p, _, _ in folders].index(
        "/user/alice"
    )
