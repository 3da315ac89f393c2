"""Client side, pure: how near its memory limit each task is, from its reported figures.

The tasks report their resident memory and, where YARN enforces one, their
cgroup's limit (:mod:`tfyarn_jupyter.container.sampling`); the levels here are
what the panel colours and what the run warns about once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Shares of its memory limit from which a task's memory is "high", and "critical": near the
#: limit past which YARN kills its container. The only copy: the panel reads the levels.
HIGH = 0.8
CRITICAL = 0.9


def memory_level(rss: Any, limit: Any) -> str:
    """ "ok", "high" (≥ :data:`HIGH` of the limit) or "critical" (≥ :data:`CRITICAL`); ""
    when either figure is unknown."""
    if not isinstance(rss, int | float) or not isinstance(limit, int | float) or limit <= 0:
        return ""
    ratio = rss / limit
    return "critical" if ratio >= CRITICAL else "high" if ratio >= HIGH else "ok"


def with_memory_levels(
    progress: Mapping[str, Mapping[str, Any]], memory_mb: Mapping[str, int]
) -> dict[str, dict[str, Any]]:
    """Each task's progress with its ``memory_level`` where it reported its RSS: against the
    limit it reported, else its requested ``memory_mb`` (the panel shows these levels)."""
    out = {}
    for task, p in progress.items():
        q = dict(p)
        limit = p.get("memory_limit_bytes") or (memory_mb.get(task, 0) << 20) or None
        level = memory_level(p.get("rss_bytes"), limit)
        if level:
            q["memory_level"] = level
        out[task] = q
    return out


def memory_warnings(status: Any) -> dict[str, str]:
    """``{task: "high" | "critical"}`` for the tasks near their memory limit, from a
    :class:`~.state.RunStatus` or its ``to_dict()``."""
    d = status if isinstance(status, Mapping) else status.to_dict()
    return {
        task: p["memory_level"]
        for task, p in d.get("progress", {}).items()
        if p.get("memory_level") in ("high", "critical")
    }
