"""Training at the speed of a local process: a model whose steps cost what real ones cost.

A wide MLP (512 features, 3 x 1024 units, batch 256: tens of milliseconds a step on one
core here), a checkpoint at every epoch's end, trained by ``fit``:

- locally, in a fresh process, checkpoints on the local disk (what a user runs first);
- on YARN, a chief alone with an ``hdfs://`` model dir, its pushes beside training (today);
- the same with each push waited for (``TFYARN_SYNC_CHECKPOINT_PUSH=1``: before the
  background pusher), interleaved in each repetition.

Each side's figure is its own ``fit`` time (the chief's ``train_start`` to ``train_stop``
events), so container start and imports are left out; the chief also reports the seconds
its saves kept training waiting (writing the checkpoint, and any push it waited for).

Where the seconds go, per cause, on each side: a :func:`step_clock` callback in the model's
own ``fit`` times the first step (TensorFlow traces the train function there), the other
steps, and the time between steps (every other callback: the checkpoint saves, and on YARN
the task's progress reports; the epoch ends), and writes them beside the checkpoints
(``step-clock.json``, through ``tf.io.gfile``: on YARN an ``hdfs://`` path). What is left of
``fit`` is its set-up and tear-down. The input pipeline is timed alone, locally: the same
generated dataset pulled for as many batches as a fit takes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any

from tfyarn_jupyter.core.spec import KerasExperiment, TaskSpec
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol.contract import CHECKPOINT_EPOCHS_VAR, SYNC_PUSH_VAR
from tfyarn_jupyter.run import launch as runs
from tfyarn_jupyter.run.result import read_event_log

from .core import Bench

SECTION = "training speed: wide MLP, a checkpoint each epoch"
SECTION_1GB = "training speed: wide MLP and a 1 GiB table, a 1 GiB checkpoint each epoch"
SECTION_1GB_FEW = "training speed: wide MLP and a 1 GiB table, a 1 GiB checkpoint every 3rd epoch"
SECTION_1GB_SPACED = (
    "training speed: wide MLP and a 1 GiB table, a 1 GiB checkpoint every 3rd epoch of 400 steps"
)
CHIEF = TaskSpec("2G", 1)
#: The 1 GiB model's chief: the table, its checkpoint's buffers, TensorFlow.
BIG_CHIEF = TaskSpec("5G", 1)


CLOCK_FILE = "step-clock.json"


def step_clock(report_to: str) -> Any:
    """A Keras callback that splits ``fit``'s time: the first step, the other steps, the time
    between steps; written as JSON to ``report_to`` at the end of training (by the chief).

    Built under ParameterServerStrategy, whose ``fit`` allows no batch hooks, it times whole
    epochs instead: their steps (the first epoch's tracing among them) and what comes
    between epochs (the saves)."""
    import tensorflow as tf

    class Clock(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            self.steps, self.first, self.between, self.n = 0.0, 0.0, 0.0, 0
            self.last: float | None = None
            self.t0 = time.perf_counter()

        def begin(self) -> None:
            now = time.perf_counter()
            if self.last is not None:
                self.between += now - self.last
            self.t0 = now

        def end(self, steps: int) -> None:
            now = time.perf_counter()
            if self.n == 0 and steps == 1:
                self.first = now - self.t0
            else:
                self.steps += now - self.t0
            self.n += steps
            self.last = now

        def on_train_end(self, logs: Any = None) -> None:
            if self.last is not None:  # the last epoch's end (its save) came after its last step
                self.between += time.perf_counter() - self.last
            task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
            if task.get("type", "chief") != "chief":
                return  # a worker of a distributed strategy: the chief's figures are the run's
            figures = {"first_step_s": self.first, "steps_s": self.steps,
                       "between_steps_s": self.between, "steps": self.n}  # fmt: skip
            with tf.io.gfile.GFile(report_to, "w") as f:
                f.write(json.dumps(figures))

    class StepClock(Clock):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.begin()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.end(1)

    class EpochClock(Clock):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.begin()

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.end(int(self.params.get("steps") or 0))

    ps = tf.distribute.experimental.ParameterServerStrategy
    return EpochClock() if isinstance(tf.distribute.get_strategy(), ps) else StepClock()


#: Rows of the side table that makes the big model's checkpoint 1 GiB (x 256 float32s).
TABLE_ROWS = 2**20


def wide_mlp_experiment(
    model_dir: str, epochs: int, steps: int, table_rows: int = 0
) -> KerasExperiment:
    """The benchmark's model on generated data (built inside the task's strategy scope), with
    a :func:`step_clock` writing to ``<model_dir>/step-clock.json``. ``table_rows`` adds an
    embedding table of that many rows of 256 floats beside the MLP (:data:`TABLE_ROWS`: a
    1 GiB checkpoint), trained by sparse SGD updates, so its steps cost what the MLP's do."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.RandomState(0)
    x = rng.normal(size=(4096, 512)).astype("float32")
    y = (x[:, :8].sum(axis=1) > 0).astype("float32")
    mlp = tf.keras.Input(shape=(512,))
    h = mlp
    for _ in range(3):
        h = tf.keras.layers.Dense(1024, activation="relu")(h)
    inputs, features = [mlp], {"x": x}
    if table_rows:
        ids = tf.keras.Input(shape=(8,), dtype="int32")
        pooled = tf.keras.layers.GlobalAveragePooling1D()(
            tf.keras.layers.Embedding(table_rows, 256)(ids)
        )
        h = tf.keras.layers.Concatenate()([h, pooled])
        inputs, features = [mlp, ids], {"x": x, "ids": rng.randint(0, table_rows, (4096, 8))}
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1, activation="sigmoid")(h))
    # tf.keras 2's new SGD densifies the table's sparse gradient (0.47 s a step here); its
    # legacy one applies it sparsely (0.01 s)
    legacy = getattr(tf.keras.optimizers, "legacy", None)
    sparse_sgd = legacy.SGD() if legacy is not None else "sgd"
    model.compile(optimizer=sparse_sgd if table_rows else "adam", loss="binary_crossentropy")

    def data() -> Any:
        given = tuple(features.values()) if table_rows else x
        dataset = tf.data.Dataset.from_tensor_slices((given, y)).repeat().batch(256).prefetch(2)
        # Nothing here is AUTOTUNE'd, and with autotuning on, deleting the iterator at the
        # end of `fit` can wait for tf.data's tuning thread to wake (up to its period, 5-10 s
        # in a fit this long; TensorFlow 2.15 and 2.21): a stall outside the steps, on either
        # side at random (docs/performance.md, "The stall at the end of fit").
        options = tf.data.Options()
        options.autotune.enabled = False
        return dataset.with_options(options)

    return KerasExperiment(
        model=model,
        model_dir=model_dir,
        train_params={
            "epochs": epochs,
            "steps_per_epoch": steps,
            "verbose": 0,
            "callbacks": [step_clock(f"{model_dir}/{CLOCK_FILE}")],
        },
        input_data_fn=data,
    )


