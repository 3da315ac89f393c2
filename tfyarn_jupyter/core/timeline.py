"""A task's timeline, as the panel draws it and ``RunResult`` reports it: pure.

Its spans come from YARN (the container's allocation and end) and from the task's own
events (when its process reported in, its stop). Its phases are when it reached each step
of its start (:data:`PHASES`), as the task reports them in its ``phases`` event, with the
start of training (``train_start``) and its first step: what a user waits for between
running the cell and seeing training go.

A task restarted inside the application (issue 25) has several containers: its
:func:`restarts` say when each was lost, why, when the next one started (the gap the
panel draws) and what steps the restart cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tfyarn_jupyter.protocol.causes import read_yarn

if TYPE_CHECKING:  # the reports it reads: state.py builds them and imports this module
    from tfyarn_jupyter.core.state import AppInfo, ContainerInfo

#: A task's start: its interpreter up, the TensorFlow cluster ready (addresses exchanged) and
#: TensorFlow imported (the two overlap: the import runs while the task waits for its
#: peers), the model built, a checkpoint restored, training started, the first step done.
#: A task reports those it goes through.
PHASES = ("interpreter", "cluster", "tensorflow", "model", "restored", "train_start", "first_step")


def task_times(
    container: ContainerInfo | None, ev: Mapping[str, Any], app: AppInfo, state: str
) -> dict[str, Any]:
    """A task's timeline in epoch ms: YARN's times where it has them, else the task's own
    events (a container's finish time is 0 once the application master has gone)."""

    def at(kind: str) -> float:
        t = ev.get(kind, {}).get("t")
        return float(t) * 1000 if isinstance(t, (int, float)) else 0.0

    allocated = container.start_time if container else 0.0
    running = at("container")
    end = (container.finish_time if container else 0.0) or at("stop")
    if not end and app.ended and (allocated or running) and state != "requested":
        end = app.finish_time  # killed with its application: it ran until the end
    return {
        "requested_time": app.start_time,
        "allocated_time": allocated or (running if running else 0.0),
        "running_time": running,
        "end_time": end,
    }


def task_phases(ev: Mapping[str, Any]) -> dict[str, float]:
    """The phases a task reported (epoch ms), in :data:`PHASES` order; ``train_start`` from
    its own event."""
    reported = dict(ev.get("phases") or {})
    if isinstance(ev.get("train_start", {}).get("t"), (int, float)):
        reported.setdefault("train_start", ev["train_start"]["t"])
    return {
        p: float(reported[p]) * 1000 for p in PHASES if isinstance(reported.get(p), (int, float))
    }


def seconds_from_start(phases: Mapping[str, float], start_ms: float) -> dict[str, float]:
    """The phases as seconds after ``start_ms`` (a container's start): what a result reports."""
    if not start_ms:
        return {}
    return {p: round((t - start_ms) / 1000, 2) for p, t in phases.items() if t >= start_ms}


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def container_order(c: ContainerInfo) -> tuple[int, float]:
    """Oldest first: skein numbers a replacement after the container it replaces; one not
    placed yet (no start time) is the newest."""
    return (c.instance, c.start_time or math.inf)


def containers_by_task(containers: Iterable[ContainerInfo]) -> dict[str, list[ContainerInfo]]:
    """Each task's containers, oldest first (:func:`container_order`)."""
    out: dict[str, list[ContainerInfo]] = {}
    for c in sorted(containers, key=container_order):
        out.setdefault(c.task, []).append(c)
    return out


def restarts(
    containers: Sequence[ContainerInfo], records: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each restart of one task inside the application, oldest first.

    From the restarted container's record (``restarts/<task>/<n>``: ``cause``, ``step``,
    ``resumed_step``), else from the lost container itself (the cause YARN's diagnostics
    give, as for an evaluator skein's master restarts): ``n``, ``cause``, ``exit_status``,
    ``step``, ``resumed_step``, ``steps_lost`` (None when unknown), and in epoch ms (0 when
    unknown) the lost container's start and end and the next one's start.
    """
    ordered = sorted(containers, key=container_order)
    by_n = {int(r["n"]): r for r in records if _int(r.get("n"))}
    out = []
    for n in range(1, max(len(ordered) - 1, max(by_n, default=0)) + 1):
        lost = ordered[n - 1] if n < len(ordered) else None
        rec = by_n.get(n, {})
        step, resumed = _int(rec.get("step")), _int(rec.get("resumed_step"))
        known = step is not None and resumed is not None
        recorded_at = float(rec["t"]) * 1000 if _int(rec.get("t")) else 0.0
        yarn_says = read_yarn(lost.exit_message)[0].value if lost else ""
        out.append({
            "n": n,
            "cause": str(rec.get("cause") or yarn_says),
            "exit_status": _int(rec.get("exit_status")),
            "step": step,
            "resumed_step": resumed,
            "steps_lost": max(0, step - resumed) if known else None,  # type: ignore[operator]
            "lost_start": lost.start_time if lost else 0.0,
            "lost_at": (lost.finish_time if lost else 0.0) or recorded_at,
            "restarted_at": ordered[n].start_time if n < len(ordered) else 0.0,
        })  # fmt: skip
    return out


def restart_fields(
    containers: Sequence[ContainerInfo], records: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A task's restart count, the latest restart's cause, the steps lost (summed over the
    restarts that say; None when none does) and the restarts themselves."""
    log = restarts(containers, records)
    lost = [r["steps_lost"] for r in log if r["steps_lost"] is not None]
    return {
        "restarts": len(log),
        "restart_cause": log[-1]["cause"] if log else "",
        "steps_lost": sum(lost) if lost else None,
        "restart_log": log,
    }
