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

from .spec import TaskSpec

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


def split_histories(
    progress: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[list[float]]]]:
    """``progress`` without its loss histories, and the histories by task.

    The panel sends the histories apart (see :func:`delta`): the figures change with
    every report, the history only grows at its end.
    """
    figures, histories = {}, {}
    for task, p in progress.items():
        figures[task] = {k: v for k, v in p.items() if k != "history"}
        if "history" in p:
            histories[task] = [list(pt) for pt in p["history"] or []]
    return figures, histories


def delta(
    old: Mapping[str, Sequence[Sequence[float]]], new: Mapping[str, Sequence[Sequence[float]]]
) -> dict[str, dict[str, Any]]:
    """What turns the histories ``old`` into ``new``: ``{task: {"from": k, "points": [...]}}``,
    keep each task's first ``k`` points and append ``points``; unchanged tasks are left out.

    A series mostly grows by a point or has its last point replaced; a halved or restarted
    series shares a shorter prefix, down to ``from: 0`` (sent whole). Applying the same
    change twice gives the same series, so a view may see it from more than one source.
    """
    out: dict[str, dict[str, Any]] = {}
    for task in sorted(set(old) | set(new)):
        before, after = list(old.get(task, [])), [list(p) for p in new.get(task, [])]
        k = 0
        for a, b in zip(before, after, strict=False):
            if list(a) != b:
                break
            k += 1
        if k == len(before) == len(after):
            continue
        out[task] = {"from": k, "points": after[k:]}
    return out


def apply_delta(
    histories: dict[str, list[list[float]]], change: Mapping[str, Mapping[str, Any]]
) -> dict[str, list[list[float]]]:
    """``histories`` with ``change`` (from :func:`delta`) applied, in place; a change that
    starts past a series' end (it missed an earlier one) is skipped."""
    for task, c in change.items():
        pts = histories.setdefault(task, [])
        k = int(c["from"])
        if k > len(pts):
            continue
        pts[k:] = [list(p) for p in c["points"]]
    return histories
