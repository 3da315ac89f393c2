"""The panel's TensorBoard link in JupyterLab, on the sandbox cluster, and what updates cost.

A notebook launches the quickstart's Estimator with ``%%tfyarn --chief 1G/1
--tensorboard``, as a user would; the test waits for the panel's TensorBoard
link, clicks it (a new tab, same browser, so the ResourceManager's hadoop.auth
cookie is kept) and checks that TensorBoard's page loads through the RM proxy
(``/proxy/<app_id>/``), that its charts' requests go out as the shim's PUTs and
succeed, and that the run's ``loss`` scalar is listed; then it cancels the run and the
panel shows it KILLED. Screenshot:
``build/screenshots/tensorboard.png``.

Printed, not asserted: the progress delay (the step's ``t``, set in the
container when it was reached, to the moment the panel's progress text showed
it: a MutationObserver in the page), the bytes of each widget state update the
kernel sends (its ``update`` comm messages, measured in the kernel by wrapping
``RunPanel._send``), the same for synthetic runs of 8, 48 and 200 tasks, and
the seconds from the link's appearance / the tensorboard container's start to
the page served and the loss listed.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tfyarn_jupyter.core.state import RunStatus
from tfyarn_jupyter.panel.widget import RunPanel

from .test_panel import CELLS, FINAL_STATES, Lab, panel_of, run_cell
from .test_panel_render import status

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
ARTIFACTS = SCREENSHOTS.parent / "test-artifacts"
OPEN_TIMEOUT_S = 180
LINK_TIMEOUT_S = 300
LOSS_TIMEOUT_S = 240
RUN_TIMEOUT_S = 600
#: The chief trains at least MAX_STEPS x STEP_DELAY_S (90 s) however fast the machine, so it
#: still trains (and pushes event files with its checkpoints) while TensorBoard starts and
#: the test looks for the loss (then the test cancels the run): TensorBoard stays up only
#: 30 s after the chief ends (the magic's default). A step count alone was not enough: at
#: 1400 steps/s, 40000 steps ended before a loaded CI machine's TensorBoard had listed anything.
MAX_STEPS = 3000
STEP_DELAY_S = 0.03
CHECKPOINT_STEPS = 500
NAME = "tensorboard-lab.ipynb"

#: Kernel-side probe, the notebook's second cell: the size of every state update the panel
#: sends to the front end, and when (container time ``t``) each chief step was reached.
PROBE = """import json
from tfyarn_jupyter.panel.widget import RunPanel

probe = {"bytes": [], "history": [], "t": {}}
_send = RunPanel._send


def _measured(self, msg, buffers=None):
    if msg.get("method") == "custom" and msg["content"].get("type") == "history":
        probe["history"].append(len(json.dumps(msg)))
    if msg.get("method") == "update":
        probe["bytes"].append(len(json.dumps(msg)))
        p = (msg["state"].get("progress") or {}).get("chief:0") or {}
        if p.get("step") is not None:
            probe["t"].setdefault(str(p["step"]), p.get("t"))
    return _send(self, msg, buffers)


