"""Which role a task runs, and its life from joining the cluster to its reported stop.

The task's type, the run's mode and the program's kind (the client's finding, else
what TensorFlow and the topology imply) choose the role: a trainer of
:mod:`.train_estimator`, :mod:`.train_keras` or :mod:`.train_function`, a ps
serving its variables, an evaluator, or :mod:`.tensorboard` outside the TensorFlow
cluster. Whatever happens, the task reports its stop (and the traceback) last.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from typing import Any

from tfyarn_jupyter.container import progress, regroup
from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.container.task import Task, is_estimator
from tfyarn_jupyter.hadoop import tf_plugin
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.contract import TRAINERS


def run(task: Task) -> int:
    """The task's whole life: join, run the role, report the stop; the exit status."""
    try:
        why = regroup.begin(task)  # a restarted container's record: why, and the steps it had
    except Exception as exc:  # the record is for the panel: never a reason not to train
        why = ""
        log(f"{task.name}: its restart was not recorded: {exc!r}")
    if why:  # its container failed by itself: that spends a retry of the run, as before;
        log(why)  # the failed container's stop (its traceback) stays for the client to read
        regroup.ended_by_itself(task)
        regroup.end_application(task, why)
        return 1
    if task.restarts:  # in place of a lost container: its end is not this one's
        task.forget_stop()
    task.put("container", host=socket.gethostname(), attempt=task.attempt, pid=os.getpid(),
             restarts=task.restarts, container=task.container_id)  # fmt: skip
    regroup.started(task)
    task.phase("interpreter", at=_process_start())
    task.watch_client()
    tb = _run_role_reporting(task)
    if tb and task.type in regroup.CLUSTER and regroup.peer_lost(task):
        log(f"{task.name} stopped training as its cluster lost a container:\n{tb}")
        regroup.follow(task)  # restarts with its cluster, from the last checkpoint
    if tb:
        log(f"{task.name} failed:\n{tb}")
        task.put("stop", traceback=tb, exit_code=1)
        task.wait_for_ack()
        # TensorBoard failing is shown, but never ends the training (as in tf-yarn).
        if task.type == "tensorboard":
            return 0
        _fail_application(task)
        return 1
    task.put("stop", traceback="", exit_code=0)
    log(f"{task.name} done")
    task.wait_for_ack()
    return 0


def _fail_application(task: Task) -> None:
    """A task whose own code raised ends the run, as before: YARN's application master
    restarts a lost container (issue 25), never one that failed by itself."""
    regroup.ended_by_itself(task)
    regroup.end_application(task, f"Failure in service {task.type}, its code raised")


def _run_role_reporting(task: Task) -> str:
    """Join the cluster and run the role; the traceback if it failed, else ""."""
    tf_plugin.register_on_import(
        lambda exc: log(f"TensorFlow cannot open hdfs:// or viewfs:// paths here: {exc}"),
        on_imported=lambda: task.phase("tensorflow"),
    )
    reporter = progress.Reporter(progress.kv_writer(task.app.kv, task.name), sample=_sampler())
    ticker = progress.start_ticker(reporter)  # resources while it waits, serves, evaluates
    watcher: regroup.Watcher | None = None
    try:
        if task.type == "tensorboard":  # outside the TensorFlow cluster
            from tfyarn_jupyter.container import tensorboard

            tensorboard.run(task)
            return ""
        if task.type != "ps":  # a ps imports TensorFlow only once the cluster is known
            _import_tensorflow_meanwhile()
        cluster = task.exchange_addresses()
        task.phase("cluster")
        if why := regroup.over_budget(task.generation):
            regroup.end_application(task, why)
            raise RuntimeError(why)
        watcher = regroup.Watcher(task).start()
        if task.port_hold is not None:
            task.port_hold.release_when_listening()
        os.environ["TF_CONFIG"] = json.dumps(
            {"cluster": cluster, "task": {"type": task.type, "index": task.index}}
        )
        log(f"{task.name} TF_CONFIG={os.environ['TF_CONFIG']}")
        if task.type in TRAINERS:
            reporter.on_first_step = lambda: task.phase("first_step")
            progress.install(reporter)
        run_role(task, cluster)
        return ""
    except BaseException:
        return traceback.format_exc()
    finally:
        if watcher is not None:
            watcher.stop()
        ticker.set()
        task.release_port()
        reporter.flush()


def run_role(task: Task, cluster: dict[str, list[str]]) -> None:
    """Train, serve or evaluate, as the task's type, the mode and the program say."""
    from tfyarn_jupyter.container import train_estimator, train_keras

    if task.contract.mode == "function":
        from tfyarn_jupyter.container import train_function

        train_function.run(task, cluster)
    elif task.type == "ps":
        task.put("start")
        task.serve(cluster, task.trainers())
    elif task.type == "evaluator":
        experiment = task.build_experiment()
        task.put("start")
        if is_estimator(experiment):
            train_estimator.evaluate(task, experiment)
        else:
            train_keras.evaluate(task, experiment)
    elif program(task) == contract.KERAS:
        train_keras.run(task, cluster, task.load_payload())
    else:
        experiment_fn = task.load_payload()
        experiment = task.build_experiment(experiment_fn)
        if is_estimator(experiment):
            task.put("start")
            train_estimator.train(task, experiment)
        else:  # the client could not tell: a Keras model built before its strategy
            train_keras.run(task, cluster, experiment_fn, built=experiment)


def program(task: Task) -> str:
    """The program's kind: the client's finding, else what TensorFlow and the topology imply."""
    if task.contract.program != contract.UNKNOWN:
        return task.contract.program
    chief, workers, ps = (task.topology.get(t, 0) for t in ("chief", "worker", "ps"))
    if not chief or (workers and not ps) or not tf_has_estimator():
        return contract.KERAS  # an Estimator needs a chief, a ps beside workers, TF < 2.16
    return contract.UNKNOWN


def _sampler() -> Any:
    """The task's resource sampler (its ``sample``), or nothing when psutil cannot run here."""
    try:
        from tfyarn_jupyter.container import sampling

        return sampling.Sampler().sample
    except Exception as exc:
        log(f"resources not reported: {exc}")
        return None


def tf_has_estimator() -> bool:
    """TensorFlow 2.16 and later have no ``tf.estimator``: a program there is Keras."""
    import tensorflow as tf

    major, minor = (int(p) for p in tf.__version__.split(".")[:2])
    return (major, minor) < (2, 16)


def _process_start() -> float:
    """When this process started (epoch s): the interpreter's start, before any import."""
    try:
        import psutil

        return float(psutil.Process().create_time())
    except Exception:
        return time.time()


def _import_tensorflow_meanwhile() -> None:
    """Import TensorFlow (seconds) on a thread while the task waits for its peers' addresses:
    the role's own import then finds it done. A failure is left for the role to meet."""
    import sys
    import threading

    if "tensorflow" in sys.modules or "SKEIN_CONTAINER_ID" not in os.environ:
        return  # already there, or not in a container (a test's stand-in application)

    def load() -> None:
        try:
            import tensorflow  # noqa: F401
        except Exception as exc:
            log(f"importing TensorFlow beside the address exchange failed: {exc!r}")

    threading.Thread(target=load, name="tfyarn-import-tf", daemon=True).start()
