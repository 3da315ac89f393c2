"""Fixtures for the run_on_yarn integration tests (the sandbox ones live in tests/conftest.py)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes import hosts as sandbox_hosts
from tfyarn_sandbox.shapes.shape import Shape

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

#: Every YARN application state, for "did anything get submitted?" checks.
ALL_APP_STATES = [
    "NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED",
]  # fmt: skip


@pytest.fixture(scope="session")
def cancer():
    """The quickstart's model module, imported as ``cancer`` (as the notebook does)."""
    if str(NOTEBOOKS) not in sys.path:
        sys.path.insert(0, str(NOTEBOOKS))
    return importlib.import_module("cancer")


@pytest.fixture(scope="session")
def cancer_files(cancer):
    """``files=`` that ships the model module to the containers, as in the seed's README."""
    return {"cancer.py": cancer.__file__}


@pytest.fixture
def app_names(skein_client):
    """``app_names()``: the names of every application the ResourceManager knows."""

    def names() -> set[str]:
        return {a.name for a in skein_client.get_applications(states=ALL_APP_STATES)}

    return names


@pytest.fixture
def build_wheel(tmp_path):
    """``build_wheel(dist, module, source)``: a local pure-Python wheel, built offline."""

    def build(dist: str, module: str, source: str) -> Path:
        src = tmp_path / f"{dist}-src"
        (src / module).mkdir(parents=True)
        (src / module / "__init__.py").write_text(textwrap.dedent(source))
        (src / "pyproject.toml").write_text(
            textwrap.dedent(
                f"""\
                [build-system]
                requires = ["hatchling"]
                build-backend = "hatchling.build"

                [project]
                name = "{dist}"
                version = "0.1"

                [tool.hatch.build.targets.wheel]
                packages = ["{module}"]
                """
            )
        )
        out = tmp_path / "wheels"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
             "--no-index", "--disable-pip-version-check", "-w", str(out), str(src)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (wheel,) = out.glob("*.whl")
        return wheel

    return build


@pytest.fixture
def runs() -> Iterator[list[Any]]:
    """Append each ``Run`` a test starts; any still going when the test ends is cancelled."""
    started: list[Any] = []
    yield started
    for run in started:
        try:
            if not run.source.ended:
                run.cancel()
        except Exception as exc:  # teardown must not hide the test's own failure
            print(f"could not cancel {run}: {exc}", file=sys.stderr)


@pytest.fixture
def launch(runs, cancer_files):
    """``launch(fn, specs, prefix, **options)``: submit with the model module shipped, a
    unique name from ``prefix``; cancelled at the end of the test if still going."""
    from tfyarn_jupyter import submit

    from .helpers import unique

    def start(fn: Any, specs: dict, prefix: str, **options: Any) -> Any:
        options.setdefault("files", cancer_files)
        run = submit(fn, specs, name=unique(prefix), **options)
        runs.append(run)
        return run

    return start


#: The production shape the secure suite runs on.
SECURE_SHAPE = Shape(kerberos=True, ha=True, viewfs=True, hosts=True)


@pytest.fixture(scope="session")
def secure_box(tmp_path_factory) -> Iterator[Sandbox]:
    """The shaped sandbox (``--kerberos --ha --viewfs --hosts``), ready for the session.

    A box already running at ``TFYARN_SECURE_SANDBOX_DIR`` is reused and left running;
    one started here is stopped at the end and checked to have taken back everything
    its start added (processes, ``/etc/hosts`` lines, loopback addresses).
    """
    if os.geteuid() != 0:
        pytest.fail("the secure suite needs root (a KDC, Unix accounts, loopback addresses)")
    given = os.environ.get("TFYARN_SECURE_SANDBOX_DIR")
    root = Path(given) if given else tmp_path_factory.mktemp("secure")
    box = Sandbox(root, shape=SECURE_SHAPE)
    reused = bool(given) and box.status()["ready"]
    caches = set(_ticket_caches())
    t0 = time.monotonic()
    box.start(timeout=300)
    how = "reused" if reused else "ready"
    flags = " ".join(SECURE_SHAPE.flags())
    print(f"secure sandbox ({flags}) {how} in {time.monotonic() - t0:.1f}s")
    try:
        yield box
    finally:
        if not reused:
            state = box._state() or {}
            box.stop(discard_data=True)
            _assert_all_gone(box, state)
            # The clients' own ticket caches, named by this box's keytabs: never used again.
            for cache in set(_ticket_caches()) - caches:
                cache.unlink(missing_ok=True)


def _ticket_caches() -> list[Path]:
    """The ticket caches ``hadoop.kerberos.keytab_cache`` names, in this machine's /tmp."""
    return list(Path(tempfile.gettempdir()).glob(f"tfyarn_krb5cc_{os.getuid()}_*"))


def _assert_all_gone(box: Sandbox, state: dict) -> None:
    for pid in (state.get("pids") or {}).values():
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie", pid
    assert box._sandbox_processes() == []
    assert sandbox_hosts.marker(box.root) not in sandbox_hosts.HOSTS_FILE.read_text()
    ours = {h["address"] for h in (state.get("hosts") or {}).values()}
    assert ours and not ours & set(sandbox_hosts.loopback_addresses())
