"""Container side: a ``KerasExperiment``'s roles.

The strategy comes from the topology (:func:`tfyarn_jupyter.protocol.contract.strategy_for`):
MultiWorkerMirroredStrategy for several trainers (each calls ``fit``),
ParameterServerStrategy beside a ps (the chief coordinates ``fit``; workers and
ps serve), the default strategy for a single trainer. ``experiment_fn`` is
called inside the strategy's scope, so the model's variables are the
strategy's. Each trainer checkpoints (``tf.train.Checkpoint`` of the model and
its optimizer, numbered by step) at the end of every epoch (every
``TFYARN_CHECKPOINT_EPOCHS``-th) and of training:
the chief into the model dir, the others into a scratch folder (MultiWorker-
Mirrored saves are collective). A trainer restores the model dir's latest
checkpoint first. The evaluator evaluates each new checkpoint of the chief on
``validation_data_fn``'s data and publishes the metrics.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

from tfyarn_jupyter.container import checkpoints as modeldir
from tfyarn_jupyter.container import progress, regroup, uploader
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.contract import (
    MULTI_WORKER_MIRRORED,
    PARAMETER_SERVER,
    SYNC_PUSH_VAR,
    checkpoint_epochs,
)

if TYPE_CHECKING:
    from tfyarn_jupyter.container.task import Task

#: How long the evaluator waits for a new checkpoint before it looks whether the chief ended.
EVAL_POLL_S = 2.0
#: Checkpoints kept in the model dir (as an Estimator's default).
MAX_TO_KEEP = 5


def tf_version(tf: Any) -> tuple[int, int]:
    major, minor = tf.__version__.split(".")[:2]
    return int(major), int(minor)


def model_dir(task: Task, uri: str) -> modeldir.ModelDir:
    """The model dir as TensorFlow sees it (``.local``), synced with ``uri`` when remote."""
    pusher = task.type == "evaluator" or modeldir.pushes(task.type, task.index, task.topology)
    return modeldir.ModelDir(uri, os.getcwd(), pusher=pusher)


def step_of(checkpoint: str) -> int:
    """The step a checkpoint was saved at (its number: ``.../ckpt-<step>``)."""
    return int(checkpoint.rsplit("-", 1)[1])


def make_strategy(tf: Any, name: str) -> Any:
    if name == MULTI_WORKER_MIRRORED:
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == PARAMETER_SERVER:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return tf.distribute.experimental.ParameterServerStrategy(resolver)
    return tf.distribute.get_strategy()


def run(task: Task, cluster: dict[str, list[str]], experiment_fn: Any, built: Any = None) -> None:
    """A trainer's role: build the experiment in the strategy's scope and fit (or serve)."""
    import tensorflow as tf

    strategy_name = contract.strategy_for(contract.KERAS, task.topology)
    contract.check_keras(strategy_name, contract.keras_flavour(tf_version(tf), os.environ))
    if strategy_name == PARAMETER_SERVER and task.type == "worker":
        task.put("start")
        task.serve(cluster, [task.chief])
        return
    strategy = make_strategy(tf, strategy_name)
    task.release_port()  # the strategy started this task's server (or needs none)
    experiment = built if strategy_name == contract.DEFAULT else None
    if experiment is None:
        if built is not None:
            task.log("experiment_fn called again, inside the strategy's scope")
        with strategy.scope():
            experiment = task.build_experiment(experiment_fn)
    if not hasattr(experiment, "model"):
        raise TypeError("experiment_fn returned an Estimator Experiment where Keras was expected")
    task.put("start")
    train(task, experiment, strategy_name)


def fit_params(experiment: Any, strategy_name: str, evaluator: bool, step: int) -> dict:
    """``model.fit``'s arguments: ``train_params``, the data functions' data, where to resume.

    ``validation_data_fn`` feeds the evaluator; without one it is ``fit``'s
    ``validation_data`` (except under ParameterServerStrategy, whose ``fit``
    wants an infinite dataset and ``validation_steps`` there).
    """
    params = dict(experiment.train_params)
    params["callbacks"] = list(params.get("callbacks") or [])
    if experiment.input_data_fn is not None:
        params["x"] = experiment.input_data_fn()
    if experiment.target_data_fn is not None:
        params["y"] = experiment.target_data_fn()
    if (
        experiment.validation_data_fn is not None
        and not evaluator
        and strategy_name != PARAMETER_SERVER
        and "validation_data" not in params
    ):
        params["validation_data"] = experiment.validation_data_fn()
    steps_per_epoch = params.get("steps_per_epoch")
    if step and steps_per_epoch and "initial_epoch" not in params:
        params["initial_epoch"] = step // steps_per_epoch
    return params


def restore(task: Task, checkpoint: Any, directory: str) -> int:
    """Restore the latest checkpoint in ``directory``; the step it was saved at (0: none)."""
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(directory)
    if not latest:
        return 0
    checkpoint.restore(latest)
    step = step_of(latest)
    task.log(f"{task.name} restored {latest} (step {step})")
    return step


def train(task: Task, experiment: Any, strategy_name: str) -> None:
    import tensorflow as tf

    model = experiment.model
    is_chief = task.name == task.chief
    md = model_dir(task, experiment.model_dir)
    if is_chief or strategy_name == MULTI_WORKER_MIRRORED:
        md.pull()  # replicas stay equal only when every one starts from the same checkpoint
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    scratch = os.path.join(tempfile.gettempdir(), f"checkpoints-{task.type}-{task.index}")
    directory = md.local if is_chief else scratch
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=MAX_TO_KEEP)
    step = restore(task, checkpoint, md.local)
    task.phase("restored")
    regroup.resumed(task, step)
    params = fit_params(experiment, strategy_name, "evaluator" in task.topology, step)
    pusher = modeldir.background_pusher(md) if is_chief and md.remote else None
    saver = CheckpointSaver(manager, pusher, model, step, every=checkpoint_epochs(os.environ))
    saver.synchronous = os.environ.get(SYNC_PUSH_VAR) == "1"
    params["callbacks"] += [keras_callback(saver), progress.ProgressCallback()]
    task.put("train_start")
    try:
        model.fit(**params)
    finally:  # a failed fit still leaves its last checkpoint on HDFS
        if pusher is not None:
            modeldir.finish_pushes(pusher)
    pushes = uploader.push_report(pusher) if pusher is not None else {}
    task.put("train_stop", save_s=round(saver.save_s, 3), **pushes)
    if is_chief:
        md.push_all()
    else:
        shutil.rmtree(scratch, ignore_errors=True)


class CheckpointSaver:
    """Save a numbered checkpoint at the end of every ``every``-th epoch (counted from the
    first epoch of training, so a resumed run keeps the same ones) and of training; ask
    the chief's pusher (:mod:`.uploader`) to push it beside training."""

    def __init__(
        self, manager: Any, pusher: Any, model: Any, step: int = 0, every: int = 1
    ) -> None:
        self.manager, self.pusher, self.model = manager, pusher, model
        self.last_step = step
        self.every = every
        #: Wait for each push as before the background pusher (for the benchmark's baseline).
        self.synchronous = False
        #: Seconds training waited in saves (writing the checkpoint, and any push waited for).
        self.save_s = 0.0

    def save(self) -> None:
        step = int(progress.number(self.model.optimizer.iterations))
        if step == self.last_step:
            return
        t0 = time.monotonic()
        self.manager.save(checkpoint_number=step)
        self.last_step = step
        if self.pusher is not None:
            self.pusher.request()
            if self.synchronous:
                self.pusher.flush()
        self.save_s += time.monotonic() - t0

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if (epoch + 1) % self.every == 0:
            self.save()

    def on_train_end(self, logs: Any = None) -> None:
        self.save()


