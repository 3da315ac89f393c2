"""A session's sandbox and the cleanup of its applications: what the pytest plugin's
fixtures and the benchmarks share, with no dependency on pytest.

:func:`session_sandbox` brings the sandbox at ``TFYARN_SANDBOX_DIR`` (or the
default folder) up, or reuses it when it is already healthy, and exports its client
environment into ``os.environ`` while it is held. A sandbox it started itself is
stopped at the end unless ``TFYARN_KEEP_SANDBOX`` is set; one that was already
running is left running. :func:`suite_sandbox` gives a suite that needs a shaped
sandbox the session's when its shape will do, else one of the suite's own.
:func:`skein_driver` is a skein client on a sandbox (the session's, or a suite's own
shaped one), its driver's log in the sandbox's log folder, closed at the end.
:class:`AppTracker` remembers the applications a test submits and kills those still
running at its end.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tfyarn_sandbox.config import default_root
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import CONTAINER_JVM_OPTIONS

#: YARN application states after which nothing more happens.
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


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


@contextlib.contextmanager
def session_sandbox(root: Path | None = None) -> Iterator[Sandbox]:
    """The sandbox cluster, ready, with its env exported while held."""
    box = Sandbox(root or default_root())
    started_here = not box.status()["ready"]
    env = box.start()
    try:
        with exported(env):
            yield box
    finally:
        if started_here and not os.environ.get("TFYARN_KEEP_SANDBOX"):
            box.stop()


@contextlib.contextmanager
def skein_driver(box: Sandbox, name: str) -> Iterator[Any]:
    """A skein client (and its Java driver) on ``box``, whose environment is exported;
    the driver logs to ``<log dir>/skein-driver-<name>.log``, starts with the containers' JVM
    options and is closed at the end."""
    import skein  # the [pytest] extra: the plugin's and the suites' clients

    log = str(box.log_dir / f"skein-driver-{name}.log")
    client = skein.Client(log=log, java_options=CONTAINER_JVM_OPTIONS.split())
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def shaped_sandbox(
    root: Path, shape: Shape, *, reuse: bool = False, timeout: float = 300.0, export: bool = True
) -> Iterator[Sandbox]:
    """A sandbox of ``shape`` at ``root`` for one suite: started (or, with ``reuse``, taken
    as it is when already healthy there), its client environment exported while held
    unless ``export`` is false; one started here is stopped at the end and its cluster
    data (HDFS blocks, NodeManager caches) removed, its logs kept."""
    box = Sandbox(root, shape=shape)
    reused = reuse and box.status()["ready"]
    t0 = time.monotonic()
    env = box.start(timeout=timeout)
    flags = " ".join(shape.flags()) or "(default shape)"
    print(f"sandbox {flags} {'reused' if reused else 'ready'} in "
          f"{time.monotonic() - t0:.1f}s at {root}")  # fmt: skip
    try:
        with exported(env) if export else contextlib.nullcontext():
            yield box
    finally:
        if not reused:  # its cluster data (some 12 GB) would stay in pytest's folders
            box.stop(discard_data=True)


@contextlib.contextmanager
def suite_sandbox(
    root: Path, shape: Shape, *, timeout: float = 300.0, export: bool = True
) -> Iterator[Sandbox]:
    """The sandbox a suite that needs ``shape`` runs on: the session's own (at
    ``TFYARN_SANDBOX_DIR``) when it is up and its shape covers ``shape``, so the suites
    of a test run share one cluster and one copy of the environment on it (CI starts
    its second lane's sandbox with ``--gpus 2`` for this); else one of
    ``shape`` at ``root``, as :func:`shaped_sandbox` starts and removes it.

    The session's sandbox is left running, its environment exported while held unless
    ``export`` is false.
    """
    session = Sandbox(default_root())
    if session.current_shape().covers(shape) and session.status()["ready"]:
        flags = " ".join(session.current_shape().flags()) or "(default shape)"
        print(f"sandbox {flags}: the session's, at {session.root}, for a suite asking "
              f"{' '.join(shape.flags())}")  # fmt: skip
        with exported(session.env()) if export else contextlib.nullcontext():
            yield session
        return
    with shaped_sandbox(root, shape, timeout=timeout, export=export) as box:
        yield box


class AppTracker:
    """Submits skein applications for one test and remembers their ids.

    ``cleanup`` kills whichever of them is not in a final state, so a failing
    (or forgetful) test does not leave containers holding the cluster.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.ids: list[str] = []

    def submit(self, spec: Any) -> str:
        app_id = self.client.submit(spec)
        self.ids.append(app_id)
        return app_id

    def submit_and_connect(self, spec: Any) -> Any:
        """Submit and wait for the application master; return its ApplicationClient."""
        return self.client.connect(self.submit(spec))

    def wait(self, app_id: str, states: Iterable[str] = FINAL_STATES, timeout: float = 60.0) -> Any:
        """Poll until the application is in one of ``states``; return its report."""
        wanted = {str(s) for s in states}
        deadline = time.monotonic() + timeout
        while True:
            report = self.client.application_report(app_id)
            if str(report.state) in wanted:
                return report
            if str(report.state) in FINAL_STATES:
                raise AssertionError(
                    f"{app_id} ended {report.state}/{report.final_status} while waiting "
                    f"for {sorted(wanted)}: {report.diagnostics}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{app_id} still {report.state} after {timeout}s (wanted {sorted(wanted)})"
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
def killing_leftovers(client: Any) -> Iterator[AppTracker]:
    """An :class:`AppTracker` whose running applications are killed on exit."""
    tracker = AppTracker(client)
    try:
        yield tracker
    finally:
        tracker.cleanup()
