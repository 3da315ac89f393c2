"""What a sandbox is made of, without running it: daemons, ports, files and commands.

The daemons and their JVM settings, the port map (parsed from
``TFYARN_SANDBOX_PORTS``, reused or freshly allocated), the Hadoop
configuration folders (rendered by :mod:`tfyarn_sandbox.site_xml`), the
``yarn``/``hdfs`` launcher scripts and each daemon's ``java`` command line.
Nothing here starts a process, so it is tested without Java or a cluster.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

from tfyarn_sandbox import site_xml as hadoop_conf
from tfyarn_sandbox.site_xml import GPU_LABEL, Layout

HADOOP_VERSION = "3.5.0"
NODEMANAGERS = ("cpu", GPU_LABEL)
DAEMONS = ("namenode", "datanode", "resourcemanager", "nodemanager-cpu", "nodemanager-gpu")
#: Each daemon's Java main class.
DAEMON_MAIN = {
    "namenode": "org.apache.hadoop.hdfs.server.namenode.NameNode",
    "datanode": "org.apache.hadoop.hdfs.server.datanode.DataNode",
    "resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
    "nodemanager-cpu": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
    "nodemanager-gpu": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
}
#: Each daemon's maximum heap (``-Xmx``).
DAEMON_HEAP = {
    "namenode": "384m",
    "datanode": "256m",
    "resourcemanager": "512m",
    "nodemanager-cpu": "320m",
    "nodemanager-gpu": "320m",
}
# What Hadoop's own scripts add on Java 17 so its reflection keeps working.
JAVA17_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "java.util.zip",
        "sun.nio.ch",
        "sun.nio.cs",
        "sun.security.util",
        "sun.security.x509",
        "sun.net.dns",
        "sun.net.util",
    )
]
#: The Hadoop command-line classes the ``yarn`` and ``hdfs`` launchers expose.
YARN_CLI = {
    "classpath": "org.apache.hadoop.util.Classpath",
    "rmadmin": "org.apache.hadoop.yarn.client.cli.RMAdminCLI",
    "application": "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
    "applicationattempt": "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
    "container": "org.apache.hadoop.yarn.client.cli.ApplicationCLI",
    "logs": "org.apache.hadoop.yarn.client.cli.LogsCLI",
    "node": "org.apache.hadoop.yarn.client.cli.NodeCLI",
    "queue": "org.apache.hadoop.yarn.client.cli.QueueCLI",
    "version": "org.apache.hadoop.util.VersionInfo",
}
#: Ports only some sandbox shapes have (see :mod:`tfyarn_sandbox.shapes.shape`).
SHAPE_PORT_NAMES = ("namenode2_rpc", "namenode2_http", "kdc")
HDFS_CLI = {
    "classpath": "org.apache.hadoop.util.Classpath",
    "dfs": "org.apache.hadoop.fs.FsShell",
    "dfsadmin": "org.apache.hadoop.hdfs.tools.DFSAdmin",
    "getconf": "org.apache.hadoop.hdfs.tools.GetConf",
    "version": "org.apache.hadoop.util.VersionInfo",
}


class SandboxError(RuntimeError):
    """The sandbox could not be fetched, started or reached; the message says why."""


def cache_dir() -> Path:
    return Path(os.environ.get("TFYARN_CACHE", Path.home() / ".cache" / "tfyarn"))


def default_root() -> Path:
    return Path(os.environ.get("TFYARN_SANDBOX_DIR", cache_dir() / "sandbox"))


def log_dir(root: Path) -> Path:
    """Where each daemon of the sandbox at ``root`` writes ``<daemon>.log``."""
    return root / "logs"


def bin_dir(root: Path) -> Path:
    """The sandbox's ``yarn`` and ``hdfs`` launchers (put on a client's ``PATH``)."""
    return root / "bin"


# -- ports ---------------------------------------------------------------------
def parse_ports(spec: str | None) -> dict[str, int]:
    """Parse ``"rm=8032,namenode_rpc=9000"`` into a port map, checking names."""
    out: dict[str, int] = {}
    known = (*hadoop_conf.PORT_NAMES, *SHAPE_PORT_NAMES)
    for item in filter(None, (spec or "").split(",")):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in known or not value.strip().isdigit():
            raise SandboxError(
                f"bad port setting {item!r}: use NAME=PORT with NAME one of {', '.join(known)}"
            )
        out[name] = int(value)
    return out


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports the kernel reports free on loopback right now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def choose_ports(
    fixed: Mapping[str, int],
    previous: Mapping[str, int],
    names: Sequence[str] = hadoop_conf.PORT_NAMES,
) -> dict[str, int]:
    """Every port of ``names`` mapped: the fixed ones, else the previous run's if free, else new.

    Reusing the previous ports keeps a restarted sandbox where its clients'
    configuration already points; a fixed port that is taken is an error.
    """
    for name, port in fixed.items():
        if not port_free(port):
            raise SandboxError(
                f"port {port} ({name}) is already in use: free it, or pick another "
                f"with TFYARN_SANDBOX_PORTS={name}=PORT (or --port {name}=PORT)"
            )
    reuse = {n: p for n, p in previous.items() if n in names and n not in fixed and port_free(p)}
    missing = [n for n in names if n not in fixed and n not in reuse]
    fresh = dict(zip(missing, free_ports(len(missing)), strict=True))
    return {**reuse, **fresh, **fixed}


# -- files -----------------------------------------------------------------------
def conf_folders(layout: Layout) -> dict[Path, dict[str, dict[str, str]]]:
    """Each configuration folder (the client's, each NodeManager's) and its files' properties."""
    files = {
        "core-site.xml": hadoop_conf.core_site(layout),
        "hdfs-site.xml": hadoop_conf.hdfs_site(layout),
        "yarn-site.xml": hadoop_conf.yarn_site(layout),
        "capacity-scheduler.xml": hadoop_conf.capacity_scheduler(layout),
    }
    folders = {layout.conf_dir: files}
    for nm in NODEMANAGERS:
        folders[layout.nm_conf_dir(nm)] = {
            **files,
            "yarn-site.xml": hadoop_conf.nodemanager_site(layout, nm),
        }
    return folders