def keras_callback(logic: Any) -> Any:
    """A callback of the Keras in use that forwards its epoch and train ends to ``logic``."""
    import tensorflow as tf

    class Forward(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            logic.on_epoch_end(epoch, logs)

        def on_train_end(self, logs: Any = None) -> None:
            logic.on_train_end(logs)

    return Forward()


def evaluate(task: Task, experiment: Any) -> None:
    """Evaluate each new checkpoint of the chief until it ended; publish each result."""
    import tensorflow as tf

    if experiment.validation_data_fn is None:
        raise ValueError(
            "the evaluator evaluates on KerasExperiment.validation_data_fn's data: "
            "give one, or drop the evaluator"
        )
    md = model_dir(task, experiment.model_dir)
    checkpoint = tf.train.Checkpoint(model=experiment.model)
    task.put("eval_start")
    last, last_step = None, -1
    while True:
        # Whether the chief ended is read first: its last checkpoint is then in the next pull.
        chief_ended = task.chief in task.ended([task.chief])
        latest = md.wait_for_new(last, timeout_s=EVAL_POLL_S)
        if latest is not None:
            last = latest
            try:
                checkpoint.restore(latest).expect_partial()
            except (tf.errors.NotFoundError, ValueError) as exc:
                task.log(f"skipping {latest}: {exc}")  # deleted by the chief meanwhile
                continue
            data = experiment.validation_data_fn()
            metrics = experiment.model.evaluate(data, return_dict=True, verbose=0)
            last_step = step_of(latest)
            task.publish_metrics(last_step, {k: progress.number(v) for k, v in metrics.items()})
        elif chief_ended:
            break
    md.push_all()  # what the evaluator wrote (files it pulled are not pushed back)
    task.put("eval_stop", last_step=last_step)
