"""Two NameNodes behind a nameservice (``--ha``) and a viewfs mount table (``--viewfs``).

With ``--ha`` the sandbox runs NameNodes ``nn1`` and ``nn2`` of nameservice
:data:`NAMESERVICE`, sharing their edit log through a local folder (the
"shared storage" flavour of HDFS HA: no JournalNodes, no ZooKeeper). Failover
is manual: ``nn1`` is made active at start, and ``tfyarn-sandbox failover``
hands the active role to the other one with ``hdfs haadmin -failover``.

With ``--viewfs`` the default filesystem is ``viewfs://`` :data:`VIEWFS_CLUSTER`
whose mount table links :data:`MOUNTS` to the same folders of HDFS (the
nameservice, or the single NameNode).

The configuration functions are pure; the rest talks to the running NameNodes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tfyarn_sandbox.config import SandboxError, bin_dir
from tfyarn_sandbox.daemons import JsonGet
from tfyarn_sandbox.site_xml import Layout

NAMESERVICE = "tfyarn-ns"
VIEWFS_CLUSTER = "tfyarn"
#: Each NameNode daemon's id in the nameservice.
NAMENODE_IDS = {"namenode": "nn1", "namenode2": "nn2"}
#: Each NameNode's (RPC, HTTP) port names.
NAMENODE_PORTS = {
    "nn1": ("namenode_rpc", "namenode_http"),
    "nn2": ("namenode2_rpc", "namenode2_http"),
}
#: The folders the viewfs mount table links to HDFS.
MOUNTS = ("/user", "/tmp", "/data")
#: Where HDFS's ``haadmin`` lives (the sandbox's ``hdfs`` launcher gains it with ``--ha``).
HAADMIN = {"haadmin": "org.apache.hadoop.hdfs.tools.DFSHAAdmin"}
FAILOVER_PROXY = "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"


def namenode_id(daemon: str) -> str:
    return NAMENODE_IDS[daemon]


def hdfs_uri() -> str:
    """The HA filesystem's URI: the nameservice, not a host."""
    return f"hdfs://{NAMESERVICE}"


def viewfs_uri() -> str:
    return f"viewfs://{VIEWFS_CLUSTER}/"


def name_dir(layout: Layout, nn: str) -> Path:
    return layout.root / "hdfs" / f"name-{nn}"


def shared_edits_dir(layout: Layout) -> Path:
    return layout.root / "hdfs" / "shared-edits"


def ha_hdfs_site(hdfs: Mapping[str, str], layout: Layout) -> dict[str, str]:
    """``hdfs`` with the single NameNode's addresses replaced by the nameservice's."""
    ns = NAMESERVICE
    props = {
        k: v
        for k, v in hdfs.items()
        if k not in ("dfs.namenode.rpc-address", "dfs.namenode.http-address")
    }
    props.update(
        {
            "dfs.nameservices": ns,
            f"dfs.ha.namenodes.{ns}": ",".join(NAMENODE_PORTS),
            "dfs.namenode.shared.edits.dir": f"file://{shared_edits_dir(layout)}",
            f"dfs.client.failover.proxy.provider.{ns}": FAILOVER_PROXY,
            "dfs.ha.automatic-failover.enabled": "false",
            # A graceful failover needs no fencing; one is still required by name.
            "dfs.ha.fencing.methods": "shell(/bin/true)",
            # The standby keeps close behind, so a failover has little to replay.
            "dfs.ha.tail-edits.period": "2s",
            # Clients give up on a dead NameNode quickly and try the other one.
            "dfs.client.failover.sleep.base.millis": "200",
            "dfs.client.failover.sleep.max.millis": "2000",
        }
    )
    for nn, (rpc, http) in NAMENODE_PORTS.items():
        props[f"dfs.namenode.rpc-address.{ns}.{nn}"] = layout.addr(rpc)
        props[f"dfs.namenode.http-address.{ns}.{nn}"] = layout.addr(http)
    return props


def namenode_site(layout: Layout, nn: str) -> dict[str, str]:
    """What NameNode ``nn`` adds to the shared hdfs-site: who it is, where its metadata is."""
    return {"dfs.ha.namenode.id": nn, "dfs.namenode.name.dir": f"file://{name_dir(layout, nn)}"}


def viewfs_core_site(target: str) -> dict[str, str]:
    """``fs.defaultFS`` on the viewfs cluster, each of :data:`MOUNTS` linked into ``target``."""
    table = f"fs.viewfs.mounttable.{VIEWFS_CLUSTER}"
    props = {"fs.defaultFS": viewfs_uri()}
    props.update({f"{table}.link.{m}": f"{target.rstrip('/')}{m}" for m in MOUNTS})
    return props


# -- the running NameNodes -----------------------------------------------------------------
def copy_metadata(layout: Layout) -> None:
    """Give ``nn2`` the freshly formatted metadata of ``nn1`` (what -bootstrapStandby does)."""
    target = name_dir(layout, "nn2")
    if not (target / "current").exists():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(name_dir(layout, "nn1"), target)


def namenode_state(layout: Layout, nn: str, get: JsonGet) -> str:
    """``active`` or ``standby`` (NameNode ``nn``'s JMX)."""
    url = f"http://{layout.addr(NAMENODE_PORTS[nn][1])}/jmx"
    beans = get(url, {"qry": "Hadoop:service=NameNode,name=NameNodeStatus"})["beans"]
    return str(beans[0]["State"])


def active_namenode(layout: Layout, get: JsonGet) -> str | None:
    """The id of the active NameNode, or None when neither is (or one does not answer)."""
    for nn in NAMENODE_PORTS:
        if namenode_state(layout, nn, get) == "active":
            return nn
    return None


def haadmin(layout: Layout, env: Mapping[str, str], *args: str) -> str:
    """Run ``hdfs haadmin ARGS`` with the sandbox's configuration; its output."""
    full = dict(os.environ, HADOOP_CONF_DIR=str(layout.conf_dir), **env)
    full.pop("HADOOP_USER_NAME", None)
    proc = subprocess.run(
        [str(bin_dir(layout.root) / "hdfs"), "haadmin", *args],
        capture_output=True, text=True, env=full, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(f"hdfs haadmin {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return proc.stdout


def failover(layout: Layout, get: JsonGet, env: Mapping[str, str]) -> tuple[str, str]:
    """Hand the active role to the standby NameNode; (the old active, the new one)."""
    active = active_namenode(layout, get)
    if active is None:
        raise SandboxError("no NameNode is active: is the sandbox running?")
    other = next(nn for nn in NAMENODE_PORTS if nn != active)
    haadmin(layout, env, "-failover", active, other)
    return active, other