RunPanel._send = _measured"""

#: Browser-side probe: the first time (epoch ms) the panel's chief progress row showed a step.
OBSERVE_JS = """(el) => {
  window.tfyDrawn = {};
  const look = () => {
    const row = el.querySelector('[data-testid="progress-row"][data-task="chief:0"]');
    const step = row && row.dataset.step;
    if (step && !(step in window.tfyDrawn)) window.tfyDrawn[step] = Date.now();
  };
  new MutationObserver(look).observe(el, {subtree: true, childList: true, attributes: true,
                                          characterData: true});
  look();
}"""


def write_notebook(lab: Lab) -> None:
    lab.write_notebook(NAME, [
        "%load_ext tfyarn_jupyter",
        PROBE,
        'import tempfile\n\nimport cancer\n\ntb_dir = tempfile.mkdtemp(prefix="tb-")',
        "%%tfyarn --chief 1G/1 --tensorboard --name tensorboard-lab --var tb\n"
        "def experiment_fn():\n"
        f"    return cancer.experiment(tb_dir, max_steps={MAX_STEPS}, "
        f"save_checkpoints_steps={CHECKPOINT_STEPS}, step_delay_s={STEP_DELAY_S})",
        "tb.cancel()\nprint(json.dumps(probe))",
    ])  # fmt: skip


def open_notebook(page: Any, lab: Lab) -> None:
    """Open the notebook in JupyterLab; wait for its cells and an idle kernel."""
    page.goto(lab.notebook_url(NAME))
    page.wait_for_function(
        f"() => document.querySelectorAll('{CELLS}').length === 5", timeout=OPEN_TIMEOUT_S * 1000
    )
    deadline = time.monotonic() + OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            for s in lab.api("GET", "/api/sessions").json():
                if s["path"].endswith(NAME) and s["kernel"]["execution_state"] == "idle":
                    return
        time.sleep(0.5)
    raise AssertionError(f"no idle kernel for {NAME} in {OPEN_TIMEOUT_S}s")


def open_tensorboard(page: Any, panel: Any, app_id: str) -> tuple[Any, list[str]]:
    """Click the panel's link: TensorBoard's tab, and the PUTs its charts sent (status, url)."""
    link = panel.locator('a[data-testid="tensorboard"]')
    link.wait_for(timeout=LINK_TIMEOUT_S * 1000)
    href = link.get_attribute("href") or ""
    assert f"/proxy/{app_id}/pages/tensorboard/" in href and "user.name=" in href, href
    assert href.endswith("#timeseries"), href  # the scalars, not the first dashboard with data
    with page.context.expect_page() as new_tab:
        link.click()
    tb = new_tab.value
    puts: list[str] = []
    tb.on("response", lambda r: puts.append(f"{r.request.method} {r.status} {r.url}"))
    tb.wait_for_load_state("load", timeout=120_000)
    assert f"/proxy/{app_id}/" in tb.url and "#timeseries" in tb.url, tb.url
    return tb, puts


def wait_for_loss(tb: Any) -> float:
    """Wait until TensorBoard lists the run's ``loss`` scalar (reloading now and then); when."""
    card = tb.locator("scalar-card").filter(has=tb.locator(".tag", has_text="loss"))
    deadline = time.monotonic() + LOSS_TIMEOUT_S
    attempt = 0
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            # as a user would: the cards draw only when scrolled to, "dnn/..." groups come first;
            # no filter box yet: TensorBoard has no data, so reload soon rather than wait
            tb.locator("input[placeholder='Filter tags (regex)']").fill("^loss$", timeout=10_000)
            card.first.wait_for(state="visible", timeout=20_000)
            return time.time()
        attempt += 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        tb.screenshot(path=str(ARTIFACTS / f"tensorboard-attempt-{attempt}.png"))
        print(f"no loss card yet (attempt {attempt}): {tb.url} {tb.title()!r}")
        tb.reload(wait_until="load")
    raise AssertionError(f"TensorBoard never listed loss in {LOSS_TIMEOUT_S}s")


def save_container_logs(sandbox: Any, skein_client: Any, app_id: str) -> None:
    """Keep the application's container logs (why TensorBoard showed nothing) as artifacts:
    from the NodeManagers' log folders while they hold them, else as YARN aggregated them."""
    dest = ARTIFACTS / f"{app_id}-logs"
    dest.mkdir(parents=True, exist_ok=True)
    copied = False
    for node_dir in sorted((Path(sandbox.root) / "nm").glob(f"*/logs/{app_id}")):
        shutil.copytree(node_dir, dest / node_dir.parts[-3], dirs_exist_ok=True)
        copied = True
    if not copied:
        with contextlib.suppress(Exception):
            if str(skein_client.application_report(app_id).state) not in FINAL_STATES:
                skein_client.kill_application(app_id)  # ended, so YARN aggregates its logs
        with contextlib.suppress(Exception):
            time.sleep(10)
            proc = subprocess.run(["yarn", "logs", "-applicationId", app_id],
                                  capture_output=True, text=True, timeout=120)  # fmt: skip
            (dest / "aggregated.log").write_text(proc.stdout + proc.stderr)
    for log in sorted(f for f in dest.rglob("*") if f.name in ("stderr", "aggregated.log")):
        text = log.read_text(errors="replace")
        sections = re.findall(r"LogType:(stderr|\S+\.log)\n(.*?)End of LogType", text, re.S)
        for name, body in sections or [(log.name, text)]:
            print(f"--- {log.relative_to(dest)}: {name} (tail)\n{body[-2000:]}")


def percentiles(values: list[float]) -> str:
    if not values:
        return "no samples"
    s = sorted(values)
    return (f"median {statistics.median(s):.2f}, p90 {s[int(0.9 * (len(s) - 1))]:.2f}, "
            f"min {s[0]:.2f}, max {s[-1]:.2f} over {len(s)}")  # fmt: skip


