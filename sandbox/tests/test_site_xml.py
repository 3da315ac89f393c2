"""The sandbox's Hadoop configuration (tfyarn_sandbox.site_xml), as data and as XML files."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.site_xml import GPU_LABEL, PORT_NAMES, Layout

from tfyarn_jupyter.hadoop.filesystem import read_conf

USER = "alice"


@pytest.fixture
def layout(tmp_path) -> Layout:
    ports = {name: 41000 + i for i, name in enumerate(PORT_NAMES)}
    return Layout(tmp_path / "box", Path("/cache/hadoop/lib"), ports, USER)


def all_sites(layout: Layout) -> dict[str, dict[str, str]]:
    return {
        "core": hadoop_conf.core_site(layout),
        "hdfs": hadoop_conf.hdfs_site(layout),
        "yarn": hadoop_conf.yarn_site(layout),
        "nm-cpu": hadoop_conf.nodemanager_site(layout, "cpu"),
        "nm-gpu": hadoop_conf.nodemanager_site(layout, GPU_LABEL),
        "capacity": hadoop_conf.capacity_scheduler(layout),
    }


# -- Layout -------------------------------------------------------------------------------
def test_layout_addresses_and_folders(layout):
    assert layout.addr("rm") == f"127.0.0.1:{layout.ports['rm']}"
    assert layout.default_fs == f"hdfs://127.0.0.1:{layout.ports['namenode_rpc']}"
    assert layout.conf_dir == layout.root / "conf"
    assert layout.nm_conf_dir("gpu") == layout.root / "conf-nm-gpu"
    assert Layout(layout.root, layout.lib, layout.ports, USER, host="h").addr("rm_http") == (
        f"h:{layout.ports['rm_http']}"
    )


def test_layout_has_no_port_it_was_not_given(layout):
    with pytest.raises(KeyError):
        layout.addr("no_such_port")


# -- the properties -----------------------------------------------------------------------
def test_every_port_is_configured_exactly_once(layout):
    """Each allocated port is some daemon's address, and no two addresses share one."""

    def addresses(props: dict[str, str]) -> list[str]:
        return [v for v in props.values() if v.startswith(f"{layout.host}:")]

    shared = hadoop_conf.yarn_site(layout)
    used = addresses(hadoop_conf.hdfs_site(layout)) + addresses(shared)
    for nm in ("cpu", GPU_LABEL):
        own = hadoop_conf.nodemanager_site(layout, nm).items() - shared.items()
        used += addresses(dict(own))
    assert sorted(used) == sorted(layout.addr(name) for name in PORT_NAMES)


def test_clients_find_hdfs_and_the_resourcemanager(layout):
    sites = all_sites(layout)
    assert sites["core"]["fs.defaultFS"] == layout.default_fs
    assert sites["hdfs"]["dfs.namenode.http-address"] == layout.addr("namenode_http")
    assert sites["yarn"]["yarn.resourcemanager.address"] == layout.addr("rm")
    assert sites["yarn"]["yarn.resourcemanager.webapp.address"] == layout.addr("rm_http")


def test_state_lives_under_the_sandbox_root(layout):
    sites = all_sites(layout)
    assert sites["core"]["hadoop.tmp.dir"] == str(layout.root / "tmp")
    assert sites["hdfs"]["dfs.namenode.name.dir"] == f"file://{layout.root}/hdfs/name"
    assert sites["hdfs"]["dfs.datanode.data.dir"] == f"file://{layout.root}/hdfs/data"
    assert (
        sites["yarn"]["yarn.node-labels.fs-store.root-dir"] == f"file://{layout.root}/node-labels"
    )
    node_attributes = sites["yarn"]["yarn.node-attribute.fs-store.root-dir"]
    assert node_attributes == f"file://{layout.root}/node-attributes"


def test_applications_get_the_configuration_and_the_cached_jars(layout):
    classpath = hadoop_conf.yarn_site(layout)["yarn.application.classpath"]
    assert classpath == "$HADOOP_CONF_DIR,/cache/hadoop/lib/*"


def test_only_the_sandbox_user_administers_yarn(layout):
    sites = all_sites(layout)
    assert sites["yarn"]["yarn.acl.enable"] == "true"
    assert sites["yarn"]["yarn.admin.acl"] == USER
    admins = {k: v for k, v in sites["capacity"].items() if k.endswith("acl_administer_queue")}
    assert len(admins) == 3
    assert set(admins.values()) == {USER}


@pytest.mark.parametrize("nm", ["cpu", GPU_LABEL])
def test_each_nodemanager_has_its_own_ports_and_folders(layout, nm):
    props = hadoop_conf.nodemanager_site(layout, nm)
    base = layout.root / "nm" / nm
    assert props["yarn.nodemanager.address"] == layout.addr(f"nm_{nm}")
    assert props["yarn.nodemanager.localizer.address"] == layout.addr(f"nm_{nm}_localizer")
    assert props["yarn.nodemanager.webapp.address"] == layout.addr(f"nm_{nm}_http")
    assert props["yarn.nodemanager.local-dirs"] == str(base / "local")
    assert props["yarn.nodemanager.log-dirs"] == str(base / "logs")
    assert props["yarn.nodemanager.recovery.dir"] == str(base / "recovery")
    # The shared properties come along unchanged.
    assert props["yarn.resourcemanager.address"] == layout.addr("rm")


def env_pairs(admin_env: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in admin_env.split(","))


