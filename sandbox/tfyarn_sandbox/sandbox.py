"""A real single-host Hadoop YARN + HDFS cluster, fetched and run by the project.

``tfyarn-sandbox start`` resolves Apache Hadoop's jars from Maven Central once
(``mvn dependency:copy-dependencies`` on the ``pom.xml`` shipped with
this package) into ``~/.cache/tfyarn/hadoop-<version>/``, then starts a
NameNode, a DataNode, a ResourceManager and two NodeManagers (one unlabelled,
one in the exclusive ``gpu`` partition) as separate JVMs on loopback, each
with its own log. State (ports, pids) lives in one directory, so ``stop``
ends exactly the processes that ``start`` made.

This module is the :class:`Sandbox`; what
the sandbox is made of is in :mod:`tfyarn_sandbox.config`, the jars and
JDK in :mod:`tfyarn_sandbox.jars`, and the probes of its running
daemons in :mod:`tfyarn_sandbox.daemons`. ``start --kerberos``, ``--ha``,
``--viewfs`` and ``--hosts`` make sandboxes shaped like production clusters
(:mod:`tfyarn_sandbox.shapes.shape`, started by :mod:`tfyarn_sandbox.shapes.boot`);
the command line is :mod:`tfyarn_sandbox.cli`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import getpass
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psutil
import requests

from tfyarn_sandbox import config as sandbox_conf
from tfyarn_sandbox import daemons as sandbox_daemons
from tfyarn_sandbox.config import DAEMONS, HADOOP_VERSION, SandboxError, default_root, parse_ports
from tfyarn_sandbox.daemons import (
    ensure_cluster_label,
    nodes_ready,
    prepare_hdfs,
    rm_nodes,
    safemode_off,
)
from tfyarn_sandbox.jars import ensure_hadoop_jars, find_java_home, locked
from tfyarn_sandbox.shapes import boot as sandbox_shaped
from tfyarn_sandbox.shapes import shape as sandbox_shape
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import Layout


@dataclasses.dataclass
class Sandbox:
    """One sandbox cluster, rooted at ``root`` (see :func:`default_root`)."""

    root: Path = dataclasses.field(default_factory=default_root)
    fixed_ports: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: The shape ``start`` makes; None: the one the state records (else the default).
    shape: Shape | None = None

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
        return sandbox_conf.log_dir(self.root)

    @property
    def bin_dir(self) -> Path:
        return sandbox_conf.bin_dir(self.root)

    def _state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def _save_state(self, state: Mapping[str, Any]) -> None:
        self.state_file.write_text(json.dumps(state, indent=1))

    def current_shape(self) -> Shape:
        """The shape the sandbox was last started with (the default if never)."""
        return Shape.from_state(self._state())

    def layout(self) -> Layout:
        state = self._state()
        if state is None:
            raise SandboxError(f"no sandbox at {self.root}: run `tfyarn-sandbox start`")
        if "shape" in state:
            return sandbox_shaped.layout_of(self.root, state)
        return Layout(self.root, Path(state["lib"]), state["ports"], state["user"])

    def unset_vars(self, user: str | None = None) -> list[str]:
        """What a client must unset besides :meth:`env`: a simple identity under Kerberos,
        or (on a shaped sandbox) one that ``env --user`` set before."""
        shape = self.current_shape()
        drop = shape.kerberos or (user is None and not shape.is_default)
        return ["HADOOP_USER_NAME"] if drop else []

    def env(self, user: str | None = None) -> dict[str, str]:
        """What a client needs to reach this sandbox (skein, the yarn/hdfs CLIs).

        ``user``: whom the client is, with a fresh ticket from its keytab on a
        Kerberized sandbox (default: the sandbox's user), else ``HADOOP_USER_NAME``.
        """
        base = self._base_env()
        if user is None and "shape" not in (self._state() or {}):
            return base
        return sandbox_shaped.env(self.layout(), self.current_shape(), base, user)

    def _base_env(self) -> dict[str, str]:
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
        main = None if name in DAEMONS else sandbox_shaped.daemon_main(name)
        return sandbox_daemons.pid_alive(self.root, name, pid, main)

    def _sandbox_processes(self) -> list[psutil.Process]:
        """Daemons and containers of this sandbox (by command line or working dir)."""
        return sandbox_daemons.sandbox_processes(self.root)

    def _ready(self, layout: Layout) -> bool:
        shape = self.current_shape()
        if not shape.is_default:
            return sandbox_shaped.ready(layout, shape)
        return safemode_off(layout) and nodes_ready(layout)

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
                ready = self._ready(layout)
            except (requests.RequestException, KeyError, IndexError, ValueError):
                ready = False
        return {
            "running": any(d["alive"] for d in daemons.values()),
            "ready": ready,
            "daemons": daemons,
            "root": str(self.root),
            "ports": state.get("ports", {}),
            "shape": Shape.from_state(state).flags(),
        }

    # -- start -----------------------------------------------------------------
    def _spawn(self, layout: Layout, java_home: Path, name: str) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        sandbox_conf.tmp_dir(layout.root).mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, JAVA_HOME=str(java_home), HADOOP_CONF_DIR=str(layout.conf_dir))
        env.pop("HADOOP_USER_NAME", None)
        env.pop("KRB5CCNAME", None)
        shape = self.current_shape()
        if shape.is_default:
            cmd = sandbox_conf.java_command(layout, java_home, name)
        else:
            cmd = sandbox_shape.java_command(layout, java_home, shape, name)
        with open(self.log_dir / f"{name}.log", "ab") as log:
            return subprocess.Popen(
                cmd,
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

    def _wait(
        self,
        what: str,
        check: Callable[[], bool],
        procs: Mapping[str, subprocess.Popen],
        timeout: float,
    ) -> None:
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
        with locked(self.root / ".lock"):
            shape = self._shape_to_start()
            if self.status()["ready"]:
                return self.env()
            self._stop_processes()
            sandbox_conf.forget_recovery_state(self.root)
            try:
                if shape.is_default:
                    layout, java_home, state = self._configure()
                    self._boot(layout, java_home, state, timeout)
                else:
                    layout, java_home, state = sandbox_shaped.configure(self, shape)
                    sandbox_shaped.boot(self, layout, java_home, state, timeout)
            except BaseException:
                self._stop_processes()
                raise
            return self.env()

    def _shape_to_start(self) -> Shape:
        """The requested shape, which must be the recorded one if the sandbox has a state."""
        state = self._state()
        if self.shape is None or state is None:
            return self.shape or self.current_shape()
        recorded = self.current_shape()
        if self.shape != recorded:
            was = " ".join(recorded.flags()) or "no options"
            raise SandboxError(
                f"the sandbox at {self.root} was made with {was}: stop it and remove the "
                "folder, or use another TFYARN_SANDBOX_DIR"
            )
        return recorded

    def _configure(self) -> tuple[Layout, Path, dict[str, Any]]:
        """Ports, jars, JDK, configuration and launchers; the state file, with no pids yet."""
        previous = (self._state() or {}).get("ports", {})
        ports = sandbox_conf.choose_ports(self.fixed_ports, previous)
        lib = ensure_hadoop_jars()
        java_home = find_java_home()
        user = getpass.getuser()
        layout = Layout(self.root, lib, ports, user)
        sandbox_conf.write_conf(layout)
        sandbox_conf.write_launchers(layout, java_home)
        state: dict[str, Any] = {
            "ports": ports,
            "pids": {},
            "user": user,
            "lib": str(lib),
            "java_home": str(java_home),
            "hadoop_version": HADOOP_VERSION,
        }
        self.state_file.write_text(json.dumps(state, indent=1))
        return layout, java_home, state

    def _boot(self, layout: Layout, java_home: Path, state: dict[str, Any], timeout: float) -> None:
        """Start the daemons in order, each stage once the one before it is ready.

        Every pid goes into the state file as soon as it exists, so a stop
        (or a failed start's cleanup) finds all of them.
        """
        procs: dict[str, subprocess.Popen] = {}

        def spawn(name: str) -> None:
            procs[name] = self._spawn(layout, java_home, name)
            state["pids"][name] = procs[name].pid
            self.state_file.write_text(json.dumps(state, indent=1))

        sandbox_shaped.format_namenode(self, layout, java_home, Shape())
        spawn("namenode")
        spawn("datanode")
        spawn("resourcemanager")
        self._wait("HDFS out of safe mode", lambda: safemode_off(layout), procs, timeout)
        prepare_hdfs(layout)
        self._wait("ResourceManager up", lambda: rm_nodes(layout) is not None, procs, timeout)
        ensure_cluster_label(layout)
        spawn("nodemanager-cpu")
        spawn("nodemanager-gpu")
        nms_ready = "both NodeManagers RUNNING with their labels"
        self._wait(nms_ready, lambda: nodes_ready(layout), procs, timeout)

    # -- stop ------------------------------------------------------------------
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
        sandbox_shaped.cleanup(self.root, state)

    def failover(self) -> tuple[str, str, float]:
        """Switch the active NameNode of an ``--ha`` sandbox: (old, new, seconds taken)."""
        return sandbox_shaped.failover(self.layout(), self.current_shape())

    def stop(self, discard_data: bool = False) -> None:
        """End this sandbox's daemons (by pid) and any container they left.

        With ``discard_data``, also remove its HDFS blocks and NodeManager caches (the
        environment, once in HDFS and twice per NodeManager: about 12 GB), keeping its
        logs for a failure's post-mortem; the next start formats HDFS afresh.
        """
        with locked(self.root / ".lock"):
            self._stop_processes()
            if discard_data:
                shutil.rmtree(self.root / "hdfs", ignore_errors=True)
                for local in (self.root / "nm").glob("*/local"):
                    shutil.rmtree(local, ignore_errors=True)

    def restart(self, name: str, timeout: float = 180.0) -> tuple[float, float]:
        """Restart daemon ``name`` alone (see :meth:`daemon_stopped`): the seconds it took
        to stop, and the seconds from a stop request until the cluster was ready again."""
        t0 = time.monotonic()
        with self.daemon_stopped(name, timeout):
            stopped = time.monotonic() - t0
        return stopped, time.monotonic() - t0

    @contextlib.contextmanager
    def daemon_stopped(self, name: str, timeout: float = 180.0) -> Iterator[None]:
        """Stop one daemon (SIGTERM, then SIGKILL) for the block, then start it again.

        For fault tests and ``tfyarn-sandbox restart``: the ResourceManager and the
        NodeManagers recover their state when they come back (see
        :func:`tfyarn_sandbox.site_xml.rm_recovery`). The sandbox's lock is held
        throughout, so a concurrent :meth:`start` waits for the daemon to be back
        instead of restarting the whole cluster; the daemon is restarted even when
        the block fails, and the block ends once it listens and the cluster is ready.
        """
        daemons = sandbox_shape.daemons(self.current_shape())
        if name not in daemons:
            raise SandboxError(f"unknown daemon {name!r}: one of {', '.join(daemons)}")
        with locked(self.root / ".lock"):
            state = self._state()
            if state is None:
                raise SandboxError(f"no sandbox at {self.root}: run `tfyarn-sandbox start`")
            pid = state["pids"].get(name)
            if pid is None or not self._pid_alive(name, pid):
                raise SandboxError(f"sandbox daemon {name} is not running")
            sandbox_daemons.terminate(psutil.Process(pid))
            try:
                yield
            finally:
                layout = self.layout()
                java_home = Path(state["java_home"])
                spawned = self._spawn(layout, java_home, name)
                state["pids"][name] = spawned.pid
                self.state_file.write_text(json.dumps(state, indent=1))
                sandbox_shaped.restarted(self, layout, name, spawned, timeout)
                self._wait(
                    f"{name} listening, both NodeManagers RUNNING with their labels",
                    lambda: sandbox_daemons.web_listening(layout, name) and self._ready(layout),
                    {name: spawned},
                    timeout,
                )