def print_figures(page: Any, cell: Any, lab_probe: dict) -> None:
    drawn = page.evaluate("() => window.tfyDrawn || {}")
    delays = [drawn[s] / 1000 - t for s, t in lab_probe["t"].items() if s in drawn and t]
    print(f"progress delay (step t in the container -> drawn in the panel), s: "
          f"{percentiles(delays)}")  # fmt: skip
    sizes = [float(b) for b in lab_probe["bytes"]]
    print(f"bytes per update (2 tasks, real run): {percentiles(sizes)}; total {sum(sizes):.0f}")
    history = [float(b) for b in lab_probe["history"]]
    print(f"bytes per loss-history message: {percentiles(history)}; total {sum(history):.0f}")


def test_tensorboard_link_opens_the_runs_scalars_through_the_rm_proxy(
    page: Any, lab: Lab, panel_apps: list[str], sandbox: Any, skein_client: Any
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1600})
    write_notebook(lab)
    open_notebook(page, lab)
    for i in range(4):
        cell = run_cell(page, i)
    panel, app_id = panel_of(cell, panel_apps)
    panel.evaluate(OBSERVE_JS)
    tb, puts = open_tensorboard(page, panel, app_id)
    t_page = time.time()
    try:
        t_loss = wait_for_loss(tb)
    except AssertionError:
        save_container_logs(sandbox, skein_client, app_id)
        raise
    finally:
        print("\n".join(p for p in puts if "PUT" in p)[:3000])
    tb.wait_for_timeout(3000)  # let the card draw its line
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tb.screenshot(path=str(SCREENSHOTS / "tensorboard.png"))
    body = tb.locator("body").inner_text()
    assert "TensorBoard" in tb.title() or "TensorBoard" in body, tb.title()
    # the charts' data came through the proxy as the shim's PUTs, and succeeded
    ok = [p for p in puts if p.startswith("PUT 200 ") and f"/proxy/{app_id}/" in p]
    assert any("timeSeries" in p for p in ok), puts
    assert not [p for p in puts if p.startswith("PUT ") and not p.startswith("PUT 200")], puts
    print(f"\n{app_id}: TensorBoard page loaded, loss listed {t_loss - t_page:.1f}s later; "
          f"{len(ok)} PUTs answered 200")  # fmt: skip
    # Seen what it came for, the test cancels the run rather than wait out its training
    # (a minute and a half) and TensorBoard's 30 s after it: how a run with TensorBoard
    # ends by itself is test_tensorboard's. The panel shows the end; then the kernel's probe.
    out = run_cell(page, 4).locator(".jp-OutputArea-output").first.inner_text()
    page.wait_for_function(
        "(el) => ['FINISHED', 'FAILED', 'KILLED'].includes(el.getAttribute('data-app-state'))",
        arg=panel.element_handle(), timeout=RUN_TIMEOUT_S * 1000,
    )  # fmt: skip
    assert panel.get_attribute("data-app-state") == "KILLED"
    print_figures(page, cell, json.loads(out))


def synthetic_update_bytes(n: int, updates: int = 30) -> list[int]:
    """The bytes a panel sends per update of a synthetic ``n``-task run (no kernel): the
    state update and the loss-history message together."""
    sizes: list[int] = []

    class Probe:
        def advance(self) -> None:
            raise AssertionError("not polled")

        tensorboard_url = None
        last_status = None

    panel = RunPanel(Probe(), start=False)  # type: ignore[arg-type]
    sent: list[int] = []
    panel._send = lambda msg, buffers=None: sent.append(len(json.dumps(msg)))
    for u in range(updates):
        d = status(n, u)
        d.update(pending=[], failure=None, summary=None)
        panel.update(RunStatus.from_dict(d))
        sizes.append(sum(sent))  # the state update and its loss-history message
        sent.clear()
    panel.close()
    return sizes[5:]


def test_bytes_per_update_for_8_48_200_tasks() -> None:
    """Printed: the JSON size of each panel update for synthetic 8/48/200-task runs."""
    for n in (8, 48, 200):
        sizes = synthetic_update_bytes(n)
        assert sizes and all(s > 0 for s in sizes), sizes
        figures = percentiles([float(s) for s in sizes])
        print(f"\nbytes per update, {n} tasks (synthetic): {figures}")
