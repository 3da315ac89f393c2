"""Shared fixtures: the sandbox cluster, one skein client, and application cleanup.

Everything under ``tests/integration`` is marked ``sandbox``, so
``pytest -m "not sandbox"`` runs the pure tests on a machine without Java.

``sandbox`` brings the sandbox at ``TFYARN_SANDBOX_DIR`` (or the default
folder) up once per session, or reuses it when it is already healthy, and
exports its client environment into ``os.environ`` for the session. A sandbox
the fixture started itself is stopped at the end unless
``TFYARN_KEEP_SANDBOX`` is set; one that was already running is left running.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tfyarn_jupyter.sandbox import Sandbox, default_root

_INTEGRATION = Path(__file__).parent / "integration"
#: YARN application states after which nothing more happens.
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEGRATION in Path(item.path).parents:
            item.add_marker(pytest.mark.sandbox)


@contextlib.contextmanager
def exported(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` in ``os.environ``; put back what was there (or nothing) afterwards."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """The session's sandbox cluster, ready, with its env exported."""
    box = Sandbox(default_root())
    started_here = not box.status()["ready"]
    env = box.start()
    try:
        with exported(env):
            yield box
    finally:
        if started_here and not os.environ.get("TFYARN_KEEP_SANDBOX"):
            box.stop()


@pytest.fixture(scope="session")
def skein_client(sandbox: Sandbox):
    """One skein client (and its Java driver) for the whole session."""
    import skein

    client = skein.Client(log=str(sandbox.log_dir / "skein-driver-tests.log"))
    try:
        yield client
    finally:
        client.close()


class AppTracker:
    """Submits skein applications for one test and remembers their ids.

    ``cleanup`` kills whichever of them is not in a final state, so a failing
    (or forgetful) test does not leave containers holding the cluster.
    """

    def __init__(self, client) -> None:
        self.client = client
        self.ids: list[str] = []

    def submit(self, spec) -> str:
        app_id = self.client.submit(spec)
        self.ids.append(app_id)
        return app_id

    def submit_and_connect(self, spec):
        """Submit and wait for the application master; return its ApplicationClient."""
        return self.client.connect(self.submit(spec))

    def wait(self, app_id: str, states: Iterable[str] = FINAL_STATES, timeout: float = 60.0):
        """Poll until the application is in one of ``states``; return its report."""
        states = {str(s) for s in states}
        deadline = time.monotonic() + timeout
        while True:
            report = self.client.application_report(app_id)
            if str(report.state) in states:
                return report
            if str(report.state) in FINAL_STATES:
                raise AssertionError(
                    f"{app_id} ended {report.state}/{report.final_status} while waiting "
                    f"for {sorted(states)}: {report.diagnostics}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{app_id} still {report.state} after {timeout}s (wanted {sorted(states)})"
                )
            time.sleep(0.2)

    def cleanup(self) -> list[str]:
        """Kill every tracked application still running; return the ids killed."""
        killed = []
        for app_id in self.ids:
            try:
                state = str(self.client.application_report(app_id).state)
            except Exception:  # the report itself failed: try the kill anyway
                state = "UNKNOWN"
            if state not in FINAL_STATES:
                with contextlib.suppress(Exception):
                    self.client.kill_application(app_id)
                    killed.append(app_id)
        return killed


@contextlib.contextmanager
def killing_leftovers(client) -> Iterator[AppTracker]:
    """An :class:`AppTracker` whose running applications are killed on exit."""
    tracker = AppTracker(client)
    try:
        yield tracker
    finally:
        tracker.cleanup()


@pytest.fixture
def apps(skein_client) -> Iterator[AppTracker]:
    """Submit through this (``apps.submit(spec)``) so leftovers get killed after the test."""
    with killing_leftovers(skein_client) as tracker:
        yield tracker
