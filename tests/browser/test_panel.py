"""The live panel in a real JupyterLab, driven by headless Chromium, on the sandbox cluster.

The first test opens the quickstart notebook and runs its cells one by one
(Shift+Enter) up to the chief + evaluator launch; the second runs a small
notebook with workers and a ps whose training is long enough (5000 steps)
to still be going when a worker is killed and the application cancelled
from the panel's buttons. Every application a panel shows is killed at
teardown (``page`` fixture), and the kernels are shut down.
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
Lab = Any  # tests/browser/conftest.py's Lab: url, token, root, notebook_url()

#: Order of task states in the panel; the ended ones share the last rank.
STATE_RANK = {
    "requested": 0, "allocated": 1, "running": 2, "succeeded": 3, "failed": 3, "killed": 3,
}  # fmt: skip
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"
NOTEBOOK_OPEN_TIMEOUT_S = 180
CELL_TIMEOUT_S = 300
RUN_TIMEOUT_S = 600

#: What a panel shows, read from its DOM in one go.
SNAPSHOT_JS = """(el) => ({
  appId: el.getAttribute('data-app-id') || '',
  appState: el.getAttribute('data-app-state') || '',
  tasks: Object.fromEntries(
    [...el.querySelectorAll('[data-testid="task-row"]')].map(
      (r) => [r.getAttribute('data-task'), r.getAttribute('data-state')])),
  gpu: [...el.querySelectorAll('[data-testid="task-row"]')]
    .filter((r) => r.querySelector('[data-testid="gpu-badge"]'))
    .map((r) => r.getAttribute('data-task')),
  metrics: [...el.querySelectorAll('[data-testid="metrics-table"] [data-metric]')]
    .map((td) => td.getAttribute('data-metric')),
})"""


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in JupyterLab and wait until all its cells and an idle kernel are there."""
    n_cells = len(nbformat.read(lab.root / name, as_version=4).cells)
    page.goto(lab.notebook_url(name))
    page.wait_for_function(
        f"() => document.querySelectorAll('{CELLS}').length === {n_cells}",
        timeout=NOTEBOOK_OPEN_TIMEOUT_S * 1000,
    )
    # The toolbar says "idle" before any kernel exists; the status bar names the kernel.
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                   .some((e) => /\\(ipykernel\\) \\| Idle/.test(e.textContent))""",
        timeout=NOTEBOOK_OPEN_TIMEOUT_S * 1000,
    )


def run_cell(page: Any, index: int, timeout_s: float = CELL_TIMEOUT_S) -> Any:
    """Select code cell ``index``, press Shift+Enter, wait for its execution count; no error."""
    cell = page.locator(CELLS).nth(index)
    prompt = cell.locator(".jp-InputPrompt").first
    for _ in range(3):
        prompt.click()
        page.keyboard.press("Shift+Enter")
        # "[*]" appears as soon as the request is sent; a kernel not yet connected drops it.
        with contextlib.suppress(PlaywrightTimeout):
            page.wait_for_function(
                r"(el) => /\[(\*|\d+)\]/.test(el.textContent)",
                arg=prompt.element_handle(),
                timeout=15_000,
            )
            break
    page.wait_for_function(
        r"(el) => /\[\d+\]/.test(el.textContent)",
        arg=prompt.element_handle(),
        timeout=timeout_s * 1000,
    )
    errors = cell.locator('[data-mime-type="application/vnd.jupyter.error"]')
    assert errors.count() == 0, f"cell {index} raised:\n{errors.all_inner_texts()}"
    return cell


def panel_of(cell: Any, panel_apps: list[str]) -> tuple[Any, str]:
    """The cell's live panel and the application id it shows (recorded for teardown)."""
    panel = cell.locator(".tfyarn-panel")
    panel.wait_for(timeout=120_000)
    cell.page.wait_for_function(
        "(el) => (el.getAttribute('data-app-id') || '').startsWith('application_')",
        arg=panel.element_handle(),
        timeout=120_000,
    )
    app_id = panel.get_attribute("data-app-id")
    panel_apps.append(app_id)
    return panel, app_id


