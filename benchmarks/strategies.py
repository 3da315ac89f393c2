"""The benchmark model per strategy: what YARN and each strategy's communication cost a step.

The wide MLP of :mod:`.training` (tens of milliseconds a step here), a checkpoint at each
epoch's end, ``model_dir`` on ``hdfs://``, trained by ``fit`` in three topologies on YARN,
each against the same model trained locally by a fresh process with the default strategy,
interleaved in each repetition:

- one trainer (a chief alone: the default strategy);
- MultiWorkerMirrored (chief + worker: every step all-reduces the gradients of both);
- ParameterServer (chief + worker + ps: the chief coordinates, the worker trains, the
  variables live on the ps).

Per topology: steps/s on YARN / local (from the first step to the last epoch's end, on the
chief's own :func:`.training.step_clock`, and over the whole ``fit``), the seconds the saves
kept training waiting, and the per-step cost of the strategy: the chief's mean step on YARN
less the local one. On this machine the tasks of one run share its two cores with each other
and with the sandbox's daemons, so a distributed step also pays for the cores it shares; on
a cluster each task has its own.
"""

from __future__ import annotations

import time

import cloudpickle

from tfyarn_jupyter.core.spec import TaskSpec

from . import training
from .core import Bench
from .training import CHIEF, local_fit, stepping, yarn_fit

SECTION = "training speed per strategy: wide MLP, a checkpoint each epoch"
TOPOLOGIES: dict[str, dict[str, TaskSpec]] = {
    "one trainer (chief)": {"chief": CHIEF},
    "MultiWorkerMirrored (chief + worker)": {"chief": CHIEF, "worker": CHIEF},
    "ParameterServer (chief + worker + ps)": {
        "chief": CHIEF, "worker": CHIEF, "ps": TaskSpec("1G", 1)},
}  # fmt: skip


def mean_step_ms(side: dict[str, float]) -> float:
    """The mean of the steps after the first (the first traces the train function), in ms."""
    return 1000 * side["steps_s"] / max(side["steps"] - 1, 1)


def strategies(bench: Bench) -> None:
    """Each topology's figures against a local ``fit`` of the same model and steps."""
    cloudpickle.register_pickle_by_value(training)  # the experiment travels by value
    epochs, steps = 4, 40
    got: dict[str, list[float]] = {}
    for rep in range(bench.cfg.reps):
        local = local_fit(epochs, steps)
        figures = {"local: mean step after the first (ms)": mean_step_ms(local)}
        for name, specs in TOPOLOGIES.items():
            yarn = yarn_fit(bench, epochs, steps, synchronous=False, specs=specs)
            figures.update({
                f"{name}: steps/s on YARN / local, first to last step":
                    stepping(local) / stepping(yarn),
                f"{name}: steps/s on YARN / local, fit": local["fit_s"] / yarn["fit_s"],
                f"{name}: saves kept training waiting (s)": yarn["save_s"],
                f"{name}: mean step after the first (ms)": mean_step_ms(yarn),
                f"{name}: per-step cost over local (ms)": mean_step_ms(yarn) - mean_step_ms(local),
            })  # fmt: skip
        for key, value in figures.items():
            got.setdefault(key, []).append(value)
        bench.log(
            f"strategies rep {rep + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
        )
    note = f"{epochs} epochs x {steps} steps, batch 256, each task {CHIEF.memory} MiB / 1 vcore"
    for key, values in got.items():
        unit = "ratio" if "/" in key else ("ms" if "(ms)" in key else "s")
        bench.row(SECTION, key, unit, values, note)
    bench.details[SECTION] = {"epochs": epochs, "steps": steps, "time": time.time()}
