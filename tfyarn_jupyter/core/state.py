"""A run's state, derived from what YARN and the tasks report. Pure: no I/O.

The poller gathers three things per poll (the application report, skein's
container list, the events in the key-value store) and :func:`derive` turns
them into a :class:`RunStatus` the panel and ``Run.status()`` show.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skein.model import ApplicationState as AppState
from skein.model import ContainerState, FinalStatus

from tfyarn_jupyter.core.history import progress_view
from tfyarn_jupyter.core.memory import with_memory_levels
from tfyarn_jupyter.core.spec import TASK_TYPES, NodeLabel, TaskSpec, task_names
from tfyarn_jupyter.core.timeline import containers_by_task, restart_fields, task_phases, task_times
from tfyarn_jupyter.protocol.events import Events

#: YARN's application states in which nothing runs any more (skein's enums equal their names).
ENDED_APP = frozenset({AppState.FINISHED, AppState.FAILED, AppState.KILLED})
#: Before the application master runs: nothing of the run is placed yet.
STARTING_APP = frozenset({AppState.NEW, AppState.NEW_SAVING, AppState.SUBMITTED,
                          AppState.ACCEPTED})  # fmt: skip
SECRET_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "KEY")


def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(m in upper for m in SECRET_MARKERS)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment as it may be shown: secret-looking values masked."""
    return {k: ("***" if is_secret(k) else v) for k, v in env.items()}


@dataclasses.dataclass(frozen=True)
class ContainerInfo:
    """The parts of a skein container report the panel needs."""

    task: str
    state: str  # skein's: WAITING, REQUESTED, RUNNING, SUCCEEDED, FAILED, KILLED
    container_id: str = ""
    node_http: str = ""
    start_time: float = 0.0  # epoch ms
    finish_time: float = 0.0
    exit_message: str = ""
    #: skein's instance number: a replacement has the next one after the container it replaces.
    instance: int = 0


@dataclasses.dataclass(frozen=True)
class AppInfo:
    """The parts of YARN's application report the panel needs."""

    app_id: str
    name: str = ""
    queue: str = ""
    user: str = ""
    state: str = "NEW"
    final_status: str = "UNDEFINED"
    start_time: float = 0.0  # epoch ms
    finish_time: float = 0.0
    tracking_url: str = ""
    diagnostics: str = ""

    @property
    def ended(self) -> bool:
        return self.state in ENDED_APP


@dataclasses.dataclass
class TaskState:
    """One task as the panel shows it; times are epoch ms, 0 when unknown.

    ``requested_time`` (the run asked YARN), ``allocated_time`` (its container
    was given), ``running_time`` (its process reported in), ``end_time`` (its
    container finished, else its own stop event, else the run's end).
    ``start_time``/``finish_time`` are the container's span as before.
    """

    task: str
    type: str
    index: int
    state: str = "requested"
    node: str = ""
    gpu: bool = False
    container_id: str = ""
    start_time: float = 0.0  # epoch ms
    finish_time: float = 0.0
    exit_message: str = ""
    requested_time: float = 0.0
    allocated_time: float = 0.0
    running_time: float = 0.0
    end_time: float = 0.0
    memory_mb: int = 0
    vcores: int = 0
    #: ``yarn.io/gpu`` the task asked for (YARN counts and reserves them).
    gpus: int = 0
    #: When the task reached each phase of its start (:data:`.timeline.PHASES`), epoch ms.
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Restarts inside the application (0: never; it runs attempt ``restarts + 1``), the latest
    #: one's cause, the steps lost (None: unknown), each restart (:func:`.timeline.restarts`).
    restarts: int = 0
    restart_cause: str = ""
    steps_lost: int | None = None
    restart_log: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def duration_s(self) -> float:
        """Seconds from its container's allocation (else its process's start) to its end."""
        begin = self.allocated_time or self.running_time or self.start_time
        end = self.end_time or self.finish_time
        return max(0.0, (end - begin) / 1000) if begin and end else 0.0


#: The keys of a task's dict that :meth:`RunStatus.from_dict` reads back (not derived ones).
_TASK_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskState))


@dataclasses.dataclass(frozen=True)
class Failure:
    """The task whose failure ended a run ("" when YARN did not say), and why."""

    task: str
    traceback: str


