"""Container side: an Estimator ``Experiment``'s roles (TensorFlow 2.15 and earlier).

A chief or worker runs ``tf.estimator.train_and_evaluate`` (TensorFlow starts
its server and distributes through the ps, from ``TF_CONFIG``), with a hook
that reports its progress; the evaluator evaluates each new checkpoint of the
model dir and publishes the metrics. An ``hdfs://`` model dir is a local folder
for the Estimator, synced by :class:`~tfyarn_jupyter.container.checkpoints.ModelDir`: the
chief pulls it first and pushes each checkpoint as it is saved, the evaluator
pulls each new one.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from tfyarn_jupyter.container import checkpoints as modeldir
from tfyarn_jupyter.container import progress, regroup

if TYPE_CHECKING:
    from tfyarn_jupyter.container.task import Task


def with_progress(train_spec: Any, reporter: progress.Reporter | None) -> Any:
    """``train_spec`` with the progress hook added to its hooks (when there is a reporter)."""
    if reporter is None:
        return train_spec
    hook = progress.estimator_hook(reporter, max_steps=train_spec.max_steps)
    hooks = (*(train_spec.hooks or ()), hook)
    return train_spec._replace(hooks=hooks)


def local_model_dir(task: Task, estimator: Any) -> modeldir.ModelDir:
    """The estimator's model dir; a remote one swapped for its local folder in the estimator."""
    # The evaluator pushes what it writes (exports, its event files), never checkpoints.
    pusher = task.type == "evaluator" or modeldir.pushes(task.type, task.index, task.topology)
    md = modeldir.ModelDir(estimator.model_dir, os.getcwd(), pusher=pusher)
    if md.remote:
        estimator._model_dir = md.local
        estimator._config = estimator.config.replace(model_dir=md.local)
    return md


def step_of(checkpoint: str | None) -> int:
    """The step of an Estimator's checkpoint (``.../model.ckpt-<step>``; 0: none)."""
    tail = (checkpoint or "").rsplit("-", 1)[-1]
    return int(tail) if tail.isdecimal() else 0


def train(task: Task, experiment: Any) -> None:
    import tensorflow as tf

    train_spec = with_progress(experiment.train_spec, progress.current())
    md = local_model_dir(task, experiment.estimator)
    if md.remote and md.pusher:
        latest = md.pull()  # the chief restores the latest checkpoint; workers get its variables
        task.phase("restored")
        regroup.resumed(task, step_of(latest))
        listeners = (*(train_spec.saving_listeners or ()), modeldir.estimator_listener(md))
        train_spec = train_spec._replace(saving_listeners=listeners)
    elif task.restarts and md.remote:  # a worker starts from the chief's restored variables
        index = md.remote_index()
        regroup.resumed(task, step_of(index.latest if index else None))
    elif task.restarts:  # a folder every node sees: the Estimator restores from it itself
        regroup.resumed(task, step_of(tf.train.latest_checkpoint(md.local)))
    task.put("train_start")
    tf.estimator.train_and_evaluate(experiment.estimator, train_spec, experiment.eval_spec)
    task.put("train_stop")
    md.push_all()


def checkpoints(md: modeldir.ModelDir, throttle_s: float, done: Any) -> Any:
    """Each new checkpoint's path until ``done()`` (TensorFlow's iterator for a local dir)."""
    import tensorflow as tf

    if not md.remote:
        yield from tf.train.checkpoints_iterator(
            md.local, min_interval_secs=throttle_s, timeout=2, timeout_fn=done
        )
        return
    last = None
    while True:
        ended = done()  # read first: the chief's last checkpoint is then in the next pull
        latest = md.wait_for_new(last, timeout_s=2)
        if latest is not None:
            last = latest
            yield latest
            time.sleep(throttle_s)
        elif ended:
            return


def evaluate(task: Task, experiment: Any) -> None:
    """Evaluate every new checkpoint until the final one; publish each result."""
    import tensorflow as tf

    estimator, train_spec, eval_spec = experiment
    max_steps = train_spec.max_steps

    def trainers_done() -> bool:
        return task.chief in task.ended([task.chief])

    md = local_model_dir(task, estimator)
    task.put("eval_start")
    last_step = -1
    for ckpt in checkpoints(md, eval_spec.throttle_secs, trainers_done):
        try:
            metrics = estimator.evaluate(
                eval_spec.input_fn,
                steps=eval_spec.steps,
                hooks=eval_spec.hooks,
                checkpoint_path=ckpt,
                name=eval_spec.name,
            )
        except (tf.errors.NotFoundError, ValueError) as exc:
            # The chief may delete an old checkpoint while we open it.
            task.log(f"skipping {ckpt}: {exc}")
            continue
        step = int(metrics.get("global_step", -1))
        task.publish_metrics(step, metrics)
        for exporter in eval_spec.exporters or ():
            exporter.export(
                estimator,
                os.path.join(estimator.model_dir, "export", exporter.name),
                ckpt,
                metrics,
                bool(max_steps and step >= max_steps),
            )
        last_step = step
        if max_steps and step >= max_steps:
            break
    md.push_all()  # the exports
    task.put("eval_stop", last_step=last_step)