LOCAL = """
import json, os, shutil, sys, tempfile, time
import tensorflow as tf
from benchmarks.training import CLOCK_FILE, wide_mlp_experiment
epochs, steps, rows, every = (int(a) for a in sys.argv[1:5])
exp = wide_mlp_experiment(tempfile.mkdtemp(), epochs, steps, rows)
batches = iter(exp.input_data_fn())
next(batches)
t0 = time.perf_counter()
for _ in range(epochs * steps):
    next(batches)
input_s = time.perf_counter() - t0
ckpt = tf.train.Checkpoint(model=exp.model, optimizer=exp.model.optimizer)
manager = tf.train.CheckpointManager(ckpt, exp.model_dir, max_to_keep=3)
saves = []
class Save(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % every and epoch + 1 < epochs:
            return
        t0 = time.monotonic(); manager.save(); saves.append(time.monotonic() - t0)
t0 = time.monotonic()
params = dict(exp.train_params)
params["callbacks"] = [*params["callbacks"], Save()]  # after the clock, as on YARN
exp.model.fit(exp.input_data_fn(), **params)
fit_s = time.monotonic() - t0
with open(os.path.join(exp.model_dir, CLOCK_FILE)) as f:
    clock = json.load(f)
print(json.dumps({"fit_s": fit_s, "save_s": sum(saves), "input_s": input_s, **clock}))
shutil.rmtree(exp.model_dir, ignore_errors=True)
"""


