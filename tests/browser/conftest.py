"""A real JupyterLab (and Notebook 7) and a headless Chromium for the panel's browser tests.

``lab`` starts ``jupyter lab`` from the project's venv on a free localhost
port with a random token, serving a temporary copy of ``notebooks/``; the same
server serves Notebook 7's pages (``notebook`` package) at ``/notebooks/``; it
inherits ``os.environ`` after the ``sandbox`` fixture exported the cluster's
client environment, so its kernels reach the sandbox YARN. ``browser`` is
Debian's Chromium (``/usr/bin/chromium``) driven by Playwright; no browser is
ever downloaded. ``page`` is a fresh browser page per test; on teardown it
shuts the test's kernels down and kills, through skein, every application
whose id the test recorded in ``panel_apps`` or any panel on the page shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "build" / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
SERVER_START_TIMEOUT_S = 180.0

#: JupyterLab (and Notebook 7) settings for a quiet, test-friendly UI: every cell stays in the
#: DOM (no windowing) and no news / update toasts cover the page.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def pytest_configure(config: pytest.Config) -> None:
    # Also registered in pyproject.toml; repeated here so the folder runs on its own.
    config.addinivalue_line("markers", "browser: needs JupyterLab and Chromium")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab server."""

    url: str
    token: str
    root: Path
    log: Path

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """A notebook of code ``cells`` on the venv's ``python3`` kernel, in the served root."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}  # fmt: skip
        nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        nbformat.write(nb, self.root / name)
        return name

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(
            method,
            f"{self.url}{path}",
            headers={"Authorization": f"token {self.token}"},
            timeout=30,
            **kwargs,
        )

    def notebook_url(self, name: str) -> str:
        """The notebook alone in a workspace of its own (no tabs restored from other tests)."""
        workspace = Path(name).stem
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"

    def notebook7_url(self, name: str) -> str:
        """The same notebook in Notebook 7's single-document page."""
        return f"{self.url}/notebooks/{name}?token={self.token}"

    def shutdown_kernels(self) -> None:
        """Stop every session's kernel (its exit cancels the runs it launched)."""
        with contextlib.suppress(Exception):
            for session in self.api("GET", "/api/sessions").json():
                with contextlib.suppress(Exception):
                    self.api("DELETE", f"/api/sessions/{session['id']}")

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-chars:]
        return ""


@pytest.fixture(scope="session")
def lab(sandbox: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab serving a temporary copy of ``notebooks/``, stopped at the end."""
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = base / "settings"
    for rel, value in LAB_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port = _free_port()
    token = secrets.token_hex(24)
    log = base / "jupyter-lab.log"
    venv_bin = Path(sys.executable).parent
    cmd = [
        str(venv_bin / "jupyter"), "lab", "--no-browser",
        f"--port={port}", "--ip=127.0.0.1", "--port-retries=0",
        "--allow-root", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--JupyterNotebookApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    # The sandbox fixture exported the cluster's client environment into os.environ.
    env = dict(os.environ)
    env["JUPYTER_RUNTIME_DIR"] = str(base / "runtime")
    # the kernels' temporary files (the notebooks' mkdtemp model dirs) stay in pytest's folder
    (base / "tmp").mkdir()
    env["TMPDIR"] = str(base / "tmp")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, log=log)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited {proc.returncode}:\n{server.log_tail()}")
            with contextlib.suppress(requests.RequestException):
                if server.api("GET", "/api/status").status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab not up in {SERVER_START_TIMEOUT_S}s")
            time.sleep(0.5)
        yield server
    finally:
        server.shutdown_kernels()
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium under Playwright's sync API, one for the whole session.

    Playwright's sync API runs an event loop in this thread while it is open, so
    a second ``sync_playwright()`` in the same session fails ("Sync API inside the
    asyncio loop"): every browser test takes its pages from this one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def browser(lab: Lab, chromium: Any) -> Any:
    """The session's Chromium, once a JupyterLab for it to open is running."""
    return chromium


@pytest.fixture
def panel_apps() -> list[str]:
    """Application ids a test read from its panels: killed at teardown if still alive."""
    return []


@pytest.fixture
def page(
    request: pytest.FixtureRequest,
    browser: Any,
    lab: Lab,
    skein_client: Any,
    panel_apps: list[str],
) -> Iterator[Any]:
    """A fresh page; afterwards its kernels stop and its applications are killed."""
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    context.set_default_timeout(60_000)
    pg = context.new_page()
    try:
        yield pg
    finally:
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(Exception):
                pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-failure.png"))
            with contextlib.suppress(OSError):
                shutil.copy(lab.log, ARTIFACTS / f"{request.node.name}-jupyter-lab.log")
            print(f"jupyter lab log tail:\n{lab.log_tail()}", file=sys.stderr)
        ids = list(panel_apps)
        with contextlib.suppress(Exception):
            ids += pg.locator(".tfyarn-panel").evaluate_all(
                "els => els.map(e => e.getAttribute('data-app-id') || '')"
            )
        lab.shutdown_kernels()
        with contextlib.suppress(Exception):
            context.close()
        for app_id in dict.fromkeys(i for i in ids if i.startswith("application_")):
            try:
                if str(skein_client.application_report(app_id).state) not in FINAL_STATES:
                    skein_client.kill_application(app_id)
            except Exception as exc:  # teardown must not hide the test's own failure
                print(f"could not kill {app_id}: {exc}", file=sys.stderr)
