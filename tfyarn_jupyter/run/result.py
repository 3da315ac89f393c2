"""What a run leaves: its result (tf-yarn's ``Metrics`` fields included), failure, event log.

A failure before any report from the failed task (:func:`unreported_failure`) is told
with the last error line of its stderr (:func:`with_error_line`), read once by the poll
that sees the end (:mod:`tfyarn_jupyter.run.polling`).

The event log is the run's history (states, times, tracebacks, metrics,
progress) kept on HDFS, readable by its owner only, so that ``attach`` can
show a finished run and nothing is lost when the application is gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.core.state import Failure, RunStatus, failed_service
from tfyarn_jupyter.core.timeline import seconds_from_start
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol.events import Events


class RunFailed(RuntimeError):
    """A run ended without success; carries the failing task and its remote traceback."""

    def __init__(self, message: str, *, task: str = "", traceback: str = "", status=None):
        super().__init__(message)
        self.task = task
        self.traceback = traceback
        self.status = status


def _td(seconds: float | None) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds else None


@dataclasses.dataclass
class RunResult:
    """What a finished run reports: per-task status and durations, metrics, where logs are.

    It also answers to tf-yarn's ``Metrics`` fields (``total_training_duration``,
    ``total_eval_duration``, ``container_duration``, ``train_eval_time_per_node``),
    so code written against tf-yarn's result reads it unchanged.
    """

    app_id: str
    final_status: str
    tasks: dict[str, dict[str, Any]]
    metrics: dict[str, Any]
    training_time_s: float
    eval_time_s: float
    duration_s: float
    attempts: list[str]
    logs: str
    #: Seconds each trainer spent training (from its own train_start to train_stop).
    training_time_s_per_task: dict[str, float] = dataclasses.field(default_factory=dict)
    #: Seconds from each task's container start to each phase of its start
    #: (``core.timeline.PHASES``: interpreter, TensorFlow imported, cluster, ..., first step).
    phases_s_per_task: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    #: Each new attempt and why (a preempted container, a failed task...): see ``Run.restarts``.
    restarts: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: Each task's restarts inside the application (the same YARN application), oldest
    #: first: ``{"n", "cause", "exit_status", "step", "resumed_step", "steps_lost"}``
    #: (``steps_lost`` is ``step - resumed_step``, None when either is unknown).
    task_restarts: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)

    @property
    def total_training_duration(self) -> timedelta | None:
        return _td(self.training_time_s)

    @property
    def total_eval_duration(self) -> timedelta | None:
        return _td(self.eval_time_s)

    @property
    def container_duration(self) -> dict[str, timedelta | None]:
        return {t: _td(d.get("duration_s")) for t, d in self.tasks.items()}

    @property
    def train_eval_time_per_node(self) -> dict[str, timedelta | None]:
        return {t: _td(s) for t, s in self.training_time_s_per_task.items()}

    def __repr__(self) -> str:
        return (
            f"RunResult(app_id={self.app_id!r}, final_status={self.final_status!r}, "
            f"metrics={self.metrics!r}, duration_s={self.duration_s})"
        )


#: What a result keeps of each restart inside the application (the rest is the panel's).
RESTART_FIELDS = ("n", "cause", "exit_status", "step", "resumed_step", "steps_lost")


def task_restarts(st: RunStatus) -> dict[str, list[dict[str, Any]]]:
    """Each restarted task's restarts inside the application, as :class:`RunResult` has them."""
    return {
        t.task: [{k: r.get(k) for k in RESTART_FIELDS} for r in t.restart_log]
        for t in st.tasks
        if t.restart_log
    }


def span(events: Events, task: str, start: str, stop: str) -> float:
    """Seconds between two of a task's own events, 0 when either is missing."""
    d = events.task(task)
    return round(d[stop]["t"] - d[start]["t"], 2) if start in d and stop in d else 0.0


