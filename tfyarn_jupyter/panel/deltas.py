"""The loss histories as the panel sends them: apart from the figures, as what changed.

The figures of a task's progress change with every report; its loss history only
grows at its end. So the panel sends the histories in ``history`` messages that
carry, per task, the prefix to keep and the points to append. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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
