"""tf-yarn 0.7.0's driver, without tf-yarn: what it ships and what it imports."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


# Other tests imported the driver already; running it again as a script is the point.
@pytest.mark.filterwarnings("ignore:'benchmarks.tfyarn070_driver' found in sys.modules")
def test_its_experiment_ships_by_value_with_the_shared_step_hook(load_elsewhere):
    # Run as tf-yarn's venv runs it (``-m``): its functions live in an unimportable module.
    driver = runpy.run_module("benchmarks.tfyarn070_driver", run_name="tfyarn070_driver_main")
    driver["ship_by_value"]()
    fn = driver["experiment_fn_factory"]("cancer.py", "/model", 100, "/stats")
    assert fn.__code__.co_names.count("bench_experiment") == 1  # the shared hook, not a copy
    assert load_elsewhere(fn).startswith("<function experiment_fn_factory.<locals>.experiment_fn")


def test_it_imports_nothing_of_tfyarn_jupyter(tmp_path):
    # What tf-yarn's venv sees: a PYTHONPATH entry holding only the benchmarks package.
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "benchmarks").symlink_to(PACKAGE, target_is_directory=True)
    code = (
        "import sys; sys.modules['tfyarn_jupyter'] = None; "
        "import benchmarks.tfyarn070_driver as d; print(d.PREFIX.strip())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "path"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "TFYARN070"
