"""A run's status as static HTML: readable with no kernel and no front end.

What a saved or exported notebook keeps of the panel, what ``Run._repr_html_``
shows, and what the magic prints where no widget front end exists. Pure.
"""

from __future__ import annotations

import html
import time

from tfyarn_jupyter.core.state import RunStatus, TaskState

_COLOURS = {
    "requested": "#888",
    "allocated": "#c90",
    "running": "#1a73e8",
    "succeeded": "#188038",
    "failed": "#d93025",
    "killed": "#555",
}


def _fmt_time(ms: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) if ms else ""


def status_html(st: RunStatus) -> str:
    """A static rendering of a run's state: readable with no kernel or front end."""
    esc = html.escape
    app = st.app
    rows = []
    for t in st.tasks:
        colour = _COLOURS.get(t.state, "#888")
        gpu = (
            ' <span style="background:#6a1b9a;color:#fff;padding:0 4px;border-radius:3px">'
            "gpu</span>"
            if t.gpu
            else ""
        )
        dur = f"{t.duration_s:.1f}s" if t.duration_s else ""
        rows.append(
            f"<tr><td>{esc(t.task)}</td>"
            f'<td><span style="color:{colour};font-weight:bold">{esc(t.state)}</span>'
            f"{_attempt(t)}</td>"
            f"<td>{esc(t.node)}{gpu}{_gpu_count(t.gpus)}</td><td>{esc(t.container_id)}</td>"
            f"<td>{_fmt_time(t.start_time)}</td><td>{dur}</td></tr>"
        )
    metrics = ""
    if st.metrics:
        last = st.metrics[-1]
        cells = "".join(
            f"<tr><td>{esc(str(k))}</td><td>{v:.4g}</td></tr>"
            if isinstance(v, float)
            else f"<tr><td>{esc(str(k))}</td><td>{esc(str(v))}</td></tr>"
            for k, v in sorted(last.items())
            if k != "t"
        )
        metrics = (
            f"<details open><summary>metrics (latest)</summary><table>{cells}</table></details>"
        )
    failure = ""
    if st.failure:
        failure = (
            f"<details open><summary>failure in {esc(st.failure.task or 'application')}"
            f"</summary><pre>{esc(st.failure.traceback)}</pre></details>"
        )
    state = app.state if app.state != "FINISHED" else f"FINISHED/{app.final_status}"
    link = (
        f' <a href="{esc(app.tracking_url)}" target="_blank">YARN UI</a>'
        if app.tracking_url.startswith("http")
        else ""
    )
    pending = "".join(f"<li>{esc(p)}</li>" for p in st.pending)
    return (
        f'<div class="tfyarn-static" data-app-id="{esc(app.app_id)}">'
        f"<b>{esc(app.app_id)}</b> {esc(app.name)} · queue {esc(app.queue)} · "
        f"<b>{esc(state)}</b>{link}"
        f"{f'<ul>{pending}</ul>' if pending else ''}"
        "<table><tr><th>task</th><th>state</th><th>node</th><th>container</th>"
        f"<th>start</th><th>duration</th></tr>{''.join(rows)}</table>{_restarts(st)}"
        f"{metrics}{failure}</div>"
    )


def _gpu_count(n: int) -> str:
    """The GPUs YARN reserved for a task, beside its node ("" when none)."""
    if n <= 0:
        return ""
    return f' <span title="yarn.io/gpu reserved by YARN">{n} GPU{"s" if n > 1 else ""}</span>'


def _attempt(t: TaskState) -> str:
    """A restarted task's attempt and why, beside its state ("" when never restarted)."""
    if not t.restarts:
        return ""
    lost = f", {t.steps_lost} steps lost" if t.steps_lost is not None else ""
    why = f" ({html.escape(t.restart_cause)}{lost})" if t.restart_cause else ""
    return f' <span class="tfyarn-attempt">attempt {t.restarts + 1}{why}</span>'


def _restarts(st: RunStatus) -> str:
    """The restarts inside the application, one row each ("" when there was none)."""
    keys = ("n", "cause", "exit_status", "step", "resumed_step", "steps_lost")
    rows = []
    for t in st.tasks:
        for r in t.restart_log:
            cells = [t.task, *(_num(r.get(k)) for k in keys)]
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    names = ("task", "restart", "cause", "exit status", "step", "resumed at", "steps lost")
    head = "".join(f"<th>{h}</th>" for h in names)
    return (
        f"<details open><summary>restarts in the application ({len(rows)})</summary>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table></details>"
    )


def _num(v: object) -> str:
    return "" if v is None else str(v)