def recovery_state(root: Path) -> list[Path]:
    """What the ResourceManager and NodeManagers of the sandbox at ``root`` recover from."""
    nms = [hadoop_conf.nm_recovery_dir(root, nm) for nm in NODEMANAGERS]
    return [hadoop_conf.rm_state_store(root), *nms]


def forget_recovery_state(root: Path) -> None:
    """Remove :func:`recovery_state`, so a whole sandbox starts with no application.

    A daemon restarted alone recovers; after a stop every container is gone, and
    applications read back from the state store would only fail one by one.
    """
    for path in recovery_state(root):
        shutil.rmtree(path, ignore_errors=True)


def write_conf(layout: Layout) -> None:
    """The client's and each NodeManager's configuration folder, and the web app stubs."""
    write_folders(layout, conf_folders(layout))


def write_folders(layout: Layout, folders: Mapping[Path, Mapping[str, dict[str, str]]]) -> None:
    """Render ``folders`` (see :func:`conf_folders`), a log4j file in each, the web app stubs."""
    for d, files in folders.items():
        d.mkdir(parents=True, exist_ok=True)
        for fname, props in files.items():
            (d / fname).write_bytes(hadoop_conf.to_xml(props))
        (d / "log4j.properties").write_text(hadoop_conf.LOG4J)
    # HDFS's HTTP servers (WebHDFS, JMX) look their web apps up on the
    # classpath; Maven's jars carry YARN's but not these, and empty ones do.
    for app in ("hdfs", "datanode"):
        (layout.root / "web" / "webapps" / app).mkdir(parents=True, exist_ok=True)
    cli_log = hadoop_conf.LOG4J.replace("rootLogger=INFO", "rootLogger=WARN")
    (layout.conf_dir / "log4j-cli.properties").write_text(cli_log)


