"""A real single-host Hadoop YARN + HDFS cluster, fetched and run by the project.

``tfyarn-sandbox start`` resolves Apache Hadoop's jars from Maven Central once
(``mvn dependency:copy-dependencies`` on the ``hadoop/pom.xml`` shipped with
this package) into ``~/.cache/tfyarn/hadoop-<version>/``, then starts a
NameNode, a DataNode, a ResourceManager and two NodeManagers (one unlabelled,
one in the exclusive ``gpu`` partition) as separate JVMs on loopback, each
with its own log. State (ports, pids) lives in one directory, so ``stop``
ends exactly the processes that ``start`` made.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import getpass
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
import requests

from . import hadoop_conf
from .hadoop_conf import GPU_LABEL, Layout

HADOOP_VERSION = "3.5.0"
NODEMANAGERS = ("cpu", GPU_LABEL)
DAEMONS = ("namenode", "datanode", "resourcemanager", "nodemanager-cpu", "nodemanager-gpu")
_MAIN = {
    "namenode": "org.apache.hadoop.hdfs.server.namenode.NameNode",
    "datanode": "org.apache.hadoop.hdfs.server.datanode.DataNode",
    "resourcemanager": "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
    "nodemanager-cpu": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
    "nodemanager-gpu": "org.apache.hadoop.yarn.server.nodemanager.NodeManager",
}
_HEAP = {
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
_YARN_CLI = {
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
_HDFS_CLI = {
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


def find_java_home() -> Path:
    """``JAVA_HOME`` if set, else the JDK of the ``java`` on ``PATH``."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return Path(env)
    java = shutil.which("java")
    if not java:
        raise SandboxError("no Java found: install a JDK 17 and set JAVA_HOME")
    return Path(os.path.realpath(java)).parent.parent


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def ensure_hadoop_jars(version: str = HADOOP_VERSION) -> Path:
    """Resolve the Hadoop jars from Maven Central once; return their folder."""
    home = cache_dir() / f"hadoop-{version}"
    lib = home / "lib"
    marker = home / ".complete"
    pom = Path(__file__).with_name("hadoop") / "pom.xml"
    # The marker holds the pom's digest, so a changed artifact list re-resolves.
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    if marker.exists() and marker.read_text() == digest:
        return lib
    with _locked(home / ".lock"):
        if marker.exists() and marker.read_text() == digest:
            return lib
        mvn = shutil.which("mvn")
        if not mvn:
            raise SandboxError("Maven (mvn) is needed once to fetch Hadoop's jars: install maven")
        staging = home / "lib.partial"
        shutil.rmtree(staging, ignore_errors=True)
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), f"-Dhadoop.version={version}",
            "dependency:copy-dependencies", f"-DoutputDirectory={staging}",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SandboxError(
                f"resolving Hadoop {version} with Maven failed:\n{proc.stdout[-3000:]}"
                f"{proc.stderr[-2000:]}"
            )
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
        marker.write_text(digest)
    return lib


def _port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _free_ports(n: int) -> list[int]:
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


def parse_ports(spec: str | None) -> dict[str, int]:
    """Parse ``"rm=8032,namenode_rpc=9000"`` into a port map, checking names."""
    out: dict[str, int] = {}
    for item in filter(None, (spec or "").split(",")):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in hadoop_conf.PORT_NAMES or not value.strip().isdigit():
            raise SandboxError(
                f"bad port setting {item!r}: use NAME=PORT with NAME one of "
                f"{', '.join(hadoop_conf.PORT_NAMES)}"
            )
        out[name] = int(value)
    return out


