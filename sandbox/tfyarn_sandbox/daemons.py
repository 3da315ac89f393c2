"""The sandbox's running daemons: finding their processes and asking them if they are ready.

Processes are recognised by their command line (the daemon's main class and
``-Dtfyarn.sandbox=<root>``) or, for containers, by a working folder under
``<root>/nm/``, so only this sandbox's processes are ever matched. Readiness
and first-start setup go through the daemons' HTTP APIs (JMX, the
ResourceManager's REST API, WebHDFS) and the sandbox's ``yarn`` launcher.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import requests

from tfyarn_sandbox.config import DAEMON_MAIN, SandboxError, bin_dir
from tfyarn_sandbox.site_xml import GPU_LABEL, Layout

#: ``get(url, params)``: a daemon's JSON answer (plain HTTP, or SPNEGO on a Kerberized sandbox).
JsonGet = Callable[[str, Mapping[str, str]], Any]


def plain_get(url: str, params: Mapping[str, str]) -> Any:
    """GET ``url`` over plain HTTP and decode its JSON."""
    resp = requests.get(url, params=dict(params), timeout=5)
    resp.raise_for_status()
    return resp.json()


def command_path(name: str) -> str:
    """Where command ``name`` is (``PATH``, then the system folders a root shell has)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    return found or name


def ensure_commands(packages: Mapping[str, str]) -> None:
    """Install the Debian package of each missing command (``{command: package}``), quietly.

    Needs root; the package lists are refreshed only when the install fails without.
    """
    missing = sorted({pkg for cmd, pkg in packages.items() if command_path(cmd) == cmd})
    if not missing:
        return
    if os.geteuid() != 0:
        raise SandboxError(f"the sandbox needs {', '.join(missing)}: apt-get install them as root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]
    proc = subprocess.run(install, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
        proc = subprocess.run(install, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SandboxError(f"installing {', '.join(missing)} failed: {proc.stderr[-2000:]}")


def pid_alive(root: Path, name: str, pid: int, main: str | None = None) -> bool:
    """Whether ``pid`` still runs daemon ``name`` (main class or program ``main``) at ``root``."""
    try:
        proc = psutil.Process(pid)
        cmd = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return (main or DAEMON_MAIN[name]) in cmd and any(str(root) in part for part in cmd)


def ended(proc: psutil.Process) -> bool:
    """Whether ``proc`` has exited: gone, or a zombie (whose parent, such as the test
    session that started the sandbox, has not collected it yet)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def terminate(proc: psutil.Process, timeout: float = 30.0) -> None:
    """SIGTERM ``proc``, SIGKILL it if it has not ended ``timeout`` s later; wait for its end.

    Polls :func:`ended` rather than waiting on the process, which for a daemon this
    process did not start would never see a zombie end.
    """
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if ended(proc):
                with contextlib.suppress(psutil.Error):
                    proc.wait(timeout=0)  # collects it if it is this process's child
                return
            time.sleep(0.1)
    raise SandboxError(f"process {proc.pid} still runs after SIGTERM and SIGKILL")


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


#: The web port of each daemon: listening again once a restarted daemon is back.
DAEMON_WEB_PORT = {
    "namenode": "namenode_http",
    "namenode2": "namenode2_http",
    "datanode": "datanode_http",
    "resourcemanager": "rm_http",
    "nodemanager-cpu": "nm_cpu_http",
    "nodemanager-gpu": "nm_gpu_http",
}


def web_listening(layout: Layout, daemon: str) -> bool:
    """Whether daemon ``daemon``'s web port accepts connections (a TCP connect, no request:
    the same on a Kerberized sandbox, where the request itself would need a ticket)."""
    port = DAEMON_WEB_PORT[daemon]
    try:
        with socket.create_connection((layout.host_of(port), layout.ports[port]), timeout=1):
            return True
    except OSError:
        return False


def rm_nodes(layout: Layout, get: JsonGet | None = None) -> list[dict]:
    """The ResourceManager's node list (its REST API's ``nodes.node``)."""
    url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/nodes"
    return ((get or plain_get)(url, {}).get("nodes") or {}).get("node") or []


def safemode_off(layout: Layout, get: JsonGet | None = None, port: str = "namenode_http") -> bool:
    """HDFS is out of safe mode and has at least one live DataNode (the JMX of the
    NameNode whose web port is ``port``)."""
    url = f"http://{layout.addr(port)}/jmx"
    qry = "Hadoop:service=NameNode,name=NameNodeInfo"
    beans = (get or plain_get)(url, {"qry": qry})["beans"]
    info = beans[0]
    return not info.get("Safemode") and len(json.loads(info["LiveNodes"])) >= 1


def nodes_ready(layout: Layout, get: JsonGet | None = None) -> bool:
    """Exactly both NodeManagers are RUNNING, the gpu one with its label, the cpu one without."""
    nodes = [n for n in rm_nodes(layout, get) if n.get("state") == "RUNNING"]
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


def ensure_cluster_label(
    layout: Layout, get: JsonGet | None = None, env: Mapping[str, str] | None = None
) -> None:
    """Add the exclusive ``gpu`` node label to the ResourceManager unless it has it.

    ``get`` reads the REST API and ``env`` is added to ``yarn rmadmin``'s environment
    (a Kerberized sandbox's ticket cache).
    """
    url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/get-node-labels"
    labels = (get or plain_get)(url, {}) or {}
    items = labels.get("nodeLabelInfo") or []
    if isinstance(items, dict):
        items = [items]
    if any(i.get("name") == GPU_LABEL for i in items):
        return
    env = dict(os.environ, HADOOP_CONF_DIR=str(layout.conf_dir), **(env or {}))
    proc = subprocess.run(
        [str(bin_dir(layout.root) / "yarn"), "rmadmin", "-addToClusterNodeLabels",
         f"{GPU_LABEL}(exclusive=true)"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(f"adding the node label {GPU_LABEL!r} failed: {proc.stderr[-2000:]}")


def curl(env: Mapping[str, str], method: str, url: str, params: Mapping[str, str]) -> str:
    """``method url?params`` with SPNEGO as ``env``'s ticket; the body (failures raise)."""
    full = f"{url}?{urlencode(dict(params))}" if params else url
    cmd = ["curl", "-sS", "-f", "--negotiate", "-u", ":", "--max-time", "10"]
    proc = subprocess.run(
        [*cmd, "-X", method, full],
        capture_output=True, text=True, env=dict(os.environ, **env), timeout=30,
    )  # fmt: skip
    if proc.returncode != 0:
        raise requests.ConnectionError(f"{method} {full}: {proc.stderr.strip()}")
    return proc.stdout


def negotiate_get(env: Mapping[str, str]) -> JsonGet:
    """A :data:`JsonGet` that authenticates with SPNEGO as ``env``'s ticket."""

    def get(url: str, params: Mapping[str, str]) -> object:
        return json.loads(curl(env, "GET", url, params))

    return get
