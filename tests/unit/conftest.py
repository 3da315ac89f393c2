"""Fixtures of the unit tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest


@pytest.fixture
def fresh_python() -> Callable[[str], str]:
    """``fresh_python(code)``: ``code`` run in a new interpreter of this venv, its output
    returned; the test fails with its stderr if it fails. For what an import loads, which
    the test's own process may have loaded already."""

    def run(code: str) -> str:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run
