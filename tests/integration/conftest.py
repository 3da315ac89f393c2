"""Fixtures for the run_on_yarn integration tests (the sandbox ones live in tests/conftest.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
