"""Container side: what runs inside each YARN container of a run.

Started as ``python -m tfyarn_jupyter.tasks`` by the service script
(``service.sh``). It shares only :mod:`tfyarn_jupyter.contract` (what it is
told) and :mod:`tfyarn_jupyter.events` (what it reports) with the client: it
reports each step of its life to skein's key-value store, exchanges TensorFlow
addresses with its peers there, builds ``TF_CONFIG``, and runs its role
(chief or worker: train; ps: serve until the trainers end; evaluator: evaluate
each new checkpoint and publish the metrics).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

from skein.model import ContainerState, FinalStatus

from tfyarn_jupyter import events
from tfyarn_jupyter.contract import PAYLOAD, TRAINERS, TaskContract


def _log(msg: str) -> None:
    print(f"tfyarn[{time.strftime('%H:%M:%S')}]: {msg}", file=sys.stderr, flush=True)


class Task:
    """One task of the TensorFlow cluster, talking to its peers through skein."""

    def __init__(self) -> None:
        import skein

        self.app = skein.ApplicationClient.from_current()
        container = os.environ["SKEIN_CONTAINER_ID"]
        self.type, _, index = container.rpartition("_")
        self.index = int(index)
        self.name = f"{self.type}:{self.index}"
        self.contract = TaskContract.from_env()
        self.topology = dict(self.contract.topology)
        self.attempt = self.contract.attempt
        self.peer_timeout = self.contract.peer_timeout_s
        self.heartbeat_timeout = self.contract.heartbeat_timeout_s

    def put(self, kind: str, **payload: Any) -> None:
        self.app.kv[events.task_key(self.name, kind)] = events.encode(payload)

    def snapshot(self) -> events.Events:
        return events.parse(self.app.kv.get_range())

    # -- cluster ---------------------------------------------------------------
    def peers(self) -> list[str]:
        """Every task of the TensorFlow cluster; the evaluator stays outside it."""
        return [
            f"{t}:{i}" for t in ("chief", "worker", "ps") for i in range(self.topology.get(t, 0))
        ]

    def exchange_addresses(self) -> dict[str, list[str]]:
        """Publish this task's address, wait (bounded) for every peer's."""
        if self.type != "evaluator":
            host = socket.gethostname()
            with socket.socket() as s:
                s.bind(("", 0))
                port = s.getsockname()[1]
            self.put("init", address=f"{host}:{port}")
        deadline = time.monotonic() + self.peer_timeout
        while True:
            ev = self.snapshot()
            missing = [p for p in self.peers() if "init" not in ev.task(p)]
            if not missing:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.name} waited {self.peer_timeout:.0f}s for its peers; "
                    f"never started: {', '.join(missing)} (not enough free resources on "
                    "the queue, or their containers failed; raise TFYARN_PEER_TIMEOUT "
                    "to wait longer)"
                )
            time.sleep(0.2)
        cluster: dict[str, list[str]] = {}
        for p in self.peers():
            t, _, _ = p.partition(":")
            cluster.setdefault(t, []).append(ev.task(p)["init"]["address"])
        return cluster

    def watch_client(self) -> None:
        """End the application when an attached client stops heartbeating."""
        if self.heartbeat_timeout <= 0:
            return

        def watch() -> None:
            while True:
                time.sleep(min(5.0, self.heartbeat_timeout / 3))
                try:
                    ev = self.snapshot()
                except Exception:
                    continue
                if ev.detached or ev.heartbeat is None:
                    continue
                silent = time.time() - ev.heartbeat
                if silent > self.heartbeat_timeout:
                    _log(f"client silent for {silent:.0f}s: ending the application")
                    self.app.shutdown(
                        FinalStatus.FAILED,
                        f"the notebook kernel stopped heartbeating ({silent:.0f}s)",
                    )
                    return

        threading.Thread(target=watch, name="tfyarn-heartbeat", daemon=True).start()

    # -- roles -----------------------------------------------------------------
    def run(self) -> int:
        self.put("container", host=socket.gethostname(), attempt=self.attempt, pid=os.getpid())
        self.watch_client()
        try:
            cluster = self.exchange_addresses()
            os.environ["TF_CONFIG"] = json.dumps(
                {"cluster": cluster, "task": {"type": self.type, "index": self.index}}
            )
            _log(f"{self.name} TF_CONFIG={os.environ['TF_CONFIG']}")
            experiment = None if self.type == "ps" else self.build_experiment()
            self.put("start")
            if self.type == "ps":
                self.serve(cluster)
            elif self.type == "evaluator":
                self.evaluate(experiment)
            else:
                self.train(experiment)
        except BaseException:
            tb = traceback.format_exc()
            _log(f"{self.name} failed:\n{tb}")
            self.put("stop", traceback=tb, exit_code=1)
            self.wait_for_ack()
            return 1
        self.put("stop", traceback="", exit_code=0)
        _log(f"{self.name} done")
        self.wait_for_ack()
        return 0

    def wait_for_ack(self) -> None:
        """Give an attached client a moment to read this task's last events."""
        deadline = time.monotonic() + self.contract.ack_timeout_s
        while time.monotonic() < deadline:
            ev = self.snapshot()
            if self.name in ev.acked or not ev.client_attached(time.time(), 60):
                return
            time.sleep(0.2)

    def build_experiment(self) -> Any:
        import cloudpickle

        with open(PAYLOAD, "rb") as fh:
            experiment_fn = cloudpickle.load(fh)
        experiment = experiment_fn()
        if not all(hasattr(experiment, f) for f in ("estimator", "train_spec", "eval_spec")):
            raise TypeError(
                "experiment_fn must return Experiment(estimator, train_spec, eval_spec), "
                f"got {type(experiment).__name__}"
            )
        return experiment

    def train(self, experiment: Any) -> None:
        import tensorflow as tf

        self.put("train_start")
        tf.estimator.train_and_evaluate(
            experiment.estimator, experiment.train_spec, experiment.eval_spec
        )
        self.put("train_stop")

    def serve(self, cluster: dict[str, list[str]]) -> None:
        """Serve variables until every trainer reported its end."""
        import tensorflow as tf

        tf.distribute.Server(
            tf.train.ClusterSpec(cluster), job_name="ps", task_index=self.index, start=True
        )
        trainers = {p for p in self.peers() if p.split(":")[0] in TRAINERS}
        while True:
            ev = self.snapshot()
            done = {p for p in trainers if "stop" in ev.task(p)}
            if done != trainers:
                # A trainer killed from outside never reports its stop.
                ended = [ContainerState.SUCCEEDED, ContainerState.FAILED, ContainerState.KILLED]
                gone = self.app.get_containers(services=list(TRAINERS), states=ended)
                done |= {f"{c.service_name}:{c.instance}" for c in gone}
            if done >= trainers:
                return
            time.sleep(1.0)

    def evaluate(self, experiment: Any) -> None:
        """Evaluate every new checkpoint until the final one; publish each result."""
        import tensorflow as tf

        estimator, train_spec, eval_spec = experiment
        max_steps = train_spec.max_steps

        def trainers_done() -> bool:
            ev = self.snapshot()
            return all("stop" in ev.task(p) for p in self.peers() if p.startswith("chief"))

        self.put("eval_start")
        last_step = -1
        for ckpt in tf.train.checkpoints_iterator(
            estimator.model_dir,
            min_interval_secs=eval_spec.throttle_secs,
            timeout=2,
            timeout_fn=trainers_done,
        ):
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
                _log(f"skipping {ckpt}: {exc}")
                continue
            step = int(metrics.get("global_step", -1))
            self.app.kv[events.metrics_key(step)] = events.encode({"step": step, **metrics})
            _log(f"evaluation at step {step}: {metrics}")
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
        self.put("eval_stop", last_step=last_step)


def report_exit(code: int) -> int:
    """After the task's process died without reporting its stop (killed): report its status."""
    task = Task()
    if "stop" not in task.snapshot().task(task.name):
        why = f"{task.name}: its process exited with status {code}"
        if code > 128:
            with contextlib.suppress(ValueError):
                why += f" (killed by signal {code - 128}, {signal.Signals(code - 128).name})"
        _log(why)
        task.put("stop", traceback=why, exit_code=code)
        task.wait_for_ack()
    return code


def main() -> int:
    if sys.argv[1:2] == ["--exited"]:
        return report_exit(int(sys.argv[2]))
    task = Task()
    code = task.run()
    sys.stdout.flush()
    sys.stderr.flush()
    # TensorFlow's gRPC server threads never end by themselves (a ps blocks
    # on join); leave without waiting for them.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
