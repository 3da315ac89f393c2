"""Watching a run: one poll is a fixed three calls, whatever the number of tasks.

Per poll: the application report (ResourceManager), the container list and
the whole key-value store (application master, one call each).
Node labels are read once and again only when a container lands on a node
not seen before. :class:`Poller` runs polls on a background thread for the
panel, about once a second, and stops when the run ends or it is closed.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import requests
import skein

from . import events as ev_protocol
from .events import Events
from .spec import TaskSpec
from .state import AppInfo, ContainerInfo, RunStatus, derive

#: Calls one poll makes while the application runs (for the benchmarks' tally).
CALLS_PER_POLL = 3


def _ms(value: datetime | None) -> float:
    return value.timestamp() * 1000 if value else 0.0


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def app_info(report: Any) -> AppInfo:
    return AppInfo(
        app_id=report.id,
        name=report.name or "",
        queue=report.queue or "",
        user=report.user or "",
        state=_name(report.state),
        final_status=_name(report.final_status),
        start_time=_ms(report.start_time),
        finish_time=_ms(report.finish_time),
        tracking_url=report.tracking_url or "",
        diagnostics=report.diagnostics or "",
    )


def container_info(c: Any) -> ContainerInfo:
    return ContainerInfo(
        task=f"{c.service_name}:{c.instance}",
        state=_name(c.state),
        container_id=c.yarn_container_id or "",
        node_http=c.yarn_node_http_address or "",
        start_time=_ms(c.start_time),
        finish_time=_ms(c.finish_time),
        exit_message=c.exit_message or "",
    )


class StatusSource:
    """The I/O behind :meth:`Run.status`: fetch, remember the last view, derive."""

    def __init__(self, client: skein.Client, app_id: str, task_specs: Mapping[str, TaskSpec]):
        self.client = client
        self.app_id = app_id
        self.task_specs = dict(task_specs)
        self.calls = 0
        self.last: RunStatus | None = None
        self.events = Events()
        self._containers: list[ContainerInfo] = []
        self._app_client: skein.ApplicationClient | None = None
        self._labels: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    @property
    def ended(self) -> bool:
        return self.last is not None and self.last.ended

    def restore(self, record: Mapping[str, Any]) -> None:
        """Load a finished run's final view from its event log."""
        from .state import TaskState

        st = record["status"]
        self.events = Events(tasks=dict(record.get("events", {}).get("tasks", {})),
                             metrics=list(st.get("metrics", [])))  # fmt: skip
        self.last = RunStatus(
            app=AppInfo(**st["app"]),
            tasks=[TaskState(**t) for t in st["tasks"]],
            pending=[],
            metrics=list(st.get("metrics", [])),
            failure=st.get("failure"),
            attempt=st.get("attempt", 0),
        )

    def _am(self) -> skein.ApplicationClient | None:
        if self._app_client is None:
            try:
                self._app_client = self.client.connect(self.app_id, wait=False)
            except (skein.exceptions.ApplicationNotRunningError, skein.exceptions.ConnectionError):
                return None
        return self._app_client

    def _refresh_labels(self) -> None:
        self.calls += 1
        self._labels = {n.http_address: list(n.labels) for n in self.client.get_nodes()}

    def poll(self) -> RunStatus:
        with self._lock:
            if self.last is not None and self.last.ended:
                return self.last
            self.calls += 1
            app = app_info(self.client.application_report(self.app_id))
            if app.state == "RUNNING":
                am = self._am()
                if am is not None:
                    try:
                        self.calls += 2
                        containers = am.get_containers(
                            states=["WAITING", "REQUESTED", "RUNNING", "SUCCEEDED", "FAILED",
                                    "KILLED"]
                        )  # fmt: skip
                        kv = am.kv.get_range()
                        self._containers = [container_info(c) for c in containers]
                        self.events = ev_protocol.parse(kv)
                        self._ack(am, self.events)
                    except (skein.exceptions.ConnectionError, skein.exceptions.SkeinError):
                        self._app_client = None  # the master went away: keep the last view
            if any(c.node_http and c.node_http not in self._labels for c in self._containers):
                self._refresh_labels()
            self.last = derive(app, self.task_specs, self._containers, self.events, self._labels)
            return self.last

    def _ack(self, am: skein.ApplicationClient, events: Events) -> None:
        """Tell ended tasks their last events were read (one call, only when needed)."""
        todo = events.unacked_stops()
        if todo:
            self.calls += 1
            am.kv.transaction(on_success=[skein.kv.put(ev_protocol.ack_key(t), b"1") for t in todo])
            events.acked.update(todo)

    # -- actions ---------------------------------------------------------------
    def heartbeat(self) -> None:
        am = self._am()
        if am is not None:
            with contextlib.suppress(skein.exceptions.SkeinError, skein.exceptions.ConnectionError):
                am.kv[ev_protocol.HEARTBEAT] = ev_protocol.encode()

    def mark_detached(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            am = self._am()
            if am is not None:
                am.kv[ev_protocol.DETACHED] = ev_protocol.encode()
                return
            time.sleep(0.5)

    def _container(self, task: str) -> ContainerInfo:
        for c in sorted(self._containers, key=lambda c: -c.start_time):
            if c.task == task:
                return c
        known = sorted({c.task for c in self._containers})
        raise KeyError(f"no container for task {task!r}; tasks: {', '.join(known) or 'none yet'}")

    def kill_task(self, task: str) -> None:
        ttype, _, index = task.partition(":")
        am = self._am()
        if am is None:
            raise RuntimeError(f"{self.app_id} is not running: nothing to kill")
        am.kill_container(f"{ttype}_{int(index)}")

    def logs(self, task: str | None, tail: int = 65536) -> dict[str, Any]:
        """The tail of one task's logs: ``{"source", "stdout", "stderr", "files"}``.

        ``files`` maps each log file of the container to its tail; ``stdout`` is
        skein's ``<service>.log`` and ``stderr`` the file the service script
        sends stderr to. Live from the NodeManager while the container runs,
        else from the logs YARN aggregated to HDFS (read with ``yarn logs``,
        which knows every aggregation format; a few seconds after the end).
        """
        if task is None:
            task = "chief:0"
        self.poll()
        c = self._container(task)
        user = self.last.app.user if self.last else ""
        if c.state == "RUNNING" and not self.ended and c.node_http:
            files = self._live(c, user, tail)
            source = "live"
        else:
            files = self._aggregated(c, user, tail)
            source = "aggregated"
        return split_streams(files, source, task.partition(":")[0])

    def _live(self, c: ContainerInfo, user: str, tail: int) -> dict[str, str]:
        base = f"http://{c.node_http}/ws/v1/node"
        params = {"user.name": user}
        resp = requests.get(f"{base}/containers/{c.container_id}/logs", params=params,
                            headers={"Accept": "application/json"}, timeout=10)  # fmt: skip
        resp.raise_for_status()
        names = [n for n in live_log_names(resp.json()) if n not in DEBUG_LOGS]
        files = {}
        for name in names:
            r = requests.get(f"{base}/containerlogs/{c.container_id}/{name}",
                             params={**params, "size": str(-tail)}, timeout=10)  # fmt: skip
            if r.ok:  # the NodeManager frames the file as `yarn logs` does
                files[name] = parse_yarn_logs(r.text).get(name, r.text)
            else:
                files[name] = f"(log unavailable: HTTP {r.status_code})"
        return files

    def _aggregated(self, c: ContainerInfo, user: str, tail: int) -> dict[str, str]:
        cmd = ["yarn", "logs", "-applicationId", self.app_id, "-containerId", c.container_id,
               "-size", str(-tail)] + (["-appOwner", user] if user else [])  # fmt: skip
        deadline = time.monotonic() + AGGREGATION_WAIT_S
        while True:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            files = parse_yarn_logs(proc.stdout)
            if files or time.monotonic() > deadline:
                break
            time.sleep(2)  # aggregation finishes a few seconds after the application
        if not files:
            why = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise RuntimeError(
                f"no logs of {c.container_id} yet ({' '.join(why) or 'yarn logs printed nothing'})"
            )
        return files


#: The NodeManager's own debugging files in a container's log folder: not the task's output.
DEBUG_LOGS = frozenset({"directory.info", "launch_container.sh"})

#: How long ``logs`` waits for YARN to finish aggregating an ended application's logs.
AGGREGATION_WAIT_S = 60.0


def live_log_names(listing: Any) -> list[str]:
    """File names in a NodeManager's ``/containers/<id>/logs`` answer (one or many dirs)."""
    entries = listing if isinstance(listing, list) else [listing]
    names: list[str] = []
    for entry in entries:
        info = entry.get("containerLogsInfo", entry) if isinstance(entry, dict) else {}
        files = info.get("containerLogInfo", []) if isinstance(info, dict) else []
        for f in files if isinstance(files, list) else [files]:
            name = f.get("fileName") if isinstance(f, dict) else None
            if name and name not in names:
                names.append(name)
    return names


def parse_yarn_logs(text: str) -> dict[str, str]:
    """``{file name: contents}`` from the output of ``yarn logs -containerId``."""
    files: dict[str, list[str]] = {}
    current: str | None = None
    in_contents = False
    for line in text.splitlines(keepends=True):
        if current is None:
            if line.startswith("LogType:"):
                current = line.split(":", 1)[1].strip()
                files.setdefault(current, [])
        elif not in_contents:
            in_contents = line.startswith("LogContents:")
        elif line.startswith("End of LogType:"):
            current, in_contents = None, False
        else:
            files[current].append(line)
    # yarn prints one blank line between a file's contents and its end marker.
    texts = {name: "".join(lines) for name, lines in files.items() if name not in DEBUG_LOGS}
    return {name: t[:-1] if t.endswith("\n") else t for name, t in texts.items()}


def split_streams(files: Mapping[str, str], source: str, service: str) -> dict[str, Any]:
    """The panel's view of a container's log files: stdout, stderr and all of them."""
    stdout = files.get(f"{service}.log", files.get("stdout", ""))
    return {"source": source, "stdout": stdout, "stderr": files.get("stderr", ""),
            "files": dict(files)}  # fmt: skip


def task_specs_of(client: skein.Client, app_id: str, report: Any) -> dict[str, TaskSpec]:
    """Recover a live run's topology from its application spec."""
    from .spec import NodeLabel

    am = client.connect(app_id, wait=False)
    spec = am.get_specification()
    return {
        name: TaskSpec(
            svc.resources.memory,
            svc.resources.vcores,
            svc.instances,
            NodeLabel.parse(svc.node_label or ""),
        )
        for name, svc in spec.services.items()
    }


class Poller:
    """Polls a run on a background thread and hands each status to ``callback``."""

    def __init__(
        self,
        poll: Callable[[], RunStatus],
        callback: Callable[[RunStatus], None],
        interval: float = 1.0,
        ended_interval: float = 5.0,
    ) -> None:
        self._poll = poll
        self._callback = callback
        self.interval = interval
        self.ended_interval = ended_interval
        self.polls = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tfyarn-poller", daemon=True)
        self._finalizer = weakref.finalize(self, self._stop.set)

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                st = self._poll()
                self.polls += 1
                self._callback(st)
            except Exception as exc:  # keep watching through a transient error
                self.errors.append(f"{type(exc).__name__}: {exc}")
                st = None
            if st is not None and st.ended:
                return
            self._stop.wait(self.interval)