def local_fit(epochs: int, steps: int, table_rows: int = 0, every: int = 1) -> dict[str, float]:
    """The local side's figures, in a fresh process run from the project's root: a save
    every ``every``-th epoch and at the end, as a chief with ``TFYARN_CHECKPOINT_EPOCHS``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = [sys.executable, "-c", LOCAL, *map(str, (epochs, steps, table_rows, every))]
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=900, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def yarn_fit(
    bench: Bench,
    epochs: int,
    steps: int,
    synchronous: bool,
    table_rows: int = 0,
    specs: dict[str, TaskSpec] | None = None,
    every: int = 1,
) -> dict[str, float]:
    """The chief's fit and save seconds on YARN, model dir on HDFS; a chief alone unless
    ``specs`` names the tasks (the strategy follows from them, as for a user's run)."""
    model_dir = filesystem.qualify(f"{filesystem.home()}/.tfyarn/bench/mlp-{uuid.uuid4().hex}")

    def experiment_fn() -> KerasExperiment:
        return wide_mlp_experiment(model_dir, epochs, steps, table_rows)

    env = {SYNC_PUSH_VAR: "1"} if synchronous else {}
    if every > 1:
        env[CHECKPOINT_EPOCHS_VAR] = str(every)
    if specs is None:
        specs = {"chief": BIG_CHIEF if table_rows else CHIEF}
    try:
        name = f"tfyarn-bench-mlp-{'sync' if synchronous else 'bg'}-{len(specs)}"
        result = runs.run_on_yarn(experiment_fn, specs, env=env, name=name)
        record = read_event_log(result.app_id) or {}
        stop = record.get("events", {}).get("tasks", {}).get("chief:0", {}).get("train_stop", {})
        clock = json.loads(filesystem.read_bytes(f"{model_dir}/{CLOCK_FILE}"))
        return {"fit_s": result.training_time_s_per_task["chief:0"],
                "save_s": float(stop.get("save_s", 0.0)), **clock}  # fmt: skip
    finally:
        bench.hdfs_delete(filesystem.strip_scheme(model_dir))


def training(bench: Bench) -> None:
    """The wide MLP: steps/s on YARN / local, the seconds saves kept training waiting, and
    where each side's ``fit`` time went (:func:`accounting`)."""
    epochs, steps = (4, 25) if bench.cfg.smoke else (10, 40)
    compare(bench, SECTION, epochs, steps, 0, bench.cfg.reps)


def training_1gb(bench: Bench) -> None:
    """The same with a 1 GiB checkpoint (:data:`TABLE_ROWS`), saved every epoch."""
    compare(bench, SECTION_1GB, 4, 40, TABLE_ROWS, min(bench.cfg.reps, 3))


def training_1gb_few(bench: Bench) -> None:
    """The 1 GiB model checkpointed every third epoch (``TFYARN_CHECKPOINT_EPOCHS=3``), what
    a user with a checkpoint that size would choose: locally and on YARN with pushes beside
    training (each push waited for is :func:`training_1gb`'s baseline)."""
    compare(bench, SECTION_1GB_FEW, 6, 40, TABLE_ROWS, min(bench.cfg.reps, 3), every=3)


def training_1gb_spaced(bench: Bench) -> None:
    """The same with epochs ten times longer (400 steps): about half a minute of training
    between two 1 GiB pushes, where :func:`training_1gb_few` has 3-4 s. Each push costs
    the two cores what it costs, so how often one comes decides the ratio; a run that
    checkpoints every few minutes is closer to this one."""
    compare(bench, SECTION_1GB_SPACED, 6, 400, TABLE_ROWS, min(bench.cfg.reps, 2), every=3)


def compare(
    bench: Bench,
    section: str,
    epochs: int,
    steps: int,
    rows: int,
    reps: int,
    every: int = 1,
) -> None:
    """Local, YARN with pushes beside training, and (checkpointing every epoch) YARN with
    each push waited for: interleaved in each of ``reps`` repetitions; a row per figure."""
    import cloudpickle

    from . import training as module  # the experiment travels by value: no `benchmarks` there

    cloudpickle.register_pickle_by_value(module)
    got: dict[str, list[float]] = {}
    for rep in range(reps):
        local = local_fit(epochs, steps, rows, every)
        background = yarn_fit(bench, epochs, steps, synchronous=False, table_rows=rows, every=every)
        sides = {"local": local, "YARN, pushes beside training": background}
        figures = {
            "local fit": local["fit_s"],
            "YARN fit, pushes beside training": background["fit_s"],
            "steps/s on YARN / local, pushes beside training": local["fit_s"] / background["fit_s"],
            "steps/s on YARN / local, first to last step, pushes beside training": (
                stepping(local) / stepping(background)
            ),
        }
        if every == 1:
            synchronous = yarn_fit(bench, epochs, steps, synchronous=True, table_rows=rows)
            sides["YARN, each push waited for"] = synchronous
            figures |= {
                "YARN fit, each push waited for (before)": synchronous["fit_s"],
                "steps/s on YARN / local, each push waited for": (
                    local["fit_s"] / synchronous["fit_s"]
                ),
                "steps/s on YARN / local, first to last step, each push waited for": (
                    stepping(local) / stepping(synchronous)
                ),
            }
        for side, measured in sides.items():
            figures.update({f"{cause}, {side}": s for cause, s in accounting(measured).items()})
        figures["input pipeline alone (local, the same batches)"] = local["input_s"]
        for name, value in figures.items():
            got.setdefault(name, []).append(value)
        bench.log(
            f"{section} rep {rep + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
        )
    chief = BIG_CHIEF if rows else CHIEF
    note = f"{epochs} epochs x {steps} steps, batch 256, chief {chief.memory} MiB / 1 vcore"
    if every > 1:
        note += f", a checkpoint every {every} epochs ({CHECKPOINT_EPOCHS_VAR}={every})"
    for name, values in got.items():
        bench.row(section, name, "ratio" if "/" in name else "s", values, note)
    bench.details[section] = {"epochs": epochs, "steps": steps, "time": time.time()}


def stepping(side: dict[str, float]) -> float:
    """Seconds from the first step's start to the last epoch's end (its save included):
    ``fit`` without its set-up and, on YARN, without the final flush of the pushes."""
    return side["first_step_s"] + side["steps_s"] + side["between_steps_s"]


def accounting(side: dict[str, float]) -> dict[str, float]:
    """A side's ``fit`` seconds by cause: the first step (tracing), the other steps, the saves,
    the other callbacks and epoch ends (between steps, less the saves), and the rest of the
    side's training time (``fit``'s set-up and tear-down; on YARN also what the task does
    between its ``train_start`` and ``fit``)."""
    between = side["between_steps_s"]
    rest = side["fit_s"] - side["first_step_s"] - side["steps_s"] - between
    return {
        "first step (tracing)": side["first_step_s"],
        "steps after the first": side["steps_s"],
        "saves": side["save_s"],
        "other callbacks and epoch ends": max(between - side["save_s"], 0.0),
        "set-up and tear-down around the steps": rest,
    }
