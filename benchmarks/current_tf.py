"""Current TensorFlow's figures: Keras per strategy on YARN against a local process,
and how long a trainer's progress takes to show in ``Run.status()``.

Runs in whichever environment runs the bench (TensorFlow 2.15 or 2.21); on
2.16 and later the distributed strategies train with tf-keras, as the launch
requires. The chief's rate is the one its own progress reports give (steps
over the last 2 s window), after the first epoch; the local baseline is the
same model trained by ``fit`` in a fresh process with the default strategy.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from tfyarn_jupyter.core import program
from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.run import launch as runs

from .core import CANCER, Bench

SMALL = TaskSpec("1G", 1)
TOPOLOGIES = {
    "default (chief)": {"chief": SMALL},
    "multi_worker_mirrored (chief + worker)": {"chief": SMALL, "worker": SMALL},
    "parameter_server (chief + worker + ps)": {
        "chief": SMALL, "worker": SMALL, "ps": TaskSpec("512M", 1)},
}  # fmt: skip
LOCAL = """
import json, shutil, sys, time, tempfile
sys.path.insert(0, sys.argv[1])
import cancer
exp = cancer.keras_experiment(tempfile.mkdtemp(), epochs=1, steps_per_epoch=int(sys.argv[2]))
exp.model.fit(exp.input_data_fn(), epochs=1, steps_per_epoch=20, verbose=0)  # warm up
t0 = time.perf_counter()
exp.model.fit(exp.input_data_fn(), epochs=1, steps_per_epoch=int(sys.argv[2]), verbose=0)
print(json.dumps({"steps_per_s": int(sys.argv[2]) / (time.perf_counter() - t0)}))
shutil.rmtree(exp.model_dir, ignore_errors=True)
"""


def local_rate(steps: int) -> float:
    out = subprocess.run([sys.executable, "-c", LOCAL, str(CANCER.parent), str(steps)],
                         capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    return float(json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"])


def on_yarn(bench: Bench, name: str, specs: dict, epochs: int, steps: int) -> dict[str, Any]:
    """The chief's reported rates and the delays from a report to its first sight."""
    import cancer

    model_dir = filesystem.qualify(f"{filesystem.home()}/.tfyarn/bench/keras-{uuid.uuid4().hex}")
    legacy = program.tensorflow_version() >= (2, 16) and len(specs) > 1  # type: ignore[operator]

    def experiment_fn():
        return cancer.keras_experiment(model_dir, epochs=epochs, steps_per_epoch=steps)

    run = runs.submit(experiment_fn, specs, files={"cancer.py": str(CANCER)},
                      name=f"tfyarn-bench-keras-{name.split()[0]}",
                      env={"TF_USE_LEGACY_KERAS": "1"} if legacy else {})  # fmt: skip
    rates, delays, seen = [], [], None
    try:
        while not (st := run.advance()).ended:
            p = st.progress.get("chief:0")
            if p and p.get("t") != seen:
                seen = p["t"]
                delays.append(time.time() - p["t"])
                if p.get("step", 0) > steps and p.get("steps_per_s"):
                    rates.append(float(p["steps_per_s"]))
            time.sleep(0.25)
    finally:
        run.cancel()
        bench.hdfs_delete(filesystem.strip_scheme(model_dir))
    return {"final": st.app.final_status, "rates": rates, "delays": delays}


def current_tf(bench: Bench) -> None:
    sys.path.insert(0, str(CANCER.parent))
    tf = program.tensorflow_version()
    epochs, steps = (3, 100) if bench.cfg.smoke else (6, 200)
    sec = f"Keras on TensorFlow {tf[0]}.{tf[1]}" if tf else "Keras"
    local = [local_rate(steps) for _ in range(bench.cfg.reps)]
    bench.row(sec, "local fit, default strategy", "steps/s", local, f"{steps} steps, batch 32")
    delays: list[float] = []
    for name, specs in TOPOLOGIES.items():
        ratios = []
        for rep in range(bench.cfg.reps):
            got = on_yarn(bench, name, specs, epochs, steps)
            bench.log(f"{name} rep {rep + 1}: {got['final']}, {len(got['rates'])} rate reports")
            if got["final"] != "SUCCEEDED" or not got["rates"]:
                bench.failed(f"Keras {name} rep {rep + 1}: {got['final']}, no rates")
                continue
            ratios.append(statistics.median(got["rates"]) / local[rep])
            delays += got["delays"]
        bench.row(sec, f"{name}: chief steps/s / local", "x", ratios, "chief's own reports")
    bench.row(sec, "progress: report -> seen in Run.status()", "s", delays,
              "polled every 0.25 s; reports at most every 2 s")  # fmt: skip