@pytest.mark.parametrize("nm", ["cpu", GPU_LABEL])
def test_containers_jvms_get_c1_and_the_serial_collector_from_the_nodemanager(layout, nm):
    env = env_pairs(hadoop_conf.nodemanager_site(layout, nm)["yarn.nodemanager.admin-env"])
    assert env == {
        "MALLOC_ARENA_MAX": "$MALLOC_ARENA_MAX",
        "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    }


def test_nodemanager_admin_env_joins_more_jvm_options_into_one_java_tool_options():
    joined = hadoop_conf.nodemanager_admin_env(
        KRB5_CONFIG="/k.conf", JAVA_TOOL_OPTIONS="-Dk=/k.conf"
    )
    env = env_pairs(joined)
    assert env["KRB5_CONFIG"] == "/k.conf"
    assert env["JAVA_TOOL_OPTIONS"] == f"{hadoop_conf.CONTAINER_JVM_OPTIONS} -Dk=/k.conf"
    assert joined.startswith("MALLOC_ARENA_MAX=")


def test_only_the_gpu_nodemanager_is_labelled(layout):
    label = "yarn.nodemanager.node-labels.provider.configured-node-partition"
    assert hadoop_conf.nodemanager_site(layout, GPU_LABEL)[label] == GPU_LABEL
    assert hadoop_conf.nodemanager_site(layout, GPU_LABEL)["yarn.nodemanager.node-labels.provider"]
    assert label not in hadoop_conf.nodemanager_site(layout, "cpu")
    assert "yarn.nodemanager.node-labels.provider" not in hadoop_conf.nodemanager_site(
        layout, "cpu"
    )


def test_nodemanager_site_leaves_the_shared_yarn_site_alone(layout):
    shared = hadoop_conf.yarn_site(layout)
    hadoop_conf.nodemanager_site(layout, GPU_LABEL)
    assert shared == hadoop_conf.yarn_site(layout)
    assert "yarn.nodemanager.address" not in shared


def test_queues_split_the_unlabelled_partition_and_only_ml_gpu_reaches_gpu(layout):
    cs = hadoop_conf.capacity_scheduler(layout)
    q = "yarn.scheduler.capacity.root"
    assert cs[f"{q}.queues"].split(",") == list(hadoop_conf.QUEUES)
    assert sum(int(cs[f"{q}.{name}.capacity"]) for name in hadoop_conf.QUEUES) == 100
    assert cs[f"{q}.default.accessible-node-labels"] == " "
    assert cs[f"{q}.ml-gpu.accessible-node-labels"] == GPU_LABEL
    assert cs[f"{q}.ml-gpu.accessible-node-labels.{GPU_LABEL}.capacity"] == "100"
    assert f"{q}.default.accessible-node-labels.{GPU_LABEL}.capacity" not in cs


def test_a_nodemanager_offers_no_more_than_the_scheduler_allows(layout):
    yarn = hadoop_conf.yarn_site(layout)
    assert yarn["yarn.nodemanager.resource.memory-mb"] == str(hadoop_conf.NM_MEMORY_MB)
    assert yarn["yarn.scheduler.maximum-allocation-mb"] == str(hadoop_conf.NM_MEMORY_MB)
    assert yarn["yarn.nodemanager.resource.cpu-vcores"] == str(hadoop_conf.NM_VCORES)
    assert yarn["yarn.scheduler.maximum-allocation-vcores"] == str(hadoop_conf.NM_VCORES)


# -- XML ----------------------------------------------------------------------------------
def test_to_xml_is_a_hadoop_configuration_document():
    doc = hadoop_conf.to_xml({"a.b": "1", "c": "x"})
    assert doc.startswith(b"<?xml version='1.0' encoding='utf-8'?>")
    root = ET.fromstring(doc)
    assert root.tag == "configuration"
    assert [(p.findtext("name"), p.findtext("value")) for p in root] == [("a.b", "1"), ("c", "x")]


def test_to_xml_of_nothing_is_an_empty_configuration():
    root = ET.fromstring(hadoop_conf.to_xml({}))
    assert (root.tag, list(root)) == ("configuration", [])


def test_to_xml_escapes_markup_in_values():
    doc = hadoop_conf.to_xml({"k": "a<b & c>d"})
    assert b"a&lt;b &amp; c&gt;d" in doc
    assert ET.fromstring(doc).findtext("property/value") == "a<b & c>d"


def test_to_xml_keeps_values_as_they_are():
    """A single space is YARN's "no node labels"; it must not be trimmed away."""
    doc = hadoop_conf.to_xml({"labels": " ", "padded": " a "})
    values = [p.findtext("value") for p in ET.fromstring(doc)]
    assert values == [" ", " a "]


@pytest.mark.parametrize("site", ["core", "hdfs", "yarn", "nm-cpu", "nm-gpu", "capacity"])
def test_every_site_reads_back_from_its_file(layout, tmp_path, monkeypatch, site):
    """What the sandbox writes is what the client reads back (filesystem.read_conf).

    read_conf strips values, so the single-space "no labels" setting reads back empty.
    """
    props = all_sites(layout)[site]
    (tmp_path / f"{site}.xml").write_bytes(hadoop_conf.to_xml(props))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert read_conf(f"{site}.xml") == {k: v.strip() for k, v in props.items()}


def test_daemons_log_at_info_to_stderr():
    assert hadoop_conf.LOG4J.startswith("log4j.rootLogger=INFO,console\n")
    assert "log4j.appender.console.target=System.err" in hadoop_conf.LOG4J