def launcher_script(
    tool: str,
    classes: Mapping[str, str],
    layout: Layout,
    java_home: Path,
    jvm_opts: Sequence[str] = (),
) -> str:
    """A ``/bin/sh`` script running ``tool SUBCOMMAND ARGS`` as the matching Hadoop class."""
    opts = "".join(f"{o} " for o in jvm_opts)
    # ApplicationCLI reads which of its commands it runs from argv[0].
    again = {sub: '; set -- "$sub" "$@"' for sub, c in classes.items() if "Application" in c}
    cases = "\n".join(
        f"  {sub}) class={cls}{again.get(sub, '')} ;;" for sub, cls in classes.items()
    )
    return f"""#!/bin/sh
# {tool}: the tfyarn sandbox's launcher for Hadoop {HADOOP_VERSION}'s command-line classes.
: "${{HADOOP_CONF_DIR:={layout.conf_dir}}}"
export HADOOP_CONF_DIR
if [ $# -eq 0 ]; then echo "usage: {tool} {{{",".join(classes)}}} [args]" >&2; exit 2; fi
sub=$1; shift
case "$sub" in
{cases}
  *) echo "{tool}: unknown command '$sub' (known: {" ".join(classes)})" >&2; exit 2 ;;
esac
exec "{java_home}/bin/java" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC {opts}\\
  -Dlog4j.configuration=file:{layout.conf_dir}/log4j-cli.properties \\
  -cp "$HADOOP_CONF_DIR:{layout.lib}/*" "$class" "$@"
"""


def write_launchers(
    layout: Layout,
    java_home: Path,
    jvm_opts: Sequence[str] = (),
    more_hdfs: Mapping[str, str] | None = None,
) -> None:
    """The executable ``yarn`` and ``hdfs`` scripts in the sandbox's ``bin`` folder.

    ``jvm_opts`` go on every command's ``java`` line; ``more_hdfs`` adds ``hdfs``
    subcommands (such as ``haadmin`` for two NameNodes).
    """
    folder = bin_dir(layout.root)
    folder.mkdir(parents=True, exist_ok=True)
    for tool, classes in (("yarn", YARN_CLI), ("hdfs", {**HDFS_CLI, **(more_hdfs or {})})):
        path = folder / tool
        path.write_text(launcher_script(tool, classes, layout, java_home, jvm_opts))
        path.chmod(0o755)


def tmp_dir(root: Path) -> Path:
    """The daemons' temporary folder (``java.io.tmpdir``, ``hadoop.tmp.dir``)."""
    return root / "tmp"


def java_command(
    layout: Layout,
    java_home: Path,
    name: str,
    *args: str,
    conf: Path | None = None,
    jvm_opts: Sequence[str] = (),
    classpath: Sequence[Path] = (),
) -> list[str]:
    """The command line of daemon ``name`` (one of :data:`DAEMONS`), with extra ``args``.

    ``-Dtfyarn.sandbox=<root>`` marks the process as this sandbox's, which is
    how a stop finds it again. The JVM's temporary files (Jetty's web app folders, the
    native LevelDB library) go to ``<root>/tmp`` and it keeps no ``hsperfdata`` file, so a
    daemon leaves nothing in the machine's ``/tmp``. ``conf`` replaces the daemon's configuration
    folder, ``jvm_opts`` add JVM settings and ``classpath`` folders go first on the
    class path (all three for the sandbox's shapes).
    """
    if conf is None:
        conf = layout.conf_dir
        if name.startswith("nodemanager-"):
            conf = layout.nm_conf_dir(name.split("-", 1)[1])
    return [
        str(java_home / "bin" / "java"),
        f"-Xmx{DAEMON_HEAP[name]}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        *JAVA17_OPENS,
        *jvm_opts,
        f"-Dhadoop.log.dir={log_dir(layout.root)}",
        f"-Dyarn.log.dir={log_dir(layout.root)}",
        f"-Dhadoop.home.dir={layout.root}",
        f"-Djava.io.tmpdir={tmp_dir(layout.root)}",
        "-XX:-UsePerfData",
        f"-Dhadoop.id.str={layout.user}",
        f"-Dlog4j.configuration=file:{conf}/log4j.properties",
        f"-Dtfyarn.sandbox={layout.root}",
        "-cp",
        ":".join([*map(str, classpath), f"{conf}:{layout.root / 'web'}:{layout.lib}/*"]),
        DAEMON_MAIN[name],
        *args,
    ]
