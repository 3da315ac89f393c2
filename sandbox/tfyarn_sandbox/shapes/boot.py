"""Configuring, starting, probing and stopping a sandbox of another shape than the default.

:class:`tfyarn_sandbox.sandbox.Sandbox` hands a sandbox started with any of
``--kerberos``, ``--ha``, ``--viewfs``, ``--hosts`` to these functions; what
each option means is in :mod:`tfyarn_sandbox.shapes.shape` and the modules
it names. The order of a start: hosts (addresses, ``/etc/hosts``), the KDC,
the NameNode format, NameNodes, DataNode and ResourceManager, ``nn1`` made
active, HDFS out of safe mode and its folders made, the ``gpu`` label, then
the NodeManagers. The options are kept in the state file (``shape``), so
``env``, ``status``, ``failover`` and ``stop`` know what they deal with.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox.config import HADOOP_VERSION, SandboxError
from tfyarn_sandbox.daemons import (
    JsonGet,
    command_path,
    curl,
    ensure_cluster_label,
    ensure_commands,
    negotiate_get,
    nodes_ready,
    plain_get,
    rm_nodes,
    safemode_off,
)
from tfyarn_sandbox.jars import ensure_hadoop_jars, find_java_home
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes import hosts as sandbox_hosts
from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos
from tfyarn_sandbox.shapes import secure_io
from tfyarn_sandbox.shapes import shape as sandbox_shape
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import Layout

if TYPE_CHECKING:
    from tfyarn_sandbox.sandbox import Sandbox


def layout_of(root: Path, state: Mapping[str, Any]) -> Layout:
    """The layout a shaped sandbox's state records (hosts and default host included)."""
    plan = state.get("hosts") or {}
    return Layout(
        root,
        Path(state["lib"]),
        state["ports"],
        state["user"],
        state.get("host", "127.0.0.1"),
        sandbox_shape.port_hosts(plan),
    )


def daemon_main(name: str) -> str:
    """What identifies daemon ``name``'s process (the KDC: its program)."""
    return command_path("krb5kdc") if name == "kdc" else sandbox_shape.main_class(name)


# -- configure -------------------------------------------------------------------------------
def _check_machine(shape: Shape) -> None:
    if (shape.kerberos or shape.hosts) and os.geteuid() != 0:
        flags = " ".join(f for f in shape.flags() if f in ("--kerberos", "--hosts"))
        raise SandboxError(f"{flags} needs root (a KDC, Unix accounts, loopback addresses)")
    needs = dict(sandbox_kerberos.COMMANDS) if shape.kerberos else {}
    if shape.hosts:
        needs["ip"] = "iproute2"
    if shape.nodes_without_python:
        if os.geteuid() != 0:
            raise SandboxError("--nodes-without-python needs root (a mount namespace per node)")
        needs["unshare"] = "util-linux"
    ensure_commands(needs)


def configure(box: Sandbox, shape: Shape) -> tuple[Layout, Path, dict[str, Any]]:
    """Ports, hosts, jars, realm, configuration and launchers; the state file, with no pids."""
    _check_machine(shape)
    before = box._state() or {}
    ports = sandbox_conf.choose_ports(
        box.fixed_ports, before.get("ports", {}), sandbox_shape.port_names(shape)
    )
    plan: dict[str, dict[str, str]] = {}
    block = None
    if shape.hosts:
        block = sandbox_hosts.choose_block(box.root, before.get("hosts_block"))
        plan = sandbox_shape.host_plan(shape, block)
    state: dict[str, Any] = {
        "ports": ports,
        "pids": {},
        "user": getpass.getuser(),
        "lib": str(ensure_hadoop_jars()),
        "java_home": str(find_java_home()),
        "hadoop_version": HADOOP_VERSION,
        "shape": shape.to_state(),
        "host": sandbox_shape.default_host(shape),
        "hosts": plan,
        "hosts_block": block,
    }
    layout = layout_of(box.root, state)
    java_home = Path(state["java_home"])
    if shape.kerberos:
        _make_realm(layout)
        secure_io.build(layout.root, java_home, layout.lib)
    sandbox_conf.write_folders(layout, sandbox_shape.conf_folders(layout, shape))
    opts = sandbox_kerberos.jvm_opts(layout.root) if shape.kerberos else []
    more = sandbox_ha.HAADMIN if shape.ha else None
    sandbox_conf.write_launchers(layout, java_home, opts, more)
    box._save_state(state)
    return layout, java_home, state