def screenshot(target: Any, path: Path) -> None:
    """Keep a picture of a live panel for a person to look at. The panel redraws on each
    poll, so Playwright may find it moving or replaced mid-shot: a few tries, then the
    whole page (a picture is for the reader; it never fails the test it illustrates)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    why: Exception | None = None
    for _ in range(3):
        try:
            target.screenshot(path=str(path), timeout=10_000, animations="disabled")
            return
        except PlaywrightError as exc:
            why = exc
            time.sleep(0.5)
    target.page.screenshot(path=str(path))
    print(f"{path.name}: the page instead of the panel ({str(why).splitlines()[0]})")


def row(panel: Any, task: str) -> Any:
    return panel.locator(f'[data-testid="task-row"][data-task="{task}"]')


def wait_for_snapshot(panel: Any, predicate: Any, timeout_s: float, what: str) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        snap = panel.evaluate(SNAPSHOT_JS)
        if predicate(snap):
            return snap
        if snap["appState"] in FINAL_STATES or time.monotonic() > deadline:
            raise AssertionError(f"panel never showed {what} in {timeout_s}s; last: {snap}")
        time.sleep(0.5)


def launch_cell_index(lab: Lab, name: str, line_start: str) -> int:
    cells = nbformat.read(lab.root / name, as_version=4).cells
    return next(i for i, c in enumerate(cells) if c.source.startswith(line_start))


def test_quickstart_panel_shows_task_states_advancing_gpu_badge_metrics_and_logs(
    page: Any, lab: Lab, panel_apps: list[str]
) -> None:
    name = "quickstart.ipynb"
    launch = launch_cell_index(lab, name, "%%tfyarn --chief 1G/1 --evaluator 1G/1 --queue ml-gpu")
    cells = nbformat.read(lab.root / name, as_version=4).cells
    t0 = time.monotonic()
    open_notebook(page, lab, name)
    for i in range(launch + 1):
        if cells[i].cell_type == "code":
            cell = run_cell(page, i)
    panel, app_id = panel_of(cell, panel_apps)
    launched_s = time.monotonic() - t0

    history: dict[str, list[str]] = {}
    gpu_tasks: set[str] = set()
    metrics_while_running: list[str] = []
    screenshot_path = ARTIFACTS / "panel-mid-run.png"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot_with_metrics = False
    header_mid_run = ""
    logs_clicked = False
    deadline = time.monotonic() + RUN_TIMEOUT_S
    snap: dict = {}
    while time.monotonic() < deadline:
        snap = panel.evaluate(SNAPSHOT_JS)
        for task, state in snap["tasks"].items():
            seen = history.setdefault(task, [])
            if not seen or seen[-1] != state:
                seen.append(state)
        gpu_tasks.update(snap["gpu"])
        running = snap["appState"] == "RUNNING"
        chief_running = snap["tasks"].get("chief:0") == "running"
        if running and snap["metrics"]:
            metrics_while_running = snap["metrics"]
        if running and chief_running and not logs_clicked:
            # Mid-run: the chief is training; keep a picture, then ask for its logs.
            screenshot(panel, screenshot_path)
            header_mid_run = panel.locator(".tfy-header-section").inner_text()
            row(panel, "chief:0").locator('button[data-testid="logs-button"]').click()
            logs_clicked = True
        if running and snap["metrics"] and not shot_with_metrics:
            screenshot(panel, screenshot_path)
            shot_with_metrics = True
        if snap["appState"] in FINAL_STATES:
            break
        time.sleep(0.5)
    run_s = time.monotonic() - t0
    print(
        f"{app_id}: panel up {launched_s:.0f}s after opening, ended {snap.get('appState')} "
        f"after {run_s:.0f}s; states seen {history}; metrics while running "
        f"{metrics_while_running}; screenshot with metrics: {shot_with_metrics}"
    )

    assert snap["appState"] == "FINISHED", f"run did not finish in time: {snap}"
    assert set(history) == {"chief:0", "evaluator:0"}, history
    for task, states in history.items():
        ranks = [STATE_RANK[s] for s in states]
        assert len(states) >= 2, f"{task} never changed state in the panel: {states}"
        assert ranks == sorted(ranks), f"{task} states went backwards: {states}"
        assert "running" in states, f"{task} never shown running: {states}"
    assert history["chief:0"][-1] == "succeeded", history
    # --gpu chief on ml-gpu: the chief (only) ran on the node labelled gpu.
    assert gpu_tasks == {"chief:0"}, gpu_tasks
    assert row(panel, "chief:0").locator('[data-testid="gpu-badge"]').inner_text() == "gpu"
    # The evaluator's results reached the panel, with the model's accuracy.
    accuracy = panel.locator('[data-testid="metrics-table"] [data-metric="accuracy"]')
    assert re.fullmatch(r"0?\.\d+|1(\.0+)?", accuracy.inner_text().strip()), accuracy.inner_text()
    assert panel.locator('[data-testid="metric-chart"][data-name="loss"] canvas').count() == 1
    assert screenshot_path.stat().st_size > 0
    # Mid-run the header has no diagnostics yet, and shows no stray "null" in their place.
    assert app_id in header_mid_run and "RUNNING" in header_mid_run, header_mid_run
    assert "null" not in header_mid_run, header_mid_run

    # The Logs control brought the chief's container output into the panel.
    assert logs_clicked, f"the chief was never shown running: {history}"
    logs = row(panel, "chief:0").locator('details[data-testid="logs-view"]')
    logs.wait_for(timeout=120_000)
    assert "Logs of chief:0" in logs.locator('[data-testid="logs-label"]').inner_text()
    text = logs.locator('[data-testid="logs-text"]').inner_text()
    assert "TF_CONFIG=" in text, text[-2000:]


KILL_NOTEBOOK = "kill-and-cancel.ipynb"
#: The test kills a worker and then cancels: three trainers pausing 0.02 s a step keep
#: training going 130 s or more however fast the machine (5000 steps unpaused could end
#: within seconds of the workers starting, and the "still RUNNING" checks would race it).
KILL_LAUNCH = (
    "%%tfyarn --chief 1G/1 --worker 1G/1x2 --ps 512M/1 --evaluator 1G/1 "
    "--name browser-kill-cancel --var steer\n"
    "def experiment_fn():\n"
    "    return cancer.experiment(kill_dir, max_steps=20000, step_delay_s=0.02)"
)


def write_kill_notebook(lab: Lab) -> str:
    return lab.write_notebook(KILL_NOTEBOOK, [
        "%load_ext tfyarn_jupyter",
        'import tempfile\n\nimport cancer\n\nkill_dir = tempfile.mkdtemp(prefix="browser-kill-")',
        KILL_LAUNCH,
    ])  # fmt: skip


def test_panel_kills_one_worker_then_cancels_the_application_after_confirmation(
    page: Any, lab: Lab, skein_client: Any, panel_apps: list[str]
) -> None:
    name = write_kill_notebook(lab)
    t0 = time.monotonic()
    open_notebook(page, lab, name)
    for i in range(3):
        cell = run_cell(page, i)
    panel, app_id = panel_of(cell, panel_apps)
    tasks = {"chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0"}
    # The shared cluster may start the evaluator late: training is what must be going.
    snap = wait_for_snapshot(
        panel,
        lambda s: (
            set(s["tasks"]) == tasks
            and all(s["tasks"][t] == "running" for t in ("chief:0", "worker:0", "worker:1"))
        ),
        RUN_TIMEOUT_S,
        "the chief and both workers running",
    )
    all_running_s = time.monotonic() - t0
    assert "killed" not in snap["tasks"].values(), snap

    row(panel, "worker:1").locator('button[data-testid="kill"]').click()
    snap = wait_for_snapshot(
        panel, lambda s: s["tasks"].get("worker:1") == "killed", 180, "worker:1 killed"
    )
    killed_s = time.monotonic() - t0
    assert row(panel, "worker:1").locator('[data-testid="task-state"]').inner_text() == "killed"
    # Only that task went: the application and the other worker are still running.
    assert snap["appState"] == "RUNNING", snap
    assert [t for t, st in snap["tasks"].items() if st == "killed"] == ["worker:1"], snap
    am = skein_client.connect(app_id, wait=False)
    killed = am.get_containers(services=["worker"], states=["KILLED"])
    assert [c.instance for c in killed] == [1], killed

    panel.locator('[data-testid="cancel"]').click()
    confirmation = panel.locator('[data-testid="cancel-confirmation"]')
    confirmation.wait_for()
    assert app_id in confirmation.inner_text()
    # Asking is not cancelling: nothing happened before the confirmation.
    assert str(skein_client.application_report(app_id).state) == "RUNNING"
    confirmation.locator('[data-testid="confirm-cancel"]').click()
    deadline = time.monotonic() + 180
    while (state := str(skein_client.application_report(app_id).state)) != "KILLED":
        assert state == "RUNNING" and time.monotonic() < deadline, f"{app_id} is {state}"
        time.sleep(0.5)
    wait_for_snapshot(panel, lambda s: s["appState"] == "KILLED", 120, "the application KILLED")
    print(
        f"{app_id}: chief and workers running {all_running_s:.0f}s after opening, worker:1 killed "
        f"at {killed_s:.0f}s, application KILLED at {time.monotonic() - t0:.0f}s"
    )
