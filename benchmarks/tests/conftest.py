"""Shared by the benchmarks' tests: loading a payload as a container would."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import cloudpickle
import pytest

#: A fresh interpreter where neither ``benchmarks`` nor ``tfyarn_jupyter`` can be imported.
LOAD = (
    "import sys; sys.modules['benchmarks'] = sys.modules['tfyarn_jupyter'] = None; "
    "import cloudpickle; fn = cloudpickle.load(open(sys.argv[1], 'rb')); print(fn)"
)


@pytest.fixture
def load_elsewhere(tmp_path) -> Callable[[Any], str]:
    """Pickle a function here and load it where no ``benchmarks`` exists; what it printed."""

    def load(fn: Any) -> str:
        payload = tmp_path / "experiment.pkl"
        payload.write_bytes(cloudpickle.dumps(fn))
        proc = subprocess.run(
            [sys.executable, "-c", LOAD, str(payload)],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    return load