def _make_realm(layout: Layout) -> None:
    root = layout.root
    sandbox_kerberos.write_realm_conf(root, layout.ports["kdc"])
    sandbox_kerberos.create_realm(root)
    keytabs = {
        **sandbox_kerberos.service_principals(layout),
        **sandbox_kerberos.user_principals(layout),
    }
    # Rewritten every start (same keys), so a host plan that moved is covered.
    for name in keytabs:
        sandbox_kerberos.keytab(root, name).unlink(missing_ok=True)
    sandbox_kerberos.ensure_principals(root, keytabs)
    sandbox_kerberos.ensure_unix_users(root)


# -- probes ----------------------------------------------------------------------------------
def getter(layout: Layout, shape: Shape) -> JsonGet:
    """How to read the daemons' JSON: SPNEGO as the administrator, or plain HTTP."""
    if shape.kerberos:
        return negotiate_get(admin_env(layout, shape))
    return plain_get


def admin_env(layout: Layout, shape: Shape) -> dict[str, str]:
    """The environment of administrative commands: the sandbox user's ticket, or name."""
    if shape.kerberos:
        return sandbox_kerberos.admin_env(layout.root, layout.user)
    return {"HADOOP_USER_NAME": layout.user}


def namenode_http(layout: Layout, shape: Shape, get: JsonGet) -> str | None:
    """The port name of the active NameNode's web server (None: no NameNode is active)."""
    if not shape.ha:
        return "namenode_http"
    active = sandbox_ha.active_namenode(layout, get)
    return sandbox_ha.NAMENODE_PORTS[active][1] if active else None


def _hdfs_ready(layout: Layout, shape: Shape, get: JsonGet) -> bool:
    """A NameNode is active, out of safe mode, with a live DataNode."""
    port = namenode_http(layout, shape, get)
    return port is not None and safemode_off(layout, get, port)


def ready(layout: Layout, shape: Shape) -> bool:
    """HDFS out of safe mode on the active NameNode, both NodeManagers registered."""
    get = getter(layout, shape)
    return _hdfs_ready(layout, shape, get) and nodes_ready(layout, get)


def env(layout: Layout, shape: Shape, base: dict[str, str], user: str | None) -> dict[str, str]:
    """``base`` plus the identity: ``user``'s fresh ticket, or its simple name."""
    if shape.kerberos:
        return {**base, **sandbox_kerberos.kinit(layout.root, user or layout.user)}
    return {**base, "HADOOP_USER_NAME": user} if user else base


# -- boot ------------------------------------------------------------------------------------
def boot(
    box: Sandbox, layout: Layout, java_home: Path, state: dict[str, Any], timeout: float
) -> None:
    """Start everything of a shaped sandbox in order (see the module's docstring)."""
    shape = Shape.from_state(state)
    procs: dict[str, subprocess.Popen] = {}

    def spawn(name: str) -> None:
        procs[name] = box._spawn(layout, java_home, name)
        state["pids"][name] = procs[name].pid
        box._save_state(state)

    if shape.hosts:
        sandbox_hosts.add(state["hosts"], layout.root)
    if shape.kerberos:
        _start_kdc(box, layout, state, procs, timeout)
    format_namenode(box, layout, java_home, shape)
    for name in sandbox_shape.daemons(shape):
        if not name.startswith("nodemanager-"):
            spawn(name)
    get = getter(layout, shape)
    if shape.ha:
        _activate(box, layout, shape, procs, timeout)
    safe = lambda: _hdfs_ready(layout, shape, get)  # noqa: E731
    box._wait("HDFS out of safe mode", safe, procs, timeout)
    _prepare_hdfs(layout, shape, get)
    box._wait("ResourceManager up", lambda: rm_nodes(layout, get) is not None, procs, timeout)
    ensure_cluster_label(layout, get, admin_env(layout, shape))
    spawn("nodemanager-cpu")
    spawn("nodemanager-gpu")
    nms_ready = "both NodeManagers RUNNING with their labels"
    box._wait(nms_ready, lambda: nodes_ready(layout, get), procs, timeout)


