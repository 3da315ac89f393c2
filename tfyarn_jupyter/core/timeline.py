"""A task's timeline, as the panel draws it and ``RunResult`` reports it: pure.

Its spans come from YARN (the container's allocation and end) and from the task's own
events (when its process reported in, its stop). Its phases are when it reached each step
of its start (:data:`PHASES`), as the task reports them in its ``phases`` event, with the
start of training (``train_start``) and its first step: what a user waits for between
running the cell and seeing training go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the reports it reads: state.py builds them and imports this module
    from tfyarn_jupyter.core.state import AppInfo, ContainerInfo

#: A task's start: its interpreter up, the TensorFlow cluster ready (addresses exchanged) and
#: TensorFlow imported (the two overlap: the import runs while the task waits for its
#: peers), the model built, a checkpoint restored, training started, the first step done.
#: A task reports those it goes through.
PHASES = ("interpreter", "cluster", "tensorflow", "model", "restored", "train_start", "first_step")


def task_times(
    container: ContainerInfo | None, ev: Mapping[str, Any], app: AppInfo, state: str
) -> dict[str, float]:
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
