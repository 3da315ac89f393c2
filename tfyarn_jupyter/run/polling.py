"""Reading a run's state from YARN: one poll is a fixed three calls, whatever its size.

Per poll: the application report (ResourceManager), the container list and
the whole key-value store (application master, one call each). Node labels
are read once, and again only when a container lands on a node not seen
before. :class:`StatusSource` only reads; the one write the protocol needs
(acknowledging ended tasks, so they may exit) is :meth:`StatusSource.acknowledge`,
which the run's driver step calls, as it calls :meth:`StatusSource.publish_capacity`.

While tasks wait for containers, a poll also reads the queue's figures (at
most every :data:`CAPACITY_INTERVAL_S`) to say what is pending and why
(``RunStatus.capacity``). Each trainer's loss history is kept here across
polls (:class:`~.history.History`): the store holds only the latest figures.

Each restart of a task inside the application is logged once, by the poll that first
sees it, on the ``tfyarn_jupyter`` logger (:func:`restart_line`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import skein
from skein.model import ApplicationState, ContainerState

from tfyarn_jupyter.core.history import History
from tfyarn_jupyter.core.spec import NodeLabel, TaskSpec
from tfyarn_jupyter.core.state import (
    STARTING_APP,
    AppInfo,
    ContainerInfo,
    RunStatus,
    TaskState,
    derive,
    latest_containers,
)
from tfyarn_jupyter.hadoop import capacity as queue_capacity
from tfyarn_jupyter.protocol import events as protocol
from tfyarn_jupyter.protocol.events import Events
from tfyarn_jupyter.run import logs as task_logs
from tfyarn_jupyter.run.result import unreported_failure, with_error_line
from tfyarn_jupyter.run.rm_calls import BoundedCall

logger = logging.getLogger("tfyarn_jupyter")

#: Calls one poll makes while the application runs (for the benchmarks' tally).
CALLS_PER_POLL = 3

_ALL_CONTAINER_STATES = list(ContainerState)
#: The least time between two readings of the queue's figures while tasks wait.
CAPACITY_INTERVAL_S = 10.0


def _ms(value: datetime | None) -> float:
    return value.timestamp() * 1000 if value else 0.0


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))


def app_info(report: Any) -> AppInfo:
    """The panel's view of skein's ``ApplicationReport``."""
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


def container_info(c: Any, instances: int = 0, failed: Sequence[Any] = ()) -> ContainerInfo:
    """The panel's view of skein's ``Container``: its task from :func:`task_index`."""
    index = task_index(c.instance, instances, failed) if instances > 0 else c.instance
    return ContainerInfo(
        task=f"{c.service_name}:{index}",
        state=_name(c.state),
        container_id=c.yarn_container_id or "",
        node_http=c.yarn_node_http_address or "",
        start_time=_ms(c.start_time),
        finish_time=_ms(c.finish_time),
        exit_message=c.exit_message or "",
        instance=c.instance,
    )


def failed_in_order(containers: Iterable[Any]) -> list[Any]:
    """A service's FAILED containers in the order they ended: skein replaced them in it."""
    failed = [c for c in containers if _name(c.state) == "FAILED"]
    return sorted(failed, key=lambda c: (_ms(c.finish_time) or math.inf, c.instance))


def task_index(instance: int, instances: int, failed: Sequence[Any]) -> int:
    """The task a container of a service of ``instances`` stands for: skein starts the
    service's ``k``-th replacement (instance ``instances + k``) in place of its ``k``-th
    FAILED container (``failed``: :func:`failed_in_order`), so it is that container's task;
    ``instance % instances`` where the list does not tell. The container side reads its own
    task by the same rule (``container.regroup.slot_of``)."""
    while instance >= instances:
        k = instance - instances
        if k >= len(failed) or failed[k].instance >= instance:
            return instance % instances
        instance = failed[k].instance
    return instance