def make_result(
    st: RunStatus,
    events: Events,
    attempts: Sequence[str],
    restarts: Sequence[Mapping[str, Any]] = (),
) -> RunResult:
    summary = st.summary() or {}
    trainers = [t.task for t in st.tasks if t.type in ("chief", "worker")]
    per_task = {t: span(events, t, "train_start", "train_stop") for t in trainers}
    first = "chief:0" if "chief:0" in per_task else (trainers[0] if trainers else "chief:0")
    return RunResult(
        app_id=st.app.app_id,
        final_status=summary.get("final_status", st.app.final_status),
        tasks=summary.get("tasks", {}),
        metrics=dict(st.metrics[-1]) if st.metrics else {},
        training_time_s=per_task.get(first, 0.0),
        eval_time_s=span(events, "evaluator:0", "eval_start", "eval_stop"),
        duration_s=summary.get("duration_s", 0.0),
        attempts=list(attempts),
        logs=f"yarn logs -applicationId {st.app.app_id}",
        training_time_s_per_task={t: s for t, s in per_task.items() if s},
        restarts=[dict(r) for r in restarts],
        task_restarts=task_restarts(st),
        phases_s_per_task={
            t.task: seconds_from_start(t.phases, t.allocated_time or t.running_time)
            for t in st.tasks
            if t.phases
        },
    )


def failure_of(st: RunStatus, app_id: str) -> RunFailed:
    """The exception ``wait`` raises for a run that ended without success."""
    task = st.failure.task if st.failure else ""
    tb = (st.failure.traceback if st.failure else "") or st.app.diagnostics
    where = f" in task {task}" if task else ""
    return RunFailed(
        f"{app_id} ended {st.app.state}/{st.app.final_status}{where}:\n{tb}",
        task=task,
        traceback=tb,
        status=st,
    )


def unreported_failure(st: RunStatus, events: Events) -> str | None:
    """The failed task whose logs say why, when the run failed before it reported anything.

    A task with no ``container`` event never ran tfyarn's task code that far (a custom
    task module, an environment that does not import, the service script's own
    failure), so the failure holds only skein's "see logs": its stderr has the reason.
    When YARN named the failed service but not the instance, its first such task.
    """
    if not st.ended or st.failure is None:
        return None
    if st.failure.task:
        named = [st.failure.task]
    else:
        service = failed_service(st.app.diagnostics)
        named = [t.task for t in st.tasks if service and t.type == service]
    return next((t for t in named if "container" not in events.task(t)), None)


def with_error_line(failure: Failure, task: str, line: str) -> Failure:
    """``failure`` quoting the last error line of ``task``'s stderr instead of skein's "see
    logs" (other words of YARN's, or the service script's exit report, kept after it)."""
    text = f"{task} ended before reporting to tfyarn; the last error in its stderr:\n{line}"
    if failure.traceback and "see logs for more information" not in failure.traceback:
        text += f"\n{failure.traceback}"
    return Failure(failure.task, text)


def event_log_path(app_id: str) -> str:
    return f"{filesystem.home()}/.tfyarn/runs/{app_id}.json"


def write_event_log(
    st: RunStatus,
    task_specs: Mapping[str, TaskSpec],
    events: Events,
    attempts: Sequence[str],
    env: Mapping[str, str],
) -> None:
    """Keep the run's history on HDFS, owner-only (a failure to write never fails the run)."""
    record = {
        "version": 1,
        "status": st.to_dict(),
        "task_specs": {t: s.to_dict() for t, s in task_specs.items()},
        "events": {"tasks": events.tasks},
        "attempts": list(attempts),
        "env": dict(env),
    }
    with contextlib.suppress(Exception):
        filesystem.write_bytes(
            event_log_path(st.app.app_id), json.dumps(record).encode(), permission="600"
        )


def read_event_log(app_id: str) -> dict[str, Any] | None:
    try:
        return json.loads(filesystem.read_bytes(event_log_path(app_id)))
    except filesystem.HdfsError:
        return None