@dataclasses.dataclass
class Sandbox:
    """One sandbox cluster, rooted at ``root`` (see :func:`default_root`)."""

    root: Path = dataclasses.field(default_factory=default_root)
    fixed_ports: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root).absolute()
        if not self.fixed_ports:
            self.fixed_ports = parse_ports(os.environ.get("TFYARN_SANDBOX_PORTS"))

    # -- state -----------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    def _state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def layout(self) -> Layout:
        state = self._state()
        if state is None:
            raise SandboxError(f"no sandbox at {self.root}: run `tfyarn-sandbox start`")
        return Layout(self.root, Path(state["lib"]), state["ports"], state["user"])

    def env(self) -> dict[str, str]:
        """What a client needs to reach this sandbox (skein, the yarn/hdfs CLIs)."""
        layout = self.layout()
        java_home = self._state()["java_home"]  # type: ignore[index]
        path = os.environ.get("PATH", "")
        if str(self.bin_dir) not in path.split(os.pathsep):
            path = f"{self.bin_dir}{os.pathsep}{path}"
        return {
            "HADOOP_CONF_DIR": str(layout.conf_dir),
            "JAVA_HOME": java_home,
            "PATH": path,
            "TFYARN_SANDBOX_DIR": str(self.root),
        }

    # -- health ----------------------------------------------------------------
    def _pid_alive(self, name: str, pid: int) -> bool:
        try:
            proc = psutil.Process(pid)
            cmd = proc.cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return False
        return _MAIN[name] in cmd and any(str(self.root) in part for part in cmd)

    def _rm_nodes(self, layout: Layout) -> list[dict]:
        url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/nodes"
        resp = requests.get(url, timeout=5)
        resp.raise_for_status()
        return (resp.json().get("nodes") or {}).get("node") or []

    def _safemode_off(self, layout: Layout) -> bool:
        url = f"http://{layout.addr('namenode_http')}/jmx"
        qry = "Hadoop:service=NameNode,name=NameNodeInfo"
        beans = requests.get(url, params={"qry": qry}, timeout=5).json()["beans"]
        info = beans[0]
        return not info.get("Safemode") and len(json.loads(info["LiveNodes"])) >= 1

    def _nodes_ready(self, layout: Layout) -> bool:
        nodes = [n for n in self._rm_nodes(layout) if n.get("state") == "RUNNING"]
        labels = {n["id"].rsplit(":", 1)[1]: n.get("nodeLabels") or [] for n in nodes}
        want = {
            str(layout.ports["nm_cpu"]): [],
            str(layout.ports["nm_gpu"]): [GPU_LABEL],
        }
        return labels == want

    def status(self) -> dict:
        """Per daemon: pid and whether it runs; and whether the cluster is ready."""
        state = self._state()
        if state is None:
            return {"running": False, "daemons": {}, "ready": False, "root": str(self.root)}
        daemons = {
            name: {"pid": pid, "alive": self._pid_alive(name, pid)}
            for name, pid in state.get("pids", {}).items()
        }
        ready = False
        if daemons and all(d["alive"] for d in daemons.values()):
            layout = self.layout()
            try:
                ready = self._safemode_off(layout) and self._nodes_ready(layout)
            except (requests.RequestException, KeyError, IndexError, ValueError):
                ready = False
        return {
            "running": any(d["alive"] for d in daemons.values()),
            "ready": ready,
            "daemons": daemons,
            "root": str(self.root),
            "ports": state.get("ports", {}),
        }

    # -- start -----------------------------------------------------------------
    def _choose_ports(self, previous: Mapping[str, int]) -> dict[str, int]:
        for name, port in self.fixed_ports.items():
            if not _port_free(port):
                raise SandboxError(
                    f"port {port} ({name}) is already in use: free it, or pick another "
                    f"with TFYARN_SANDBOX_PORTS={name}=PORT (or --port {name}=PORT)"
                )
        reuse = {
            n: p
            for n, p in previous.items()
            if n in hadoop_conf.PORT_NAMES and n not in self.fixed_ports and _port_free(p)
        }
        missing = [
            n for n in hadoop_conf.PORT_NAMES if n not in self.fixed_ports and n not in reuse
        ]
        fresh = dict(zip(missing, _free_ports(len(missing)), strict=True))
        return {**reuse, **fresh, **self.fixed_ports}

    def _write_conf(self, layout: Layout) -> None:
        files = {
            "core-site.xml": hadoop_conf.core_site(layout),
            "hdfs-site.xml": hadoop_conf.hdfs_site(layout),
            "yarn-site.xml": hadoop_conf.yarn_site(layout),
            "capacity-scheduler.xml": hadoop_conf.capacity_scheduler(layout),
        }
        dirs = {layout.conf_dir: None, **{layout.nm_conf_dir(nm): nm for nm in NODEMANAGERS}}
        for d, nm in dirs.items():
            d.mkdir(parents=True, exist_ok=True)
            for fname, props in files.items():
                if nm is not None and fname == "yarn-site.xml":
                    props = hadoop_conf.nodemanager_site(layout, nm)
                (d / fname).write_bytes(hadoop_conf.to_xml(props))
            (d / "log4j.properties").write_text(hadoop_conf.LOG4J)
        # HDFS's HTTP servers (WebHDFS, JMX) look their web apps up on the
        # classpath; Maven's jars carry YARN's but not these, and empty ones do.
        for app in ("hdfs", "datanode"):
            (self.root / "web" / "webapps" / app).mkdir(parents=True, exist_ok=True)
        cli_log = hadoop_conf.LOG4J.replace("rootLogger=INFO", "rootLogger=WARN")
        (layout.conf_dir / "log4j-cli.properties").write_text(cli_log)

    def _write_launchers(self, layout: Layout, java_home: Path) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        for tool, classes in (("yarn", _YARN_CLI), ("hdfs", _HDFS_CLI)):
            # ApplicationCLI reads which of its commands it runs from argv[0].
            again = {
                sub: '; set -- "$sub" "$@"' for sub, c in classes.items() if "Application" in c
            }
            cases = "\n".join(
                f"  {sub}) class={cls}{again.get(sub, '')} ;;" for sub, cls in classes.items()
            )
            script = f"""#!/bin/sh
# {tool}: the tfyarn sandbox's launcher for Hadoop {HADOOP_VERSION}'s command-line classes.
: "${{HADOOP_CONF_DIR:={layout.conf_dir}}}"
export HADOOP_CONF_DIR
if [ $# -eq 0 ]; then echo "usage: {tool} {{{",".join(classes)}}} [args]" >&2; exit 2; fi
sub=$1; shift
case "$sub" in
{cases}
  *) echo "{tool}: unknown command '$sub' (known: {" ".join(classes)})" >&2; exit 2 ;;
esac
exec "{java_home}/bin/java" -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \\
  -Dlog4j.configuration=file:{layout.conf_dir}/log4j-cli.properties \\
  -cp "$HADOOP_CONF_DIR:{layout.lib}/*" "$class" "$@"
"""
            path = self.bin_dir / tool
            path.write_text(script)
            path.chmod(0o755)

    def _java_cmd(self, layout: Layout, java_home: Path, name: str, *args: str) -> list[str]:
        conf = layout.conf_dir
        if name.startswith("nodemanager-"):
            conf = layout.nm_conf_dir(name.split("-", 1)[1])
        return [
            str(java_home / "bin" / "java"),
            f"-Xmx{_HEAP[name]}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            *JAVA17_OPENS,
            f"-Dhadoop.log.dir={self.log_dir}",
            f"-Dyarn.log.dir={self.log_dir}",
            f"-Dhadoop.home.dir={self.root}",
            f"-Dhadoop.id.str={layout.user}",
            f"-Dlog4j.configuration=file:{conf}/log4j.properties",
            f"-Dtfyarn.sandbox={self.root}",
            "-cp",
            f"{conf}:{self.root / 'web'}:{layout.lib}/*",
            _MAIN[name],
            *args,
        ]

    def _spawn(self, layout: Layout, java_home: Path, name: str) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, JAVA_HOME=str(java_home), HADOOP_CONF_DIR=str(layout.conf_dir))
        env.pop("HADOOP_USER_NAME", None)
        with open(self.log_dir / f"{name}.log", "ab") as log:
            return subprocess.Popen(
                self._java_cmd(layout, java_home, name),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.root,
                start_new_session=True,
            )

    def _fail(self, name: str, why: str) -> SandboxError:
        log = self.log_dir / f"{name}.log"
        tail = ""
        with contextlib.suppress(OSError):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        return SandboxError(f"sandbox daemon {name} {why}; its log is {log}:\n{tail}")

    def _wait(self, what: str, check, procs: Mapping[str, subprocess.Popen], timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    raise self._fail(name, f"exited with code {proc.returncode}")
            try:
                if check():
                    return
            except (requests.RequestException, KeyError, IndexError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise self._fail(list(procs)[-1], f"did not become ready ({what})")
            time.sleep(0.25)

    def start(self, timeout: float = 180.0) -> dict[str, str]:
        """Start the sandbox, or reuse a healthy one; return its client environment."""
        with _locked(self.root / ".lock"):
            if self.status()["ready"]:
                return self.env()
            self._stop_processes()
            previous = (self._state() or {}).get("ports", {})
            ports = self._choose_ports(previous)
            lib = ensure_hadoop_jars()
            java_home = find_java_home()
            user = getpass.getuser()
            layout = Layout(self.root, lib, ports, user)
            self._write_conf(layout)
            self._write_launchers(layout, java_home)
            state: dict[str, Any] = {
                "ports": ports,
                "pids": {},
                "user": user,
                "lib": str(lib),
                "java_home": str(java_home),
                "hadoop_version": HADOOP_VERSION,
            }
            self.state_file.write_text(json.dumps(state, indent=1))
            procs: dict[str, subprocess.Popen] = {}

            def spawn(name: str) -> None:
                procs[name] = self._spawn(layout, java_home, name)
                state["pids"][name] = procs[name].pid
                self.state_file.write_text(json.dumps(state, indent=1))

            try:
                if not (self.root / "hdfs" / "name" / "current").exists():
                    self._format_namenode(layout, java_home)
                spawn("namenode")
                spawn("datanode")
                spawn("resourcemanager")
                self._wait("HDFS out of safe mode", lambda: self._safemode_off(layout), procs,
                           timeout)  # fmt: skip
                self._prepare_hdfs(layout)
                self._wait("ResourceManager up", lambda: self._rm_nodes(layout) is not None,
                           procs, timeout)  # fmt: skip
                self._ensure_cluster_label(layout)
                spawn("nodemanager-cpu")
                spawn("nodemanager-gpu")
                self._wait("both NodeManagers RUNNING with their labels",
                           lambda: self._nodes_ready(layout), procs, timeout)  # fmt: skip
            except BaseException:
                self._stop_processes()
                raise
            return self.env()

    def _format_namenode(self, layout: Layout, java_home: Path) -> None:
        cmd = self._java_cmd(layout, java_home, "namenode", "-format", "-nonInteractive", "-force")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / "namenode-format.log", "wb") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.root)
        if rc != 0:
            raise self._fail("namenode-format", f"failed with code {rc}")

    def _prepare_hdfs(self, layout: Layout) -> None:
        """Folders the cluster needs: /tmp, aggregated logs, the user's home."""
        from hdfs import InsecureClient

        client = InsecureClient(f"http://{layout.addr('namenode_http')}", user=layout.user)
        for path, mode in (("/tmp", "1777"), ("/tmp/logs", "1777"), ("/user", "755")):
            client.makedirs(path)
            client.set_permission(path, mode)
        home = f"/user/{layout.user}"
        client.makedirs(home)
        client.set_permission(home, "755")

    def _ensure_cluster_label(self, layout: Layout) -> None:
        url = f"http://{layout.addr('rm_http')}/ws/v1/cluster/get-node-labels"
        labels = requests.get(url, timeout=5).json() or {}
        items = labels.get("nodeLabelInfo") or []
        if isinstance(items, dict):
            items = [items]
        if any(i.get("name") == GPU_LABEL for i in items):
            return
        env = dict(os.environ, HADOOP_CONF_DIR=str(layout.conf_dir))
        proc = subprocess.run(
            [str(self.bin_dir / "yarn"), "rmadmin", "-addToClusterNodeLabels",
             f"{GPU_LABEL}(exclusive=true)"],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        if proc.returncode != 0:
            raise SandboxError(f"adding the node label {GPU_LABEL!r} failed: {proc.stderr[-2000:]}")

    # -- stop ------------------------------------------------------------------
    def _sandbox_processes(self) -> list[psutil.Process]:
        """Daemons and containers of this sandbox (by command line or working dir)."""
        mine = []
        root = str(self.root)
        for proc in psutil.process_iter(["cmdline", "cwd"]):
            if proc.pid == os.getpid():
                continue
            cmd = proc.info.get("cmdline") or []
            cwd = proc.info.get("cwd") or ""
            if f"-Dtfyarn.sandbox={root}" in cmd or cwd.startswith(root + os.sep + "nm" + os.sep):
                mine.append(proc)
        return mine

    def _stop_processes(self) -> None:
        state = self._state() or {}
        procs = []
        for name, pid in state.get("pids", {}).items():
            if self._pid_alive(name, pid):
                procs.append(psutil.Process(pid))
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=15)
        for proc in alive:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        # Containers run in their own sessions, so stopping a NodeManager can
        # leave them behind; end whatever still runs from the sandbox's dirs.
        leftovers = self._sandbox_processes()
        for proc in leftovers:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(leftovers, timeout=10)
        if state.get("pids"):
            state["pids"] = {}
            self.state_file.write_text(json.dumps(state, indent=1))

    def stop(self) -> None:
        """End this sandbox's daemons (by pid) and any container they left."""
        with _locked(self.root / ".lock"):
            self._stop_processes()

    @contextlib.contextmanager
    def daemon_stopped(self, name: str, timeout: float = 180.0) -> Iterator[None]:
        """Stop one daemon (SIGTERM, then SIGKILL) for the block, then start it again.

        For fault tests. The sandbox's lock is held throughout, so a concurrent
        :meth:`start` waits for the daemon to be back instead of restarting
        the whole cluster; the daemon is restarted even when the block fails.
        """
        if name not in DAEMONS:
            raise SandboxError(f"unknown daemon {name!r}: one of {', '.join(DAEMONS)}")
        with _locked(self.root / ".lock"):
            state = self._state()
            if state is None:
                raise SandboxError(f"no sandbox at {self.root}: run `tfyarn-sandbox start`")
            pid = state["pids"].get(name)
            if pid is None or not self._pid_alive(name, pid):
                raise SandboxError(f"sandbox daemon {name} is not running")
            proc = psutil.Process(pid)
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(psutil.TimeoutExpired):
                proc.wait(timeout=30)
            if proc.is_running():
                proc.kill()
                proc.wait(timeout=10)
            try:
                yield
            finally:
                layout = self.layout()
                java_home = Path(state["java_home"])
                spawned = self._spawn(layout, java_home, name)
                state["pids"][name] = spawned.pid
                self.state_file.write_text(json.dumps(state, indent=1))
                self._wait(
                    "all daemons back and both NodeManagers RUNNING with their labels",
                    lambda: self._safemode_off(layout) and self._nodes_ready(layout),
                    {name: spawned},
                    timeout,
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tfyarn-sandbox",
        description="A real single-host Hadoop YARN + HDFS cluster for tfyarn_jupyter.",
    )
    parser.add_argument("--dir", type=Path, default=None, help="sandbox folder")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="start (or reuse) the sandbox")
    p_start.add_argument(
        "--port", action="append", default=[], metavar="NAME=PORT", help="fix one port"
    )
    sub.add_parser("stop", help="stop the sandbox's daemons and containers")
    sub.add_parser("status", help="report each daemon and whether the cluster is ready")
    sub.add_parser("env", help="print the shell exports that point clients at the sandbox")
    p_logs = sub.add_parser("logs", help="print a daemon's log (or list them)")
    p_logs.add_argument("daemon", nargs="?", choices=DAEMONS)
    p_logs.add_argument("-n", type=int, default=100, help="lines from the end")
    args = parser.parse_args(argv)
    try:
        box = Sandbox(
            args.dir or default_root(),
            fixed_ports=parse_ports(",".join(getattr(args, "port", []))),
        )
        if args.cmd == "start":
            t0 = time.monotonic()
            box.start()
            print(f"sandbox ready in {time.monotonic() - t0:.1f}s at {box.root}", file=sys.stderr)
            print('point a shell at it with: eval "$(tfyarn-sandbox env)"', file=sys.stderr)
        elif args.cmd == "stop":
            box.stop()
        elif args.cmd == "status":
            st = box.status()
            for name, d in st["daemons"].items():
                print(f"{name:16} pid {d['pid']:>7}  {'running' if d['alive'] else 'DOWN'}")
            print(f"cluster: {'ready' if st['ready'] else 'NOT ready'} ({st['root']})")
            return 0 if st["ready"] else 1
        elif args.cmd == "env":
            for k, v in box.env().items():
                print(f"export {k}={_shquote(v)}")
        elif args.cmd == "logs":
            if args.daemon is None:
                for p in sorted(box.log_dir.glob("*.log")):
                    print(p)
            else:
                lines = (box.log_dir / f"{args.daemon}.log").read_text(errors="replace")
                print("\n".join(lines.splitlines()[-args.n :]))
    except SandboxError as exc:
        print(f"tfyarn-sandbox: {exc}", file=sys.stderr)
        return 1
    return 0


def _shquote(value: str) -> str:
    import shlex

    return shlex.quote(value)


if __name__ == "__main__":
    sys.exit(main())