def restart_line(app_id: str, task: TaskState, restart: Mapping[str, Any]) -> str:
    """What the log says of one restart: the task, its attempt, why, and what it cost."""
    n = int(restart["n"])
    why = str(restart.get("cause") or "lost")
    if restart.get("exit_status") is not None:
        why += f" (exit status {restart['exit_status']})"
    step, resumed = restart.get("step"), restart.get("resumed_step")
    if restart.get("steps_lost") is not None:
        why += f"; resumed at step {resumed}, {restart['steps_lost']} steps lost"
    elif step is not None:
        why += f" at step {step}"
    return f"{app_id} {task.task} restarted in the application (attempt {n + 1}): {why}"


def task_specs_of(client: skein.Client, app_id: str) -> dict[str, TaskSpec]:
    """Recover a live run's topology from its application spec."""
    spec = client.connect(app_id, wait=False).get_specification()
    return {
        name: TaskSpec(
            svc.resources.memory,
            svc.resources.vcores,
            svc.instances,
            label=NodeLabel.parse(svc.node_label or ""),
        )
        for name, svc in spec.services.items()
    }


def waiting_tasks(st: RunStatus, task_specs: Mapping[str, TaskSpec]) -> list[tuple[str, TaskSpec]]:
    """What waits for a container: the application master before it runs, else the tasks
    still requested."""
    if st.app.state in STARTING_APP:
        master = TaskSpec(queue_capacity.AM_MEMORY_MB, queue_capacity.AM_VCORES)
        return [("the application master", master)]
    return [(t.task, task_specs[t.type]) for t in st.tasks
            if t.state == "requested" and t.type in task_specs]  # fmt: skip


#: The dashboard the panel's TensorBoard link opens (TensorBoard's own route name).
TENSORBOARD_DASHBOARD = "timeseries"


def tensorboard_url(app: AppInfo, events: protocol.Events) -> str | None:
    """The tensorboard task's proxied page while it serves (it publishes it in its start).

    With the application's UI ACLs on, the proxy lets only the run's users in: on a
    cluster without Kerberos (simple HTTP authentication) ``user.name`` says who
    asks, and the ResourceManager keeps it in a cookie for TensorBoard's own requests.
    The link opens the time series (the run's scalars): without a dashboard in its
    fragment, TensorBoard shows the first one with data when the page loads, early in a
    run the Graphs one (an Estimator writes its graph before its first summary), and
    keeps it in the address across reloads.
    """
    tb = events.task("tensorboard:0")
    url = tb.get("start", {}).get("url")
    if app.ended or "stop" in tb or not isinstance(url, str):
        return None
    if app.user and "user.name=" not in url:
        url += ("&" if "?" in url else "?") + urlencode({"user.name": app.user})
    if "#" not in url:
        url += "#" + TENSORBOARD_DASHBOARD
    return url


