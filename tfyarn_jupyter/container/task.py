"""Container side: one task of a run, as its role sees it.

A :class:`Task` knows what it was told (:mod:`tfyarn_jupyter.protocol.contract`),
reports each step of its life to skein's key-value store
(:mod:`tfyarn_jupyter.protocol.events`), exchanges TensorFlow addresses with its
peers there, and serves TensorFlow for a ps. Which role it runs, and its life from
joining to its reported stop, is :mod:`.roles`; the entry point is :mod:`.main`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

from tfyarn_jupyter.container import hygiene, regroup
from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.protocol import contract, events
from tfyarn_jupyter.protocol.contract import PAYLOAD, TRAINERS, TaskContract


def is_estimator(experiment: Any) -> bool:
    return all(hasattr(experiment, f) for f in ("estimator", "train_spec", "eval_spec"))


def is_keras(experiment: Any) -> bool:
    return all(hasattr(experiment, f) for f in ("model", "model_dir", "train_params"))


class Task:
    """One task of the TensorFlow cluster, talking to its peers through skein.

    ``app`` stands for skein's application client (its ``kv`` store,
    ``get_containers`` and ``shutdown``); by default the container's own.
    """

    def __init__(self, app: Any = None, container_id: str | None = None) -> None:
        if app is None:
            import skein

            app = skein.ApplicationClient.from_current()
        self.app = app
        self.container_id = container = container_id or os.environ["SKEIN_CONTAINER_ID"]
        self.type, _, instance = container.rpartition("_")
        self.contract = TaskContract.from_env()
        self.topology = dict(self.contract.topology)
        #: Which task this container is: a container skein started in place of a lost one has
        #: the service's next instance number (:func:`.regroup.slot_of`).
        self.slot = self._slot(int(instance))
        self.index, self.restarts = self.slot.index, self.slot.restarts
        self.name = f"{self.type}:{self.index}"
        #: The TensorFlow cluster's generation this task joined (:mod:`.regroup`).
        self.generation = 0
        #: When it reached each phase of its start (epoch s), as reported by :meth:`phase`.
        self.phases: dict[str, float] = {}
        self.attempt = self.contract.attempt
        self.peer_timeout = self.contract.peer_timeout_s
        self.heartbeat_timeout = self.contract.heartbeat_timeout_s
        self.port_hold: hygiene.PortHold | None = None

    def _slot(self, instance: int) -> regroup.Slot:
        instances = self.topology.get(self.type, 0) or instance + 1
        failed: list[Any] = []
        if instance >= instances:
            try:
                seen = self.app.get_containers(services=[self.type], states=["FAILED"])
                failed = regroup.failed_in_order(seen)
            except Exception as exc:
                log(f"which task {self.type}_{instance} replaces is unknown: {exc!r}")
        return regroup.slot_of(instance, instances, failed)

    def put(self, kind: str, **payload: Any) -> None:
        self.app.kv[events.task_key(self.name, kind)] = events.encode(payload)

    def phase(self, name: str, at: float | None = None) -> None:
        """The task reached phase ``name`` of its start (``core.timeline.PHASES``) now, or
        at ``at`` (epoch s): one ``phases`` event holds them all. Never fails the task."""
        with contextlib.suppress(Exception):
            self.phases[name] = time.time() if at is None else at
            self.put("phases", **self.phases)

    def forget_stop(self) -> None:
        """Drop the stop (and the client's ack of it) a lost container of this task reported."""
        for key in (events.task_key(self.name, "stop"), events.ack_key(self.name)):
            with contextlib.suppress(KeyError):
                del self.app.kv[key]

    def log(self, msg: str) -> None:
        """A line in the container's stderr."""
        log(msg)

    def publish_metrics(self, step: int, metrics: dict[str, Any]) -> None:
        """One evaluation's results, as the evaluator computes them."""
        self.app.kv[events.metrics_key(step)] = events.encode({**metrics, "step": step})
        log(f"evaluation at step {step}: {metrics}")

    def snapshot(self) -> events.Events:
        return events.parse(self.app.kv.get_range())

    # -- cluster ---------------------------------------------------------------
    def peers(self) -> list[str]:
        """Every task of the TensorFlow cluster; the evaluator stays outside it."""
        return [
            f"{t}:{i}" for t in ("chief", "worker", "ps") for i in range(self.topology.get(t, 0))
        ]

    @property
    def chief(self) -> str:
        """The task that checkpoints: the chief, or worker 0 when there is none."""
        return "chief:0" if self.topology.get("chief") else "worker:0"

    def exchange_addresses(self) -> dict[str, list[str]]:
        """Publish this task's address (its port held), wait (bounded) for every peer's: in
        the cluster's current generation (:mod:`.regroup`), which a lost peer moves on."""
        address = ""
        if self.type != "evaluator":
            self.port_hold = hygiene.PortHold()
            address = f"{socket.gethostname()}:{self.port_hold.port}"
            self.put("init", address=address)
        deadline = time.monotonic() + self.peer_timeout
        services, synced, peers = regroup.services(self), -regroup.POLL_S, self.peers()
        while True:
            kv = self.app.kv.get_range()
            if time.monotonic() - synced >= regroup.POLL_S:
                synced, gen = time.monotonic(), regroup.sync(self.app, kv, services)
                if address and gen and (gen != self.generation or regroup.address_key(
                        gen, self.name) not in kv):  # fmt: skip
                    self.app.kv[regroup.address_key(gen, self.name)] = address.encode()
                    kv = {**kv, regroup.address_key(gen, self.name): address.encode()}
                self.generation = gen
            ev = events.parse(kv)
            initial = {p: ev.task(p)["init"]["address"] for p in peers if "init" in ev.task(p)}
            got = regroup.addresses(kv, peers, self.generation, initial)
            missing = [p for p in peers if p not in got]
            if not missing:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.name} waited {self.peer_timeout:.0f}s for its peers: "
                    + self.why_missing(missing, ev)
                )
            time.sleep(0.2)
        cluster: dict[str, list[str]] = {}
        for p in peers:
            cluster.setdefault(p.partition(":")[0], []).append(got[p])
        return cluster

    def why_missing(self, missing: list[str], ev: events.Events) -> str:
        """Why peers never published their address: never allocated (and the client's word on
        the queue), started and silent, or their container ended."""
        from skein.model import ContainerState

        services = sorted({p.partition(":")[0] for p in missing} & set(self.topology))
        try:
            seen = self.app.get_containers(services=services, states=list(ContainerState))
        except Exception:
            seen = []
        latest = {f"{c.service_name}:{c.instance}": c for c in sorted(seen, key=_started)}
        waiting, started, ended = [], [], []
        for p in missing:
            c = latest.get(p)
            state = str(getattr(c.state, "name", c.state)) if c is not None else "WAITING"
            if c is None or state in ("WAITING", "REQUESTED"):
                waiting.append(p)
            elif state == "RUNNING":
                started.append(p)
            else:
                ended.append(f"{p} ({state}{': ' + c.exit_message if c.exit_message else ''})")
        why = []
        if waiting:
            cause = ev.capacity or (
                "no free capacity on the queue (the run's panel says what is pending)"
            )
            why.append(f"{', '.join(waiting)} {'was' if len(waiting) == 1 else 'were'} never "
                       f"allocated: {cause}; they may start once other applications release "
                       f"resources ({contract.PEER_TIMEOUT_VAR}=SECONDS waits longer)")  # fmt: skip
        if started:
            why.append(f"{', '.join(started)} started but never published an address "
                       "(see its logs)")  # fmt: skip
        if ended:
            why.append(f"container ended before joining: {', '.join(ended)}")
        return "; ".join(why)

    def release_port(self) -> None:
        """The task's TensorFlow server has bound its port (or none will): let it go."""
        if self.port_hold is not None:
            self.port_hold.release()

    def ended(self, names: Iterable[str]) -> set[str]:
        """Which of ``names`` ended: reported their stop, or their container ended for good
        (a FAILED one is replaced by skein, or the application ends with it)."""
        names = set(names)
        ev = self.snapshot()
        done = {p for p in names if "stop" in ev.task(p)}
        if done != names:
            # A task killed from outside never reports its stop.
            # skein refuses a service the application does not have.
            services = sorted({p.partition(":")[0] for p in names} & set(self.topology))
            seen = self.app.get_containers(services=services, states=list(_CONTAINER_STATES))
            tasks = regroup.names(seen, self.topology)
            gone = [c for c in seen if str(getattr(c.state, "name", c.state)) in _GONE]
            done |= names & {tasks[regroup.container_id(c)] for c in gone}
        return done

    def watch_client(self) -> None:
        """End the application when an attached client stops heartbeating."""
        if self.heartbeat_timeout <= 0:
            return

        def watch() -> None:
            from skein.model import FinalStatus

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
                    log(f"client silent for {silent:.0f}s: ending the application")
                    self.app.shutdown(
                        FinalStatus.FAILED,
                        f"the notebook kernel stopped heartbeating ({silent:.0f}s)",
                    )
                    return

        threading.Thread(target=watch, name="tfyarn-heartbeat", daemon=True).start()

    def wait_for_ack(self) -> None:
        """Give the client a moment to read this task's last events: an attached one, or
        one not heard from yet (a task that fails at once may end before the client's first
        heartbeat lands; without the wait its traceback would leave with the application)."""
        deadline = time.monotonic() + self.contract.ack_timeout_s
        while time.monotonic() < deadline:
            ev = self.snapshot()
            if self.name in ev.acked or not ev.client_may_read(time.time(), 60):
                return
            time.sleep(0.2)

    def load_payload(self) -> Any:
        import cloudpickle

        with open(PAYLOAD, "rb") as fh:
            return cloudpickle.load(fh)

    def build_experiment(self, experiment_fn: Any = None) -> Any:
        """Call ``experiment_fn`` (by default the payload's) and check what it returns."""
        experiment = (experiment_fn or self.load_payload())()
        if not (is_estimator(experiment) or is_keras(experiment)):
            raise TypeError(
                "experiment_fn must return KerasExperiment(model, model_dir, train_params, ...) "
                "or Experiment(estimator, train_spec, eval_spec), "
                f"got {type(experiment).__name__}"
            )
        self.phase("model")
        return experiment

    def trainers(self) -> list[str]:
        return [p for p in self.peers() if p.split(":")[0] in TRAINERS]

    def serve(self, cluster: dict[str, list[str]], until: Iterable[str]) -> None:
        """Serve TensorFlow (variables, or a worker's ops) until every task of ``until`` ended."""
        import tensorflow as tf

        tf.distribute.Server(
            tf.train.ClusterSpec(cluster),
            job_name=self.type,
            task_index=self.index,
            protocol="grpc",
            start=True,
        )
        self.release_port()
        until = set(until)
        while self.ended(until) != until:
            time.sleep(1.0)


#: Every state of a skein container, and those of one that ended without a replacement.
_CONTAINER_STATES = ("WAITING", "REQUESTED", "RUNNING", "SUCCEEDED", "FAILED", "KILLED")
_GONE = ("SUCCEEDED", "KILLED")


def _started(c: Any) -> float:
    return c.start_time.timestamp() if getattr(c, "start_time", None) else 0.0
