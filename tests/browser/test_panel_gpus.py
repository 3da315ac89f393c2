"""A task's GPUs in the live panel, in JupyterLab, on a ``--gpus 2`` sandbox (issue 24).

The default sandbox schedules no GPUs, so this module starts one of its own (not
exported: the lab and the other suites keep the default one). The notebook's first
cell points its kernel at it, as a user's ``eval "$(tfyarn-sandbox env)"`` would;
then ``%%tfyarn --chief 1G/1/1`` asks one ``yarn.io/gpu`` for the chief.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from tfyarn_sandbox.fixtures import suite_sandbox
from tfyarn_sandbox.shapes.shape import Shape

from .test_panel import (
    ARTIFACTS,
    RUN_TIMEOUT_S,
    open_notebook,
    panel_of,
    row,
    run_cell,
    screenshot,
    wait_for_snapshot,
)

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

GPU_LAUNCH = (
    "%%tfyarn --chief 1G/1/1 --evaluator 1G/1 --queue ml-gpu --gpu chief "
    "--name browser-gpus --var on_gpu\n"
    "def experiment_fn():\n"
    "    return cancer.experiment(gpu_dir, max_steps=20000, step_delay_s=0.02)"
)


@pytest.fixture(scope="module")
def gpu_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The client environment of a ``--gpus 2`` sandbox: the session's when it has two GPUs
    and nothing else (CI's second lane), else one of this module's own."""
    root = tmp_path_factory.mktemp("panel-gpus") / "box"
    with suite_sandbox(root, Shape(gpus=2), export=False) as box:
        yield box.env()


def test_a_task_row_shows_the_gpus_yarn_reserved_for_it_beside_its_node(
    page: Any, lab: Any, gpu_env: dict[str, str]
) -> None:
    name = lab.write_notebook("gpus.ipynb", [
        f"import os\n\nos.environ.update({gpu_env!r})",
        "%load_ext tfyarn_jupyter",
        'import tempfile\n\nimport cancer\n\ngpu_dir = tempfile.mkdtemp(prefix="browser-gpu-")',
        GPU_LAUNCH,
        "on_gpu.cancel()",
    ])  # fmt: skip
    t0 = time.monotonic()
    open_notebook(page, lab, name)
    for i in range(4):
        cell = run_cell(page, i)
    # Not the page fixture's list: its teardown asks the default sandbox, not this one.
    panel, app_id = panel_of(cell, [])
    wait_for_snapshot(
        panel,
        lambda s: s["tasks"].get("chief:0") == "running" and "evaluator:0" in s["tasks"],
        RUN_TIMEOUT_S,
        "the chief running",
    )
    chief, evaluator = row(panel, "chief:0"), row(panel, "evaluator:0")
    count = chief.locator('[data-testid="gpu-count"]')
    count.wait_for(timeout=30_000)
    shot = ARTIFACTS / "panel-gpus.png"
    screenshot(panel, shot)
    print(f"{app_id}: chief running with its GPU shown {time.monotonic() - t0:.0f}s after "
          f"opening; screenshot {shot}")  # fmt: skip
    assert count.inner_text() == "1 GPU"
    assert chief.locator('[data-testid="gpu-badge"]').inner_text() == "gpu"
    assert evaluator.locator('[data-testid="gpu-count"]').count() == 0
    run_cell(page, 4)  # cancel: nothing keeps the GPU once the test ends
    wait_for_snapshot(panel, lambda s: s["appState"] == "KILLED", 120, "the run cancelled")
