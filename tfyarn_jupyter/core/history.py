"""Each task's progress as the panel shows it: the latest figures, the loss history, resources.

The key-value store holds only each task's latest progress (one key per
task); the client keeps the ``[step, loss]`` points it has seen in a
:class:`History` across polls, bounded (halved when full, so a long run
keeps its whole shape at a coarser grain). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tfyarn_jupyter.core.spec import TaskSpec

#: The resource figures every task's progress carries (None when not measured).
RESOURCE_KEYS = ("rss_bytes", "cpu_percent", "memory_limit_bytes")
#: The training figures a trainer's progress carries (None until known).
TRAINING_KEYS = ("step", "max_steps", "steps_per_s", "loss")


def progress_view(
    reported: Mapping[str, Mapping[str, Any]],
    history: Mapping[str, Sequence[Sequence[float]]],
    task_specs: Mapping[str, TaskSpec],
) -> dict[str, dict[str, Any]]:
    """Each task's latest progress with every key the panel reads: the training figures, the
    loss history, and resources; the memory limit defaults to the task's YARN request."""
    out = {}
    for task, p in reported.items():
        entry = {k: p.get(k) for k in (*TRAINING_KEYS, *RESOURCE_KEYS)}
        entry.update({k: v for k, v in p.items() if k not in entry})
        spec = task_specs.get(task.partition(":")[0])
        if entry["memory_limit_bytes"] is None and spec is not None:
            entry["memory_limit_bytes"] = spec.memory << 20
        entry["history"] = [list(pt) for pt in history.get(task, [])]
        out[task] = entry
    return out


#: The most ``[step, loss]`` points kept per task; when full, every other one goes.
HISTORY_POINTS = 500


@dataclasses.dataclass
class Series:
    """One task's loss points, evenly thinned: each kept point stands for ``stride``
    observations; the last point is always the latest observation (``pending`` of them
    since the last kept one), so the curve ends where training is."""

    points: list[list[float]] = dataclasses.field(default_factory=list)
    stride: int = 1
    pending: int = 0

    def add(self, step: Any, loss: Any, limit: int = HISTORY_POINTS) -> None:
        """Add ``[step, loss]``: a repeated step is skipped, a step back (a restart from a
        checkpoint) drops what came after it, and a full series is halved."""
        if not isinstance(step, (int, float)) or not isinstance(loss, (int, float)):
            return
        pts = self.points
        if pts and step <= pts[-1][0]:
            if step == pts[-1][0]:
                return
            pts[:] = [p for p in pts if p[0] < step]
            self.pending = 0
        if 0 < self.pending < self.stride:
            pts[-1] = [step, loss]  # the latest stands in until its stride is complete
            self.pending += 1
            return
        pts.append([step, loss])
        self.pending = 1
        if len(pts) > limit:
            pts[:] = [*pts[:-1][::2], pts[-1]]
            self.stride *= 2


def add_point(points: list[list[float]], step: Any, loss: Any,
              limit: int = HISTORY_POINTS) -> list[list[float]]:  # fmt: skip
    """``points`` with ``[step, loss]`` added (one observation, stride 1; in place)."""
    Series(points).add(step, loss, limit)
    return points


class History:
    """The ``[step, loss]`` points of each task seen so far, across polls."""

    def __init__(self, limit: int = HISTORY_POINTS) -> None:
        self.limit = limit
        self.series: dict[str, Series] = {}

    @property
    def points(self) -> dict[str, list[list[float]]]:
        return {task: s.points for task, s in self.series.items()}

    def observe(self, reported: Mapping[str, Mapping[str, Any]]) -> None:
        """Add each task's latest ``step`` and ``loss`` (one poll's progress)."""
        for task, p in reported.items():
            self.series.setdefault(task, Series()).add(p.get("step"), p.get("loss"), self.limit)

    def seed(self, progress: Mapping[str, Mapping[str, Any]]) -> None:
        """Start from the histories a saved status holds (a finished run's event log)."""
        for task, p in progress.items():
            pts = p.get("history") or []
            self.series[task] = Series([list(pt) for pt in pts if isinstance(pt, (list, tuple))])
