"""The sandbox's running daemons: finding their processes and asking them if they are ready.

Processes are recognised by their command line (the daemon's main class and
``-Dtfyarn.sandbox=<root>``) or, for containers, by a working folder under
``<root>/nm/``, so only this sandbox's processes are ever matched. Readiness
and first-start setup go through the daemons' HTTP APIs (JMX, the
ResourceManager's REST API, WebHDFS) and the sandbox's ``yarn`` launcher.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psutil
import requests

from .hadoop_conf import GPU_LABEL, Layout
from .sandbox_conf import DAEMON_MAIN, SandboxError, bin_dir


def pid_alive(root: Path, name: str, pid: int) -> bool:
    """Whether ``pid`` still runs daemon ``name`` of the sandbox at ``root``."""
    try:
        proc = psutil.Process(pid)
        cmd = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return DAEMON_MAIN[name] in cmd and any(str(root) in part for part in cmd)


def sandbox_processes(root: Path) -> list[psutil.Process]:
    """Daemons and containers of the sandbox at ``root`` (by command line or working dir)."""
    mine = []
    prefix = str(root)
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        if proc.pid == os.getpid():
            continue
        cmd = proc.info.get("cmdline") or []
        cwd = proc.info.get("cwd") or ""
        if f"-Dtfyarn.sandbox={prefix}" in cmd or cwd.startswith(prefix + os.sep + "nm" + os.sep):
            mine.append(proc)
    return mine


def rm_nodes(layout: Layout) -> list[dict]:
    """The ResourceManager's node list (its REST API's ``nodes.node``)."""
    url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/nodes"
    resp = requests.get(url, timeout=5)
    resp.raise_for_status()
    return (resp.json().get("nodes") or {}).get("node") or []


def safemode_off(layout: Layout) -> bool:
    """HDFS is out of safe mode and has at least one live DataNode (NameNode JMX)."""
    url = f"http://{layout.addr('namenode_http')}/jmx"
    qry = "Hadoop:service=NameNode,name=NameNodeInfo"
    beans = requests.get(url, params={"qry": qry}, timeout=5).json()["beans"]
    info = beans[0]
    return not info.get("Safemode") and len(json.loads(info["LiveNodes"])) >= 1


def nodes_ready(layout: Layout) -> bool:
    """Exactly both NodeManagers are RUNNING, the gpu one with its label, the cpu one without."""
    nodes = [n for n in rm_nodes(layout) if n.get("state") == "RUNNING"]
    labels = {n["id"].rsplit(":", 1)[1]: n.get("nodeLabels") or [] for n in nodes}
    want = {
        str(layout.ports["nm_cpu"]): [],
        str(layout.ports["nm_gpu"]): [GPU_LABEL],
    }
    return labels == want


def prepare_hdfs(layout: Layout) -> None:
    """Folders the cluster needs: /tmp, aggregated logs, the user's home."""
    from hdfs import InsecureClient

    client = InsecureClient(f"http://{layout.addr('namenode_http')}", user=layout.user)
    for path, mode in (("/tmp", "1777"), ("/tmp/logs", "1777"), ("/user", "755")):
        client.makedirs(path)
        client.set_permission(path, mode)
    home = f"/user/{layout.user}"
    client.makedirs(home)
    client.set_permission(home, "755")


def ensure_cluster_label(layout: Layout) -> None:
    """Add the exclusive ``gpu`` node label to the ResourceManager unless it has it."""
    url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/get-node-labels"
    labels = requests.get(url, timeout=5).json() or {}
    items = labels.get("nodeLabelInfo") or []
    if isinstance(items, dict):
        items = [items]
    if any(i.get("name") == GPU_LABEL for i in items):
        return
    env = dict(os.environ, HADOOP_CONF_DIR=str(layout.conf_dir))
    proc = subprocess.run(
        [str(bin_dir(layout.root) / "yarn"), "rmadmin", "-addToClusterNodeLabels",
         f"{GPU_LABEL}(exclusive=true)"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(f"adding the node label {GPU_LABEL!r} failed: {proc.stderr[-2000:]}")
