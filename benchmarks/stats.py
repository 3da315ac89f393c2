"""The benchmarks' pure half: statistics, interleaving, ratios and the markdown table.

Nothing here talks to a cluster; ``benchmarks/tests/test_stats.py`` covers it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Stats:
    """One measurement's summary over its repetitions."""

    median: float
    min: float
    max: float
    n: int


def summarize(values: Sequence[float | None]) -> Stats | None:
    """Median, min and max of the finite values; ``None`` when there are none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return Stats(statistics.median(vals), min(vals), max(vals), len(vals))


def interleave(variants: Sequence[str], reps: int) -> list[tuple[int, str]]:
    """The measurement order: every variant once per repetition (A B A B ...)."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if len(set(variants)) != len(variants):
        raise ValueError(f"variants must be distinct: {list(variants)}")
    return [(rep, v) for rep in range(reps) for v in variants]


def paired_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """``a[i] / b[i]`` for each repetition where both were measured (and ``b[i]`` > 0)."""
    return [x / y for x, y in zip(a, b, strict=False) if x is not None and y is not None and y > 0]


def calls_per_minute(calls_per_poll: float, poll_ms: float, interval_s: float) -> float:
    """Calls a panel makes per minute: it sleeps ``interval_s`` after each poll."""
    cycle = interval_s + poll_ms / 1000
    return calls_per_poll * 60 / cycle if cycle > 0 else math.inf


def step_rate(durations: Sequence[float]) -> float | None:
    """Steps per second from per-step durations: 1 / median (robust to checkpoint pauses)."""
    s = summarize(durations)
    return 1 / s.median if s and s.median > 0 else None


@dataclasses.dataclass
class Row:
    """One line of the table: a measurement and its values (one per repetition)."""

    section: str
    name: str
    unit: str
    values: list[float] = dataclasses.field(default_factory=list)
    note: str = ""

    @property
    def stats(self) -> Stats | None:
        return summarize(self.values)

    def to_dict(self) -> dict[str, Any]:
        s = self.stats
        return {
            "section": self.section,
            "name": self.name,
            "unit": self.unit,
            "values": list(self.values),
            "median": s.median if s else None,
            "min": s.min if s else None,
            "max": s.max if s else None,
            "n": s.n if s else 0,
            "note": self.note,
        }


def fmt(value: float, unit: str) -> str:
    """A value for the table, with as many digits as its unit deserves."""
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "x":
        return f"{value:.2f}x"
    if unit in ("calls", "calls/min", "steps/s", "MiB/s"):
        return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{value:g} {unit}".strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: Sequence[Row], header: Sequence[str] = ()) -> str:
    """The benchmark table (median, min, max, n per measurement) after ``header`` lines."""
    out = [*header]
    if header:
        out.append("")
    out.append("| Section | Measurement | Median | Min | Max | n | Notes |")
    out.append("|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        s = r.stats
        if s is None:
            cells = ["—", "—", "—", "0"]
        else:
            cells = [fmt(s.median, r.unit), fmt(s.min, r.unit), fmt(s.max, r.unit), str(s.n)]
        out.append(
            "| " + " | ".join([_cell(r.section), _cell(r.name), *cells, _cell(r.note)]) + " |"
        )
    return "\n".join(out) + "\n"


def skein_kv_race(error: str) -> bool:
    """Whether a tf-yarn 0.7.0 run died of skein's application-master race on watched keys.

    tf-yarn's client watches keys while its tasks put them; skein's master can then fail
    a put ("sendHeaders has already been called" in its log), which the client sees as
    an ``ApplicationError`` from ``kv.py`` and answers by shutting the application down.
    That is skein's bug, not tf-yarn's launch path: the bench reruns such a run once.
    """
    return "skein/kv.py" in error and "skein.exceptions.ApplicationError" in error


def tfyarn070_rows(sec: str, res: Mapping[str, Sequence[dict | None]]) -> list[Row]:
    """The tf-yarn 0.7.0 comparison's rows: each moment for both tools, warm and cold
    where measured, their paired ratio (tfyarn / tf-yarn: below 1, tfyarn is faster),
    and the phases of both packers on a cold launch."""
    rows: list[Row] = []

    def row(name: str, unit: str, values: Sequence[float | None], note: str = "") -> None:
        rows.append(Row(sec, name, unit, [float(v) for v in values if v is not None], note))

    def col(variant: str, key: str) -> list[float | None]:
        return [r.get(key) if r else None for r in res.get(variant, [])]

    moments = [("all_containers_running", "submit -> all containers RUNNING"),
               ("first_step", "submit -> first training step"),
               ("finished", "submit -> run finished")]  # fmt: skip
    for temp in ("warm", "cold"):
        ours, theirs = f"tfyarn {temp}", f"tf-yarn 0.7.0 {temp}"
        if ours not in res or theirs not in res:
            continue
        for key, label in moments:
            row(f"{theirs}: {label}", "s", col(theirs, key))
            row(f"{ours}: {label}", "s", col(ours, key))
            row(f"{temp}: tfyarn / tf-yarn 0.7.0, {label.split('-> ')[1]}", "x",
                paired_ratios(col(ours, key), col(theirs, key)),
                "paired per repetition; below 1: tfyarn is faster")  # fmt: skip
    if "tfyarn cold" in res and "tf-yarn 0.7.0 cold" in res:
        for phase in ("pack", "upload"):
            row(f"tf-yarn 0.7.0 cold phase: {phase}", "s",
                [(r.get("phases") or {}).get(phase) if r else None
                 for r in res["tf-yarn 0.7.0 cold"]],
                "cluster-pack's pex build; WebHDFS upload")  # fmt: skip
            row(f"tfyarn cold phase: {phase}", "s",
                [(r.get("launch_phases") or {}).get(f"env_{phase}") if r else None
                 for r in res["tfyarn cold"]],
                "tar streamed to WebHDFS: pack until tar ends, upload the rest")  # fmt: skip
        sizes = [r["env_size"] for r in res["tf-yarn 0.7.0 cold"] if r and r.get("env_size")]
        if sizes:
            row("tf-yarn 0.7.0 environment (pex) size", "MiB", [sizes[0] / 2**20])
    return rows


def since(t0: float, t: float | None) -> float | None:
    """Seconds from ``t0`` to the moment ``t``; ``None`` when it has not happened."""
    return None if t is None or not t else t - t0


def latest(values: Sequence[float | None]) -> float | None:
    """The last of several moments, or ``None`` if any of them has not happened."""
    if not values or any(v is None or not v for v in values):
        return None
    return max(v for v in values if v is not None)