def _activate(
    box: Sandbox,
    layout: Layout,
    shape: Shape,
    procs: Mapping[str, subprocess.Popen],
    timeout: float,
) -> None:
    """Once both NameNodes answer, make ``nn1`` active unless one already is."""
    get = getter(layout, shape)
    nns = sandbox_ha.NAMENODE_PORTS
    up = lambda: all(sandbox_ha.namenode_state(layout, nn, get) for nn in nns)  # noqa: E731
    box._wait("both NameNodes up", up, procs, timeout)
    if sandbox_ha.active_namenode(layout, get) is None:
        sandbox_ha.haadmin(layout, admin_env(layout, shape), "-transitionToActive", "nn1")


def restarted(
    box: Sandbox, layout: Layout, name: str, proc: subprocess.Popen, timeout: float
) -> None:
    """After daemon ``name`` was restarted alone: with ``--ha``, a NameNode comes back
    as standby, so one of the two is made active again if neither is."""
    shape = box.current_shape()
    if shape.ha and name in sandbox_ha.NAMENODE_IDS:
        _activate(box, layout, shape, {name: proc}, timeout)


def _start_kdc(
    box: Sandbox,
    layout: Layout,
    state: dict[str, Any],
    procs: dict[str, subprocess.Popen],
    timeout: float,
) -> None:
    box.log_dir.mkdir(parents=True, exist_ok=True)
    procs["kdc"] = sandbox_kerberos.start_kdc(layout.root, box.log_dir / "kdc.log")
    state["pids"]["kdc"] = procs["kdc"].pid
    box._save_state(state)
    box._wait("KDC listening", lambda: _listening(layout.ports["kdc"]), procs, timeout)
    sandbox_kerberos.kinit(layout.root, layout.user)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def format_namenode(box: Sandbox, layout: Layout, java_home: Path, shape: Shape) -> None:
    """Format the (first) NameNode's metadata once; with ``--ha`` copy it to the second.

    The default sandbox's start uses it too (with the default shape)."""
    first = sandbox_ha.name_dir(layout, "nn1") if shape.ha else layout.root / "hdfs" / "name"
    if not (first / "current").exists():
        cmd = sandbox_shape.java_command(
            layout, java_home, shape, "namenode", "-format", "-nonInteractive", "-force"
        )
        box.log_dir.mkdir(parents=True, exist_ok=True)
        with open(box.log_dir / "namenode-format.log", "wb") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=layout.root)
        if rc != 0:
            raise box._fail("namenode-format", f"failed with code {rc}")
    if shape.ha:
        sandbox_ha.copy_metadata(layout)


def _prepare_hdfs(layout: Layout, shape: Shape, get: JsonGet) -> None:
    """Make :func:`sandbox_shape.hdfs_folders` on the active NameNode through WebHDFS."""
    port = namenode_http(layout, shape, get)
    base = f"http://{layout.addr(port or 'namenode_http')}/webhdfs/v1"
    admin = admin_env(layout, shape)

    def put(path: str, **params: str) -> None:
        if shape.kerberos:
            curl(admin, "PUT", f"{base}{path}", params)
        else:
            params["user.name"] = layout.user
            requests.put(f"{base}{path}", params=params, timeout=30).raise_for_status()

    for path, mode, owner in sandbox_shape.hdfs_folders(layout.user, shape):
        put(path, op="MKDIRS", permission=mode)
        put(path, op="SETPERMISSION", permission=mode)
        if owner:
            put(path, op="SETOWNER", owner=owner, group=owner)


# -- the running sandbox -----------------------------------------------------------------------
def failover(layout: Layout, shape: Shape) -> tuple[str, str, float]:
    """Switch the active NameNode; (old, new, seconds until HDFS answers again)."""
    if not shape.ha:
        raise SandboxError("failover needs a sandbox started with --ha")
    get = getter(layout, shape)
    t0 = time.monotonic()
    old, new = sandbox_ha.failover(layout, get, admin_env(layout, shape))
    return old, new, time.monotonic() - t0


def cleanup(root: Path, state: Mapping[str, Any]) -> None:
    """Undo what a start added to the machine besides processes (hosts lines, addresses)."""
    if Shape.from_state(state).hosts and state.get("hosts"):
        sandbox_hosts.remove(state["hosts"], root)
