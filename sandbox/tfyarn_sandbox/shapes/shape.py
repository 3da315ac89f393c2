"""The shape of a sandbox: which production features it has, and what follows from them.

The default sandbox is one host, simple authentication, one NameNode and
``hdfs://`` as the default filesystem. A shaped one adds any of: Kerberos
(``--kerberos``, :mod:`tfyarn_sandbox.shapes.kerberos`), two NameNodes behind a
nameservice and a viewfs mount table (``--ha``, ``--viewfs``,
:mod:`tfyarn_sandbox.shapes.ha`), and daemons at addresses and hostnames of
their own (``--hosts``, :mod:`tfyarn_sandbox.shapes.hosts`). This module
composes them: the ports, daemons, hosts and configuration folders of a shape,
as plain data, so every shape is tested without a cluster. Two options change
only YARN's configuration: ``--gpus N`` (``yarn.io/gpu`` on the gpu NodeManager)
and ``--preemption`` (queues ``low`` and ``high``, the preemption monitor).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.config import DAEMON_MAIN, DAEMONS, NODEMANAGERS, SHAPE_PORT_NAMES
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos
from tfyarn_sandbox.shapes import secure_io
from tfyarn_sandbox.site_xml import GPU_LABEL, Layout


@dataclasses.dataclass(frozen=True)
class Shape:
    """The options a sandbox was started with (all off: the default sandbox)."""

    kerberos: bool = False
    ha: bool = False
    viewfs: bool = False
    hosts: bool = False
    #: NodeManagers in a mount namespace where the client's Python is hidden (issue 14).
    nodes_without_python: bool = False
    #: ``yarn.io/gpu`` the gpu NodeManager offers (issue 24); 0: GPUs are only a node label.
    gpus: int = 0
    #: Queues ``low`` and ``high`` and the CapacityScheduler's preemption monitor (issue 25).
    preemption: bool = False

    @property
    def is_default(self) -> bool:
        return not any(dataclasses.astuple(self))

    def covers(self, wanted: Shape) -> bool:
        """Whether a sandbox of this shape can stand in for one of shape ``wanted``.

        Two options add to a sandbox without changing what a suite of the default shape
        sees: GPUs (a resource type on the gpu node) and ``--preemption`` (queues ``low``
        and ``high`` beside ``default`` and ``ml-gpu``, which keep their room for
        applications; the monitor takes nothing while no queue asks for its guarantee
        back). So a sandbox with either stands in for one without, and for one with GPUs
        only when it has as many (a suite that asks for GPUs counts them). Every other
        option must be the same: Kerberos, HA, viewfs, hosts and nodes without Python
        change how a client reaches the cluster or what a node has.
        """
        same = [f.name for f in dataclasses.fields(self) if f.name not in ("gpus", "preemption")]
        if any(getattr(self, name) != getattr(wanted, name) for name in same):
            return False
        if wanted.preemption and not self.preemption:
            return False
        return wanted.gpus in (0, self.gpus)

    def flags(self) -> list[str]:
        """The ``tfyarn-sandbox start`` options that make this shape (``--gpus=N`` for a count)."""
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            flag = f"--{f.name.replace('_', '-')}"
            if value is True:
                out.append(flag)
            elif value:
                out.append(f"{flag}={value}")
        return out

    def to_state(self) -> dict[str, bool | int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_state(cls, state: Mapping[str, Any] | None) -> Shape:
        """The shape a state file records (none recorded: the default).

        Each option is read back as its default's type: a yes/no, or the GPU count.
        """
        saved = (state or {}).get("shape") or {}
        defaults = dataclasses.asdict(cls())
        return cls(**{name: type(d)(saved.get(name) or d) for name, d in defaults.items()})


#: Each host of a ``--hosts`` sandbox and the ports it serves (``nn2`` only with ``--ha``).
ROLE_PORTS = {
    "nn1": ("namenode_rpc", "namenode_http"),
    "nn2": ("namenode2_rpc", "namenode2_http"),
    "dn": ("datanode", "datanode_http", "datanode_ipc"),
    "rm": ("rm", "rm_scheduler", "rm_tracker", "rm_admin", "rm_http"),
    "nm-cpu": ("nm_cpu", "nm_cpu_localizer", "nm_cpu_http"),
    "nm-gpu": ("nm_gpu", "nm_gpu_localizer", "nm_gpu_http"),
}
#: The host of each daemon.
DAEMON_ROLE = {
    "namenode": "nn1",
    "namenode2": "nn2",
    "datanode": "dn",
    "resourcemanager": "rm",
    "nodemanager-cpu": "nm-cpu",
    "nodemanager-gpu": "nm-gpu",
}
#: Where a Kerberized sandbox without ``--hosts`` puts every daemon: a name, so that
#: ``_HOST`` in principals and SPNEGO's ``HTTP/<host>`` resolve the same on both ends.
KERBEROS_HOST = "localhost"


def port_names(shape: Shape) -> tuple[str, ...]:
    """Every port the sandbox of ``shape`` listens on (the KDC's included)."""
    extra = {"namenode2_rpc": shape.ha, "namenode2_http": shape.ha, "kdc": shape.kerberos}
    return (*hadoop_conf.PORT_NAMES, *(n for n in SHAPE_PORT_NAMES if extra[n]))


def daemons(shape: Shape) -> tuple[str, ...]:
    """The Hadoop daemons of ``shape``, in start order (``namenode2``: the second NameNode)."""
    if not shape.ha:
        return DAEMONS
    return (DAEMONS[0], "namenode2", *DAEMONS[1:])


def main_class(name: str) -> str:
    """The Java main class of daemon ``name``."""
    return DAEMON_MAIN["namenode" if name == "namenode2" else name]


def roles(shape: Shape) -> tuple[str, ...]:
    return tuple(r for r in ROLE_PORTS if r != "nn2" or shape.ha)


def host_plan(shape: Shape, block: int) -> dict[str, dict[str, str]]:
    """Each role's hostname and loopback address, in block ``127.0.<block>.0/24``.

    The addresses start at ``.11``: Debian gives ``127.0.1.1`` to the machine's name.
    """
    return {
        role: {"name": f"{role}.s{block}.tfyarn.test", "address": f"127.0.{block}.{11 + i}"}
        for i, role in enumerate(roles(shape))
    }


def port_hosts(plan: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Port name to the hostname that serves it, for :attr:`Layout.hosts`."""
    return {port: plan[role]["name"] for role in plan for port in ROLE_PORTS[role]}


def default_host(shape: Shape) -> str:
    """The host of every daemon that has none of its own."""
    return KERBEROS_HOST if shape.kerberos else "127.0.0.1"


def daemon_conf_dir(layout: Layout, shape: Shape, name: str) -> Path:
    """The configuration folder daemon ``name`` runs with."""
    if name.startswith("nodemanager-"):
        return layout.nm_conf_dir(name.split("-", 1)[1])
    if shape.ha and name in ("namenode", "namenode2"):
        return layout.root / f"conf-{sandbox_ha.namenode_id(name)}"
    return layout.conf_dir


def default_fs(layout: Layout, shape: Shape) -> str:
    """What ``fs.defaultFS`` is in ``shape``."""
    hdfs = sandbox_ha.hdfs_uri() if shape.ha else layout.default_fs
    return sandbox_ha.viewfs_uri() if shape.viewfs else hdfs


def conf_folders(layout: Layout, shape: Shape) -> dict[Path, dict[str, dict[str, str]]]:
    """Every configuration folder of ``shape`` and the properties of each of its files.

    The default sandbox's folders, with each option's properties laid over them,
    with ``--ha`` one more folder per NameNode (its id and metadata folder), and with
    ``--gpus N`` a ``resource-types.xml`` in each folder and the gpu NodeManager's
    ``node-resources.xml``.
    """
    folders = _default_conf_folders(layout)
    common = folders[layout.conf_dir]
    hdfs_uri = sandbox_ha.hdfs_uri() if shape.ha else layout.default_fs
    common["core-site.xml"]["fs.defaultFS"] = hdfs_uri
    if shape.ha:
        common["hdfs-site.xml"] = sandbox_ha.ha_hdfs_site(common["hdfs-site.xml"], layout)
    if shape.viewfs:
        common["core-site.xml"].update(sandbox_ha.viewfs_core_site(hdfs_uri))
    if shape.preemption:  # before Kerberos, whose queue ACLs go on top
        common["yarn-site.xml"].update(hadoop_conf.preemption_site())
        common["capacity-scheduler.xml"] = hadoop_conf.preemption_queues(layout)
    if shape.kerberos:
        sandbox_kerberos.secure_files(common, layout)
    if shape.gpus:
        common["resource-types.xml"] = hadoop_conf.resource_types()
    for nm in NODEMANAGERS:
        nm_files = folders[layout.nm_conf_dir(nm)]
        yarn = nm_files["yarn-site.xml"]
        if shape.kerberos:
            yarn.update(sandbox_kerberos.yarn_site(layout))
            yarn.update(sandbox_kerberos.nodemanager_site(layout))
        folders[layout.nm_conf_dir(nm)] = {**common, "yarn-site.xml": yarn}
    if shape.gpus:
        gpu_nm = folders[layout.nm_conf_dir(GPU_LABEL)]
        gpu_nm["node-resources.xml"] = hadoop_conf.node_resources(shape.gpus)
    if shape.ha:
        for name in ("namenode", "namenode2"):
            nn = sandbox_ha.namenode_id(name)
            hdfs = {**common["hdfs-site.xml"], **sandbox_ha.namenode_site(layout, nn)}
            folders[daemon_conf_dir(layout, shape, name)] = {**common, "hdfs-site.xml": hdfs}
    return folders


def _default_conf_folders(layout: Layout) -> dict[Path, dict[str, dict[str, str]]]:
    """The default folders, each file its own dict (so overlays do not leak between them)."""
    return {
        d: {name: dict(props) for name, props in files.items()}
        for d, files in sandbox_conf.conf_folders(layout).items()
    }


def python_paths() -> list[Path]:
    """What ``--nodes-without-python`` hides from the NodeManagers: this client's venv and
    base prefix, and the system's Pythons (``/usr/lib/python3*``, ``/usr/bin/python3*``...)."""
    found = {Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix)}
    for pattern in ("/usr/lib/python3*", "/usr/local/lib/python3*", "/usr/bin/python3*",
                    "/usr/local/bin/python3*"):  # fmt: skip
        found.update(Path(os.path.realpath(p)) for p in glob.glob(pattern))
    # A folder inside another hidden folder is hidden with it.
    return sorted(p for p in found if p != Path("/") and not any(q in p.parents for q in found))


def hiding_prefix(paths: Sequence[Path]) -> list[str]:
    """A command prefix that runs a command in a new mount namespace where ``paths`` are
    hidden: an empty tmpfs over each folder, ``/dev/null`` over each file. The namespace
    ends with the command's last process, so the sandbox's stop removes it."""
    mounts = [
        f"mount -t tmpfs -o size=1m,mode=755 tfyarn-hidden {shlex.quote(str(p))}"
        if p.is_dir()
        else f"mount --bind /dev/null {shlex.quote(str(p))}"
        for p in paths
    ]
    script = " && ".join([*mounts, 'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]


def java_command(layout: Layout, java_home: Path, shape: Shape, name: str, *args: str) -> list[str]:
    """Daemon ``name``'s command line in ``shape``: its own folder, the realm's JVM settings,
    and on Kerberized NodeManagers the sandbox's ``SecureIOUtils`` first on the class path;
    with ``--nodes-without-python``, NodeManagers start where the client's Python is hidden."""
    opts = sandbox_kerberos.jvm_opts(layout.root) if shape.kerberos else []
    first = []
    if shape.kerberos and name.startswith("nodemanager-"):
        first.append(secure_io.classes_dir(layout.root))
    hide = []
    if shape.nodes_without_python and name.startswith("nodemanager-"):
        hide = hiding_prefix(python_paths())
    return hide + sandbox_conf.java_command(
        layout,
        java_home,
        "namenode" if name == "namenode2" else name,
        *args,
        conf=daemon_conf_dir(layout, shape, name),
        jvm_opts=opts,
        classpath=first,
    )


def hdfs_folders(user: str, shape: Shape) -> list[tuple[str, str, str | None]]:
    """(path, mode, owner) of each folder a shaped sandbox's HDFS starts with.

    The default sandbox's, ``/data`` (the viewfs mount table's third link), and a
    private home for each of the users ``env --user`` acts as.
    """
    folders: list[tuple[str, str, str | None]] = [
        ("/tmp", "1777", None),
        ("/tmp/logs", "1777", None),
        ("/user", "755", None),
        (f"/user/{user}", "755", None),
        ("/data", "1777", None),
    ]
    return folders + [(f"/user/{u}", "700", u) for u in sandbox_kerberos.USERS]