@dataclasses.dataclass
class RunStatus:
    """One snapshot of a run: application, tasks, what is pending, metrics, failure."""

    app: AppInfo
    tasks: list[TaskState]
    pending: list[str]
    metrics: list[dict[str, Any]]
    failure: Failure | None
    attempt: int = 0
    #: Each trainer's latest progress as it reports it (``"chief:0"`` ->
    #: ``{"step", "steps_per_s", "loss", "t", ...}``).
    progress: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: ``{"message": ...}`` while tasks wait for containers, saying what and why; else None.
    capacity: dict[str, str] | None = None
    #: The tensorboard task's page through the ResourceManager's proxy, while it serves.
    tensorboard_url: str | None = None

    @property
    def ended(self) -> bool:
        return self.app.ended

    @property
    def succeeded(self) -> bool:
        return (
            self.app.state == AppState.FINISHED and self.app.final_status == FinalStatus.SUCCEEDED
        )

    def summary(self) -> dict[str, Any] | None:
        if not self.ended:
            return None
        start, end = self.app.start_time, self.app.finish_time
        killed = self.app.state == AppState.KILLED
        final = str(FinalStatus.KILLED) if killed else self.app.final_status
        return {
            "final_status": final,
            "duration_s": round((end - start) / 1000, 1) if start and end else 0.0,
            "tasks": {t.task: _task_summary(t) for t in self.tasks},
            "metrics": dict(self.metrics[-1]) if self.metrics else {},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunStatus:
        """The inverse of :meth:`to_dict` (``summary`` is derived, so not read)."""
        failure = d.get("failure")
        return cls(
            app=AppInfo(**d["app"]),
            tasks=[
                TaskState(**{k: v for k, v in t.items() if k in _TASK_FIELDS}) for t in d["tasks"]
            ],
            pending=list(d.get("pending", [])),
            metrics=list(d.get("metrics", [])),
            failure=Failure(**failure) if failure else None,
            attempt=d.get("attempt", 0),
            progress=dict(d.get("progress", {})),
            capacity=d.get("capacity"),
            tensorboard_url=d.get("tensorboard_url"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the widget's traits and the event log."""
        out = {
            "app": dataclasses.asdict(self.app),
            "tasks": [
                {**dataclasses.asdict(t), "duration_s": round(t.duration_s, 1)} for t in self.tasks
            ],
            "pending": list(self.pending),
            "metrics": [dict(m) for m in self.metrics],
            "failure": dataclasses.asdict(self.failure) if self.failure else None,
            "summary": self.summary(),
            "attempt": self.attempt,
            "progress": with_memory_levels(
                self.progress, {t.task: t.memory_mb for t in self.tasks}
            ),
            "tensorboard_url": self.tensorboard_url,
        }
        if self.capacity:
            out["capacity"] = dict(self.capacity)
        return out


def _task_summary(t: TaskState) -> dict[str, Any]:
    """A task in the run's summary: its state, duration, node and GPUs."""
    return {"state": t.state, "duration_s": round(t.duration_s, 1), "node": t.node, "gpus": t.gpus}


def _task_state(container: ContainerInfo | None, events: Mapping[str, Any], app: AppInfo) -> str:
    app_ended = app.ended
    if app.ended and app.final_status == FinalStatus.SUCCEEDED and "stop" in events:
        return "failed" if events["stop"].get("traceback") else "succeeded"
    if events.get("stop", {}).get("traceback"):
        # The task reported its failure (an exception, or the service script's report
        # of a killed process); its container may not show it before the app ends.
        return "failed"
    if container is None:
        return "killed" if app_ended else "requested"
    s = container.state.upper()
    if s in (ContainerState.WAITING, ContainerState.REQUESTED):
        return "killed" if app_ended else "requested"
    if s == ContainerState.RUNNING:
        if app_ended:
            return "killed"
        return "running" if "container" in events else "allocated"
    if s in (ContainerState.SUCCEEDED, ContainerState.FAILED):
        return s.lower()  # "succeeded", "failed"
    return "killed"


def derive(
    app: AppInfo,
    task_specs: Mapping[str, TaskSpec],
    containers: Iterable[ContainerInfo],
    events: Events,
    node_labels: Mapping[str, Sequence[str]],
    attempt: int = 0,
    history: Mapping[str, Sequence[Sequence[float]]] | None = None,
    capacity: str = "",
) -> RunStatus:
    """Combine one poll's reports into the run's state.

    ``node_labels`` maps a NodeManager's HTTP address to its labels. When a
    task was restarted, its latest container counts. ``history`` is each
    trainer's ``[step, loss]`` points kept across polls (the store holds only
    the latest); ``capacity`` the client's word on why tasks wait, if any.
    """
    mine = containers_by_task(containers)
    tasks = [
        task_state(name, task_specs, mine.get(name, []), events, app, node_labels)
        for name in task_names(task_specs)
    ]
    pending = pending_reasons(app, task_specs, tasks)
    waiting = capacity and pending and not app.ended
    return RunStatus(
        app=app,
        tasks=tasks,
        pending=pending,
        metrics=list(events.metrics),
        failure=first_failure(tasks, events, app),
        attempt=attempt,
        progress=progress_view(events.progress, history or {}, task_specs),
        capacity={"message": capacity} if waiting else None,
    )


def task_state(
    name: str,
    task_specs: Mapping[str, TaskSpec],
    containers: Sequence[ContainerInfo],
    events: Events,
    app: AppInfo,
    node_labels: Mapping[str, Sequence[str]],
) -> TaskState:
    """One task from its containers (oldest first: its latest counts, the others are its
    restarts) and its own events."""
    container, ev = (containers[-1] if containers else None), events.task(name)
    ttype, _, idx = name.partition(":")
    state = _task_state(container, ev, app)
    if state == "succeeded" and ev.get("stop", {}).get("traceback"):
        state = "failed"
    # The service script's report of a killed process names its exit status.
    killed_by = ev["stop"]["traceback"] if ev.get("stop", {}).get("exit_code", 0) > 1 else ""
    on_gpu_node = container and NodeLabel.GPU.value in node_labels.get(container.node_http, ())
    return TaskState(
        task=name,
        type=ttype,
        index=int(idx),
        state=state,
        node=container.node_http if container else "",
        gpu=bool(on_gpu_node),
        container_id=container.container_id if container else "",
        start_time=container.start_time if container else 0.0,
        finish_time=container.finish_time if container else 0.0,
        exit_message=killed_by or (container.exit_message if container else ""),
        memory_mb=task_specs[ttype].memory,
        vcores=task_specs[ttype].vcores,
        gpus=task_specs[ttype].gpus,
        **task_times(container, ev, app, state),
        phases=task_phases(ev),
        **restart_fields(containers, events.restarts.get(name, [])),
    )


def latest_containers(containers: Iterable[ContainerInfo]) -> dict[str, ContainerInfo]:
    """Each task's latest container (a restarted task has several)."""
    return {task: cs[-1] for task, cs in containers_by_task(containers).items()}


def pending_reasons(
    app: AppInfo, task_specs: Mapping[str, TaskSpec], tasks: Sequence[TaskState]
) -> list[str]:
    """Per task type still waiting for containers: how many are allocated, and for what."""
    if app.ended:
        return []
    if app.state in STARTING_APP:
        return [f"application {app.state.lower()}: waiting for the application master "
                f"on queue {app.queue or '?'}"]  # fmt: skip
    out = []
    for ttype in TASK_TYPES:
        spec = task_specs.get(ttype)
        if spec is None:
            continue
        mine = [t for t in tasks if t.type == ttype]
        waiting = [t for t in mine if t.state == "requested"]
        if not waiting:
            continue
        got = len(mine) - len(waiting)
        where = f"free '{spec.label.value}' capacity" if spec.label.value else "free capacity"
        out.append(
            f"{ttype}: {got} of {len(mine)} allocated; waiting for {where} on queue "
            f"{app.queue} ({spec.memory} MiB, {spec.vcores} vcores each)"
        )
    return out


def first_failure(tasks: Sequence[TaskState], events: Events, app: AppInfo) -> Failure | None:
    """The task whose failure ended the run (earliest stop with a traceback)."""
    failed = []
    for t in tasks:
        tb = events.traceback(t.task)
        if tb or t.state == "failed":
            at = events.task(t.task).get("stop", {}).get("t") or (t.finish_time / 1000) or 1e18
            failed.append((at, t.task, tb or t.exit_message))
    if failed:
        _, task, tb = min(failed)
        return Failure(task, tb)
    if app.final_status == FinalStatus.FAILED:
        # skein's master names the failed service ("Failure in service chief, ...") even
        # when the container's end was not seen (it died with its NodeManager).
        service = failed_service(app.diagnostics)
        named = [t.task for t in tasks if service and t.type == service]
        return Failure(named[0] if len(named) == 1 else "", app.diagnostics)
    return None


def failed_service(diagnostics: str) -> str:
    """The service skein's master says failed ("Failure in service chief, ..."), or ""."""
    return m.group(1) if (m := re.match(r"Failure in service (\S+?),", diagnostics)) else ""


def changes(prev: RunStatus | None, new: RunStatus) -> list[str]:
    """What a user should hear about between two snapshots: states, evaluations, the end."""
    out = []
    app = new.app
    if prev is None or prev.app.state != app.state or prev.app.app_id != app.app_id:
        url = f": {app.tracking_url}" if app.tracking_url and app.state == "RUNNING" else ""
        out.append(f"{app.app_id} {app.state}{url}")
    before = {t.task: t.state for t in prev.tasks} if prev else {}
    for t in new.tasks:
        if before.get(t.task, "requested") != t.state:
            where = f" on {t.node}" if t.node and t.state == "running" else ""
            out.append(f"{app.app_id} {t.task} {t.state}{where}")
    seen = {m.get("step") for m in prev.metrics} if prev else set()
    for m in new.metrics:
        if m.get("step") not in seen:
            shown = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in sorted(m.items()) if k not in ("t", "step"))  # fmt: skip
            out.append(f"{app.app_id} evaluation at step {m.get('step')}: {shown}")
    said = (prev.capacity or {}).get("message") if prev else None
    if new.capacity and new.capacity.get("message") != said:
        out.append(f"{app.app_id} waiting: {new.capacity['message']}")
    if new.ended and not (prev and prev.ended):
        final = (new.summary() or {}).get("final_status", app.final_status)
        why = f" ({new.failure.task or 'application'} failed)" if new.failure else ""
        out.append(f"{app.app_id} ended {final}{why}")
    return out
