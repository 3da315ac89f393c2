"""The panel as a training dashboard, in JupyterLab and in Notebook 7, on the sandbox cluster.

Each front end runs a small notebook of its own (chief + evaluator, a short
Estimator training) and watches the launch cell: one panel output, the
progress bar and the train-loss curve advancing while the application is
RUNNING, charts with axes whose legend reads out the values under the mouse,
the timeline with every task, and non-zero durations at the end. A screenshot
of the panel mid-run and one at the end go to ``build/screenshots/``.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from .test_panel import FINAL_STATES, Lab, panel_of, run_cell, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"
OPEN_TIMEOUT_S = 180
RUN_TIMEOUT_S = 600
MAX_STEPS = 2000
#: A pause after each step: training lasts at least MAX_STEPS x this (20 s) however fast the
#: machine, so a loaded browser still sees several progress reports while it is RUNNING.
STEP_DELAY_S = 0.01
LAUNCH = (
    "%%tfyarn --chief 1G/1 --evaluator 1G/1 --name dashboard-{fe} --var dash\n"
    "def experiment_fn():\n"
    "    return cancer.experiment(\n"
    "        dash_dir, max_steps={steps}, save_checkpoints_steps=500, step_delay_s={delay}\n"
    "    )"
)

#: What the panel shows, read from its DOM in one go.
DASH_JS = """(el) => ({
  appState: el.getAttribute('data-app-state') || '',
  steps: Object.fromEntries([...el.querySelectorAll('[data-testid="progress-row"]')]
    .map((r) => [r.dataset.task, Number(r.dataset.step)])),
  maxSteps: el.querySelector('[data-testid="progress-row"]')?.dataset.maxSteps || '',
  eta: el.querySelector('[data-testid="progress-eta"]')?.textContent || '',
  rate: el.querySelector('[data-testid="progress-rate"]')?.textContent || '',
  lossPoints: Number(el.querySelector('[data-testid="train-loss-chart"]')?.dataset.points || 0),
  metricCharts: el.querySelectorAll('[data-testid="metric-chart"]').length,
  timeline: [...el.querySelectorAll('[data-testid="timeline-row"]')].map((r) => r.dataset.task),
  summary: !!el.querySelector('[data-testid="summary"]'),
})"""


def write_notebook(lab: Lab, front_end: str) -> str:
    return lab.write_notebook(f"dashboard-{front_end}.ipynb", [
        "%load_ext tfyarn_jupyter",
        'import tempfile\n\nimport cancer\n\ndash_dir = tempfile.mkdtemp(prefix="dash-")',
        LAUNCH.format(fe=front_end, steps=MAX_STEPS, delay=STEP_DELAY_S),
    ])  # fmt: skip


def open_in(page: Any, lab: Lab, name: str, front_end: str) -> None:
    """Open ``name`` in the front end; wait for its cells and its kernel to be idle."""
    url = lab.notebook_url(name) if front_end == "lab" else lab.notebook7_url(name)
    page.goto(url)
    page.wait_for_function(
        f"() => document.querySelectorAll('{CELLS}').length === 3",
        timeout=OPEN_TIMEOUT_S * 1000,
    )
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            sessions = lab.api("GET", "/api/sessions").json()
            if any(
                s["path"].endswith(name) and s["kernel"]["execution_state"] == "idle"
                for s in sessions
            ):
                return
        time.sleep(0.5)
    raise AssertionError(f"no idle kernel for {name} in {OPEN_TIMEOUT_S}s")


def hover_read_out(page: Any, chart: Any, at: float) -> list[str]:
    """Move the mouse over ``chart``'s plot at ``at`` of its width; the legend's values."""
    chart.scroll_into_view_if_needed()
    box = chart.locator(".u-over").bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50, f"plot area {box}"
    page.mouse.move(box["x"] + box["width"] * at, box["y"] + box["height"] / 2)
    values = chart.locator(".u-legend .u-value").all_inner_texts()
    page.mouse.move(0, 0)
    return values


def watch_while_running(page: Any, panel: Any, front_end: str) -> dict[str, Any]:
    """Poll the panel until the run ends: what advanced while RUNNING, one mid-run picture."""
    seen: dict[str, Any] = {
        "steps": [], "points": [], "hover": [], "eta": "", "rate": "", "max": ""}  # fmt: skip
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        snap = panel.evaluate(DASH_JS)
        if snap["appState"] in FINAL_STATES:
            seen["last"] = snap
            return seen
        step = snap["steps"].get("chief:0")
        if snap["appState"] == "RUNNING" and step is not None:
            if not seen["steps"] or seen["steps"][-1] != step:
                seen["steps"].append(step)
                seen["points"].append(snap["lossPoints"])
            if not seen["hover"] and snap["lossPoints"] >= 3:
                chart = panel.locator('[data-testid="train-loss-chart"]')
                seen["hover"] = hover_read_out(page, chart, 0.5)
                seen["eta"], seen["rate"], seen["max"] = snap["eta"], snap["rate"], snap["maxSteps"]
                screenshot(panel, SCREENSHOTS / f"{front_end}-mid-run.png")
        time.sleep(0.5)
    raise AssertionError(f"the run did not end in {RUN_TIMEOUT_S}s: {panel.evaluate(DASH_JS)}")


def assert_one_panel_output(cell: Any) -> None:
    """The launch cell has one rich output, the live panel; no second, static summary."""
    rich = cell.locator(".jp-OutputArea-output").evaluate_all(
        """(outs) => outs.map((o) => o.getAttribute('data-mime-type') || '')
                 .filter((m) => !m.endsWith('stdout') && !m.endsWith('stderr'))"""
    )
    assert len(rich) == 1, f"launch cell outputs {rich}"
    assert cell.locator(".tfyarn-panel").count() == 1
    assert cell.locator(".tfyarn-static:visible").count() == 0


def assert_end_state(page: Any, panel: Any) -> None:
    """At the end: every task on the timeline, non-zero durations, chart axes and read-out."""
    panel.locator('[data-testid="summary"]').wait_for(timeout=120_000)
    timeline = panel.locator('[data-testid="timeline-row"]')
    assert sorted(timeline.evaluate_all("rs => rs.map(r => r.dataset.task)")) == [
        "chief:0", "evaluator:0"]  # fmt: skip
    run_ms = timeline.locator('.tfy-seg[data-kind="run"]').evaluate_all(
        "ss => ss.map(s => Number(s.dataset.ms))"
    )
    assert len(run_ms) == 2 and all(ms > 0 for ms in run_ms), run_ms
    durations = panel.locator('[data-testid="summary-task-duration"]').all_inner_texts()
    assert len(durations) == 2 and all(d not in ("0s", "—", "") for d in durations), durations
    rows = panel.locator('[data-testid="task-duration"]').all_inner_texts()
    assert len(rows) == 2 and all(d not in ("0s", "") for d in rows), rows
    assert panel.locator('[data-testid="summary-duration"]').inner_text() not in ("0s", "—")
    loss = panel.locator('[data-testid="metric-chart"][data-name="loss"]')
    assert loss.locator(".u-axis").count() == 2
    values = hover_read_out(page, loss, 0.95)
    assert len(values) == 2 and all(v not in ("", "—") for v in values), values
    assert float(values[0].replace(",", "")) > 0 and float(values[1]) > 0, values


@pytest.mark.parametrize("front_end", ["lab", "notebook7"])
def test_dashboard_shows_progress_charts_timeline_and_durations(
    page: Any, lab: Lab, panel_apps: list[str], front_end: str
) -> None:
    page.set_viewport_size({"width": 1400, "height": 2200})
    name = write_notebook(lab, front_end)
    t0 = time.monotonic()
    open_in(page, lab, name, front_end)
    for i in range(3):
        cell = run_cell(page, i)
    panel, app_id = panel_of(cell, panel_apps)
    assert_one_panel_output(cell)
    seen = watch_while_running(page, panel, front_end)
    print(
        f"\n{front_end} {app_id}: ended {seen['last']['appState']} after "
        f"{time.monotonic() - t0:.0f}s; chief steps while RUNNING {seen['steps']}; "
        f"loss points {seen['points']}; rate {seen['rate']!r}, eta {seen['eta']!r}; "
        f"hover {seen['hover']}"
    )
    assert seen["last"]["appState"] == "FINISHED", seen["last"]
    # the bar and the curve advanced while the application was RUNNING
    assert len(seen["steps"]) >= 2 and seen["steps"] == sorted(seen["steps"]), seen["steps"]
    assert seen["points"][-1] > seen["points"][0], seen["points"]
    assert seen["hover"], f"the loss curve never had 3 points while RUNNING: {seen}"
    assert seen["max"] == str(MAX_STEPS) and seen["rate"].endswith("steps/s"), seen
    assert seen["eta"].endswith("left") or seen["eta"] == "done", seen["eta"]
    # hovering the train-loss curve reads out a step and a loss
    assert len(seen["hover"]) >= 2 and all(v not in ("", "—") for v in seen["hover"]), seen
    assert_end_state(page, panel)
    assert_one_panel_output(cell)
    screenshot(panel, SCREENSHOTS / f"{front_end}-end.png")