class StatusSource:
    """One attempt's state as YARN and its tasks report it: fetch, remember the last, derive."""

    def __init__(self, client: skein.Client, app_id: str, task_specs: Mapping[str, TaskSpec]):
        self.client = client
        self.app_id = app_id
        self.task_specs = dict(task_specs)
        self.last: RunStatus | None = None
        self.events = Events()
        self._containers: list[ContainerInfo] = []
        self._app_client: skein.ApplicationClient | None = None
        self._labels: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self.history = History()
        #: Why tasks wait ("" when none does), its reading time, and what the store was told.
        self.capacity = ""
        self._capacity_at = -CAPACITY_INTERVAL_S
        self._capacity_published = ""
        #: The restarts already logged, as (task, n).
        self._restarts_logged: set[tuple[str, int]] = set()
        #: YARN's report of the application, waited for a few seconds at most.
        self.report = BoundedCall(lambda: self.client.application_report(self.app_id))

    @property
    def ended(self) -> bool:
        return self.last is not None and self.last.ended

    def restore(self, record: Mapping[str, Any]) -> None:
        """Load a finished run's final view from its event log."""
        st = record["status"]
        self.events = Events(tasks=dict(record.get("events", {}).get("tasks", {})),
                             metrics=list(st.get("metrics", [])))  # fmt: skip
        self.history.seed(st.get("progress", {}))
        self.last = RunStatus.from_dict({**st, "pending": []})

    def _am(self) -> skein.ApplicationClient | None:
        if self._app_client is None:
            try:
                self._app_client = self.client.connect(self.app_id, wait=False)
            except (skein.exceptions.ApplicationNotRunningError, skein.exceptions.ConnectionError):
                return None
        return self._app_client

    def poll(self) -> RunStatus:
        """A fresh snapshot; after the end, the last one (the master and its store are gone)."""
        with self._lock:
            if self.last is not None and self.last.ended:
                return self.last
            report = self.report.get()
            if report is None and self.last is None:
                raise ConnectionError(self.report.message())
            # Without the ResourceManager, its last word stands and the master speaks alone.
            app = app_info(report) if report is not None else self.last.app  # type: ignore[union-attr]
            if app.state == ApplicationState.RUNNING:
                self._read_master(connect=report is not None)
            missing = any(c.node_http and c.node_http not in self._labels for c in self._containers)
            if report is not None and missing:
                self._labels = {n.http_address: list(n.labels) for n in self.client.get_nodes()}
                # A node the ResourceManager no longer lists has no labels to find: once.
                self._labels.update({c.node_http: [] for c in self._containers
                                     if c.node_http not in self._labels})  # fmt: skip
            st = derive(app, self.task_specs, self._containers, self.events, self._labels,
                        history=self.history.points, capacity=self.capacity)  # fmt: skip
            if report is not None:
                self._explain_waiting(st)
            st.tensorboard_url = tensorboard_url(app, self.events)
            self._quote_error_line(st)
            self._log_restarts(st)
            self.last = st
            return self.last

    def _log_restarts(self, st: RunStatus) -> None:
        """Log each restart inside the application once, as this poll first sees it."""
        for t in st.tasks:
            for r in t.restart_log:
                if (t.task, r["n"]) not in self._restarts_logged:
                    self._restarts_logged.add((t.task, r["n"]))
                    logger.info("%s", restart_line(st.app.app_id, t, r))

    def _quote_error_line(self, st: RunStatus) -> None:
        """A run that failed before the failed task reported: say its stderr's last error
        line instead of skein's "see logs" (read once, bounded; unchanged if unreadable)."""
        task = unreported_failure(st, self.events)
        if task is None or st.failure is None:
            return
        try:
            container = self.container(task)
        except KeyError:  # never placed: no log to read
            return
        line = task_logs.error_line_of(self.app_id, container, st.app.user)
        if line:
            st.failure = with_error_line(st.failure, task, line)

    def _explain_waiting(self, st: RunStatus) -> None:
        """Say what waits for containers and why (the queue's figures, read now and then)."""
        if st.ended or not st.pending:
            self.capacity, st.capacity = "", None
            return
        if time.monotonic() - self._capacity_at < CAPACITY_INTERVAL_S:
            return
        self._capacity_at = time.monotonic()
        queue = st.app.queue or "default"  # YARN reports its path: root.default
        try:
            limits = self.queue_limits(queue)
        except Exception:  # the figures are a help, never a reason to stop watching
            limits = {}
        leaf = queue.rsplit(".", 1)[-1]  # as the user named it (--queue)
        message = queue_capacity.pending_message(leaf, waiting_tasks(st, self.task_specs), limits)
        self.capacity = message
        st.capacity = {"message": message} if message else None

    def _read_master(self, connect: bool = True) -> None:
        """The containers and the store, from the application master (``connect``: may ask
        the ResourceManager where the master is, when not connected yet)."""
        am = self._am() if connect or self._app_client is not None else None
        if am is None:
            return
        try:
            containers = am.get_containers(states=_ALL_CONTAINER_STATES)
            kv = am.kv.get_range()
        except (skein.exceptions.ConnectionError, skein.exceptions.SkeinError):
            self._app_client = None  # the master went away: keep the last view
            return
        failed = {s: failed_in_order(c for c in containers if c.service_name == s)
                  for s in {c.service_name for c in containers}}  # fmt: skip
        self._containers = [container_info(c, self._instances(c), failed[c.service_name])
                            for c in containers]  # fmt: skip
        self.events = protocol.parse(kv)
        self.history.observe(self.events.progress)

    def _instances(self, c: Any) -> int:
        spec = self.task_specs.get(c.service_name)
        return spec.instances if spec is not None else 0

    # -- the protocol's writes, and actions ---------------------------------------------
    def acknowledge(self) -> None:
        """Tell ended tasks their last events were read (one call, only when needed)."""
        todo = [] if self.ended else self.events.unacked_stops()  # ended: the tasks are gone
        am = self._am() if todo else None
        if am is None:
            return
        with contextlib.suppress(skein.exceptions.ConnectionError, skein.exceptions.SkeinError):
            am.kv.transaction(on_success=[skein.kv.put(protocol.ack_key(t), b"1") for t in todo])
            self.events.acked.update(todo)

    def queue_limits(self, queue: str) -> dict[str, queue_capacity.Limit]:
        """The queue's figures per partition (the ResourceManager's; a few calls)."""
        from tfyarn_jupyter.hadoop.resourcemanager import queue_limits

        return queue_limits(self.client, queue)

    def publish_capacity(self) -> None:
        """Tell the tasks why their peers wait (their peer-timeout message names it)."""
        if self.ended or self.capacity == self._capacity_published:
            return
        am = self._am()
        if am is None:
            return
        with contextlib.suppress(skein.exceptions.ConnectionError, skein.exceptions.SkeinError):
            am.kv[protocol.CAPACITY] = protocol.encode({"message": self.capacity})
            self._capacity_published = self.capacity

    def heartbeat(self) -> bool:
        """Tell the tasks the client is here; whether the write landed."""
        am = self._am()
        if am is not None:
            with contextlib.suppress(skein.exceptions.SkeinError, skein.exceptions.ConnectionError):
                am.kv[protocol.HEARTBEAT] = protocol.encode()
                return True
        return False

    def mark_detached(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            am = self._am()
            if am is not None:
                am.kv[protocol.DETACHED] = protocol.encode()
                return
            time.sleep(0.5)

    def container(self, task: str) -> ContainerInfo:
        """The latest container of ``task`` (``"worker:1"``) seen so far."""
        latest = latest_containers(self._containers)
        if task in latest:
            return latest[task]
        known = ", ".join(sorted(latest)) or "none yet"
        raise KeyError(f"no container for task {task!r}; tasks: {known}")

    def kill_task(self, task: str) -> None:
        ttype, _, index = task.partition(":")
        am = self._am()
        if am is None:
            raise RuntimeError(f"{self.app_id} is not running: nothing to kill")
        # A task restarted inside the application runs in a later instance of its service.
        latest = latest_containers(self._containers).get(task)
        am.kill_container(f"{ttype}_{latest.instance if latest else int(index)}")

    def logs(self, task: str | None, tail: int = 65536) -> task_logs.TaskLogs:
        """The tail of one task's logs: live while its container runs, else aggregated."""
        task = task or "chief:0"
        self.poll()
        c = self.container(task)
        user = self.last.app.user if self.last else ""
        if c.state == ContainerState.RUNNING and not self.ended and c.node_http:
            return task_logs.split_streams(
                task_logs.live(c, user, tail), "live", task.partition(":")[0]
            )
        files = task_logs.aggregated(self.app_id, c, user, tail)
        return task_logs.split_streams(files, "aggregated", task.partition(":")[0])
