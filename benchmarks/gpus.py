"""GPUs as YARN counts them: what asking for ``yarn.io/gpu`` costs a launch (issue 24).

On a sandbox of its own started with ``--gpus 2`` (the default one has no GPUs), each
repetition launches the same run twice, interleaved: a chief on the ``gpu`` partition
asking 1 GPU beside an evaluator, and the same chief asking none (its node label only).
Figures: ``submit()`` -> every task RUNNING for each, their paired ratio (YARN's scheduler
counts one more resource: about 1.0 expected), and the client's queue check with and
without GPUs (with GPUs it also reads the ResourceManager's node list). The first launch
(the environment's upload into this sandbox's HDFS) is not counted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import skein
from tfyarn_sandbox.fixtures import suite_sandbox
from tfyarn_sandbox.shapes.shape import Shape

from tfyarn_jupyter.core.spec import NodeLabel, TaskSpec
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.run import launch as runs

from .core import CANCER, Bench
from .stats import interleave, paired_ratios

SECTION = "GPUs as a YARN resource (sandbox --gpus 2)"
VARIANTS = {"1 GPU": 1, "no GPU": 0}
RUNNING_TIMEOUT_S = 600.0


def _experiment(model_dir: str) -> Callable[[], Any]:
    """A Keras run long enough to be running when measured (it is cancelled then)."""
    spec = importlib.util.spec_from_file_location("cancer", CANCER)
    assert spec is not None and spec.loader is not None
    cancer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cancer)
    return lambda: cancer.keras_experiment(model_dir, epochs=40, steps_per_epoch=2500)


def _to_running(bench: Bench, client: skein.Client, gpus: int, name: str) -> tuple[float, float]:
    """One launch: (submit() -> every task RUNNING, the queue check's seconds)."""
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-bench/{name}")
    specs = {"chief": TaskSpec("1G", 1, label=NodeLabel.GPU, gpus=gpus),
             "evaluator": TaskSpec("1G", 1)}  # fmt: skip
    t0 = time.monotonic()
    run = runs.submit(_experiment(model_dir), specs, name=name, queue="ml-gpu",
                      skein_client=client, files={"cancer.py": str(CANCER)})  # fmt: skip
    bench.runs.append(run)
    try:
        deadline = t0 + RUNNING_TIMEOUT_S
        while True:
            st = run.advance()
            if all(t.state == "running" for t in st.tasks):
                break
            if st.ended or time.monotonic() > deadline:
                raise RuntimeError(f"{run.app_id} never had every task running: {st.pending}")
            time.sleep(0.25)
        return time.monotonic() - t0, run.phases.get("queue_check", 0.0)
    finally:
        run.cancel()


def gpus(bench: Bench) -> None:
    root = bench.tmp / "gpus-sandbox"
    with suite_sandbox(root, Shape(gpus=2)), contextlib.closing(skein.Client(log=False)) as client:
        bench.log("gpus: first launch (uploads the environment into this sandbox), not counted")
        _to_running(bench, client, 1, "tfyarn-bench-gpu-warmup")
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        checks: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for rep, variant in interleave(list(VARIANTS), bench.cfg.reps):
            name = f"tfyarn-bench-gpu-{rep}-{VARIANTS[variant]}"
            running, check = _to_running(bench, client, VARIANTS[variant], name)
            bench.log(f"  {variant}: every task running {running:.1f}s after submit(), "
                      f"queue check {check * 1000:.0f} ms")  # fmt: skip
            times[variant].append(running)
            checks[variant].append(check)
    for variant in VARIANTS:
        bench.row(SECTION, f"{variant}: submit -> all running", "s", times[variant],
                  "chief on the gpu partition + evaluator, warm")  # fmt: skip
        bench.row(SECTION, f"{variant}: queue check", "ms", [c * 1000 for c in checks[variant]],
                  "Run.phases['queue_check']")  # fmt: skip
    bench.row(SECTION, "1 GPU / no GPU: submit -> all running", "x",
              paired_ratios(times["1 GPU"], times["no GPU"]), "paired per repetition")  # fmt: skip
