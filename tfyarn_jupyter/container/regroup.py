"""Container side: the TensorFlow cluster restarted together inside its application (issue 25).

skein's application master starts a replacement container when one of a service's
containers ends FAILED (``max_restarts``): a container YARN preempted (exit status
-102) among them, the loss recovered here (:data:`IN_APPLICATION`). A trainer or ps alone cannot
rejoin a running cluster (all-reduce groups and a coordinator's ClusterSpec are fixed
when training starts, and a replacement has a new host and port), so every task of
the cluster restarts, with a new cluster spec, from the last checkpoint. The protocol,
in skein's key-value store:

``cluster/lost/<container id>``
    A container of the cluster (``worker_1``) was lost. Written by whoever sees it
    first: its replacement, or a peer's watcher. The **generation** is their number.
``cluster/follow/<container id>``
    This container ends itself (exit :data:`FOLLOW_EXIT`) so that its task restarts in
    the new generation: its end is not a loss (no cascade), and its replacement's
    restart record says ``peer restarted``.
``cluster/gen/<generation>/<type:index>``
    A task's TensorFlow address in that generation (generation 0 keeps
    ``task/<type:index>/init`` alone, as before).
``cluster/up/<container id>``, ``cluster/exited/<container id>``
    The container's task process started; the container ended by itself (its code
    raised, or its service script lived to report the process killed: ``kill -9``, the
    kernel's OOM killer). skein says the same of every container whose exit status is
    positive; these tell a container killed whole (:data:`CONTAINER_KILLED`, a loss)
    from a task that failed (:func:`loss_of`).
``cluster/exiting``
    Owned by the one trainer ending itself to follow its cluster, while it does: they
    end one at a time (:mod:`~tfyarn_jupyter.container.exit_gate`).

A task's index follows skein's numbering: a service's replacement ``k`` (instance
``instances + k``) stands in for the ``k``-th of its FAILED containers, in the order
they ended (:func:`slot_of`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tfyarn_jupyter.container import exit_gate
from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.causes import LOSSES, Cause, read_yarn

#: The exit status of a trainer ending itself to restart with its cluster (EX_TEMPFAIL).
FOLLOW_EXIT = 75
#: The run's restarts for lost containers (``core.recovery.DEFAULT_PREEMPTIONS`` by default),
#: as ``run.skein_app`` hands it to the tasks.
PREEMPTIONS_VAR = "TFYARN_PREEMPTIONS"
DEFAULT_PREEMPTIONS = 10
#: The services of the TensorFlow cluster.
CLUSTER = ("chief", "worker", "ps")
LOST, FOLLOW, GEN = "cluster/lost/", "cluster/follow/", "cluster/gen/"
UP, EXITED = "cluster/up/", "cluster/exited/"


def lost_key(container_id: str) -> str:
    return f"{LOST}{container_id}"


def follow_key(container_id: str) -> str:
    return f"{FOLLOW}{container_id}"


def up_key(container_id: str) -> str:
    return f"{UP}{container_id}"


def exited_key(container_id: str) -> str:
    return f"{EXITED}{container_id}"


def address_key(generation: int, task: str) -> str:
    return f"{GEN}{generation:04d}/{task}"


def preemptions(environ: Mapping[str, str] | None = None) -> int:
    """The run's bound on restarts for lost containers."""
    value = (os.environ if environ is None else environ).get(PREEMPTIONS_VAR, "")
    return int(value) if value.isdecimal() else DEFAULT_PREEMPTIONS


def container_id(c: Any) -> str:
    return f"{c.service_name}_{c.instance}"


# -- why a container ended ------------------------------------------------------------------------
#: A container killed whole from outside: ``yarn container -signal ID FORCEFUL_SHUTDOWN``
#: (SIGKILL to every process in it) or ``GRACEFUL_SHUTDOWN`` (SIGTERM), by an operator or
#: a node's tooling. Nothing in it lives to say so.
CONTAINER_KILLED = Cause.CONTAINER_KILLED.value
#: skein's words for a container whose exit status is positive, whatever it was.
EXITED_POSITIVE = "container failed during execution"


def loss_of(app: Any, kv: Mapping[str, Any], c: Any) -> tuple[str, int | None]:
    """Why the FAILED container ``c`` ended, ``kv`` a snapshot of the store: YARN's words,
    else :data:`CONTAINER_KILLED` for one whose task process had started (``up``) and that
    did not end by itself (no ``exited``: written before the container ends, so looked for
    afresh when the snapshot lacks it). A container that failed before its task started
    (its environment, a pre-script hook) is a failure."""
    message = getattr(c, "exit_message", "") or ""
    reading, status = read_yarn(message)
    cause = reading.value
    if reading is not Cause.FAILED or EXITED_POSITIVE not in message.lower():
        return cause, status
    cid = container_id(c)
    if up_key(cid) not in kv or exited_key(cid) in kv or app.kv.get(exited_key(cid)) is not None:
        return cause, status
    return CONTAINER_KILLED, None


def started(task: Any) -> None:
    """Mark the task's container as up: from now on, its end unannounced is its loss."""
    with contextlib.suppress(Exception):
        task.app.kv[up_key(task.container_id)] = b"1"


def ended_by_itself(task: Any) -> None:
    """Mark the task's container as ending by itself (a failure, not a loss), before it ends."""
    with contextlib.suppress(Exception):
        task.app.kv[exited_key(task.container_id)] = b"1"


#: The losses the TensorFlow cluster recovers from inside its application: a container YARN
#: took back, lost with its node (its replacement waits for a node of its partition), or
#: killed whole by a signal.
IN_APPLICATION = tuple(c.value for c in LOSSES)
#: A restart record's cause for a task stopped so that its cluster restarts together.
PEER_RESTARTED = Cause.PEER_RESTARTED.value


# -- which task a container is --------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Slot:
    """A container's task index, its restarts, and the container it replaces (or None)."""

    index: int
    restarts: int
    previous: Any = None


def failed_in_order(containers: Iterable[Any]) -> list[Any]:
    """A service's FAILED containers in the order they ended (skein replaced them in it)."""
    failed = [c for c in containers if _state(c) == "FAILED"]
    return sorted(failed, key=lambda c: (_finished(c), c.instance))


def slot_of(instance: int, instances: int, failed: Sequence[Any]) -> Slot:
    """The slot of container ``instance`` of a service of ``instances``, whose FAILED
    containers are ``failed`` (:func:`failed_in_order`); ``instance % instances`` when the
    list does not tell (not yet seen, or a store that does not say)."""
    if instance < instances:
        return Slot(instance, 0)
    k = instance - instances
    if k >= len(failed) or failed[k].instance >= instance:
        return Slot(instance % instances, instance // instances)
    prev = slot_of(failed[k].instance, instances, failed)
    return Slot(prev.index, prev.restarts + 1, failed[k])


def names(containers: Sequence[Any], topology: Mapping[str, int]) -> dict[str, str]:
    """Container id -> its task (``worker:1``), for the services of ``topology``."""
    out = {}
    for service in {c.service_name for c in containers}:
        mine = [c for c in containers if c.service_name == service]
        failed, n = failed_in_order(mine), topology.get(service, 0)
        for c in mine:
            index = slot_of(c.instance, n, failed).index if n else c.instance
            out[container_id(c)] = f"{service}:{index}"
    return out


# -- the generation -------------------------------------------------------------------------------
def generation(kv: Mapping[str, Any]) -> int:
    """The cluster's generation: how many of its containers were lost so far."""
    return sum(1 for k in kv if k.startswith(LOST))


def unmarked(kv: Mapping[str, Any], failed: Iterable[Any]) -> list[Any]:
    """FAILED containers of the cluster that neither followed their peers nor are counted."""
    return [c for c in failed if follow_key(container_id(c)) not in kv
            and lost_key(container_id(c)) not in kv]  # fmt: skip


def sync(app: Any, kv: Mapping[str, Any], services: Sequence[str]) -> int:
    """Mark the cluster's containers lost since ``kv`` (a snapshot); the generation. A
    container of the cluster that failed by itself (not preempted, not lost with its node)
    ends the application at once, as skein does without restarts: its replacement would
    spend no retry, and might never be allocated."""
    try:
        failed = app.get_containers(services=list(services), states=["FAILED"]) if services else []
    except Exception:  # the application master busy or going: the markers stand
        failed = []
    new = 0
    for c in unmarked(kv, failed):
        if loss_of(app, kv, c)[0] in IN_APPLICATION:
            app.kv[lost_key(container_id(c))] = b"1"
            new += 1
        elif unmarked(app.kv.get_range(), [c]):  # not one that followed since the snapshot
            why = f"Failure in service {c.service_name}, see logs for more information."
            log(f"{container_id(c)} failed by itself ({c.exit_message}): ending the application")
            end_application(app, why)
    return generation(kv) + new


def addresses(
    kv: Mapping[str, Any], peers: Sequence[str], gen: int, initial: Mapping[str, str]
) -> dict[str, str]:
    """The peers' addresses known in generation ``gen`` (``initial``: generation 0's)."""
    if gen == 0:
        return {p: a for p, a in initial.items() if p in peers}
    out = {}
    for p in peers:
        value = kv.get(address_key(gen, p))
        if value is not None:
            out[p] = value.decode() if isinstance(value, bytes) else str(value)
    return out


def _state(c: Any) -> str:
    state = getattr(c, "state", "")
    return str(getattr(state, "name", state))


def _finished(c: Any) -> float:
    t = getattr(c, "finish_time", None)
    return t.timestamp() if t is not None else float("inf")


# -- a task's part in it ----------------------------------------------------------------------
#: How often a trainer looks whether its cluster lost a container (s).
POLL_S = 1.0
#: How long a trainer whose training raised waits to learn that a peer was lost (s).
GRACE_S = 10.0


def record(task: Any, **fields: Any) -> None:
    """Write (or rewrite, with more fields) the task's restart record for its restart."""
    key = events.restart_key(task.name, task.restarts)
    value = task.app.kv.get(key)
    old = events.decode(value) if value is not None else {}
    old.pop("t", None)
    task.app.kv[key] = events.encode({**old, **fields})


def begin(task: Any) -> str:
    """A restarted container's first step: its restart record (why, the steps it had) and,
    for a lost container, the loss's marker. Returns why the application must end instead
    (a task of the cluster whose container failed by itself spends a retry), or ""."""
    if not task.restarts:
        return ""
    kv = task.app.kv.get_range()
    prev = task.slot.previous
    prev_id = container_id(prev) if prev is not None else ""
    # A preempted container may see its own loss marked in the moment between YARN's
    # SIGTERM and its SIGKILL, and follow: the loss, marked first, says why.
    if prev_id and follow_key(prev_id) in kv and lost_key(prev_id) not in kv:
        cause, status = PEER_RESTARTED, None
    elif prev is not None:
        cause, status = loss_of(task.app, kv, prev)
    else:
        cause, status = Cause.FAILED.value, None
    if (
        task.type in CLUSTER and prev is not None and cause not in (*IN_APPLICATION, PEER_RESTARTED)
    ):  # not a restart: the run ends, with the lost container's own stop and traceback
        return f"{task.name}'s container {prev_id} ended ({cause}): {prev.exit_message}"
    step = events.parse(kv).progress.get(task.name, {}).get("step")
    record(task, cause=cause, exit_status=status, step=step, container=prev_id,
           exit_message=getattr(prev, "exit_message", "") or "")  # fmt: skip
    log(f"{task.name} restarted ({task.restarts}): {cause} ({prev_id or 'container unknown'})")
    if cause in IN_APPLICATION and prev_id:
        task.app.kv[lost_key(prev_id)] = b"1"
    return ""


def resumed(task: Any, step: int) -> None:
    """A restarted trainer restored its checkpoint of ``step``: the steps it lost are known."""
    if task.restarts:
        with contextlib.suppress(Exception):
            record(task, resumed_step=step)


def services(task: Any) -> list[str]:
    return [t for t in CLUSTER if task.topology.get(t)]


def over_budget(gen: int) -> str:
    """Why the run ends when its cluster lost containers more often than it may restart."""
    bound = preemptions()
    if gen <= bound:
        return ""
    return (f"the TensorFlow cluster lost a container {gen} times, more than the run's "
            f"{bound} restarts for lost containers")  # fmt: skip


def follow(task: Any) -> None:
    """End this process so that skein restarts the task in the cluster's new generation
    (when its turn comes: :func:`exit_gate.wait_for_turn`)."""
    exit_gate.wait_for_turn(task)
    with contextlib.suppress(Exception):
        task.app.kv[follow_key(task.container_id)] = b"1"
    log(f"{task.name}: a peer was lost; restarting with the cluster")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(FOLLOW_EXIT)


def peer_lost(task: Any, grace_s: float | None = None) -> bool:
    """After the task's training raised: whether its cluster lost a container meanwhile
    (looked for until ``grace_s``: YARN tells the application master within seconds)."""
    if len(task.peers()) < 2:
        return False
    deadline = time.monotonic() + (GRACE_S if grace_s is None else grace_s)
    while True:
        with contextlib.suppress(Exception):
            if sync(task.app, task.app.kv.get_range(), services(task)) > task.generation:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)


def end_application(app: Any, why: str) -> None:
    """End the application FAILED saying ``why`` (``app``: skein's client, or a task's)."""
    app = getattr(app, "app", app)
    try:
        from skein.model import FinalStatus

        app.shutdown(FinalStatus.FAILED, why)
    except Exception as exc:  # the container's exit status still fails it
        log(f"could not end the application: {exc!r}")


class Watcher:
    """A task's thread: when its cluster loses a container (the generation grows), a trainer
    or ps ends itself to restart with it (collective ops cannot be interrupted otherwise);
    any task ends the application when a container of the cluster failed by itself."""

    def __init__(self, task: Any, exit_fn: Any = None) -> None:
        self.task, self.exit_fn = task, exit_fn or follow
        self.follows = task.type in CLUSTER
        self.stopped = threading.Event()

    def check(self) -> bool:
        """One look; whether the task follows."""
        gen = sync(self.task.app, self.task.app.kv.get_range(), services(self.task))
        if why := over_budget(gen):
            end_application(self.task, why)
            return False
        if self.follows and gen > self.task.generation and not self.stopped.is_set():
            self.exit_fn(self.task)
            return True
        return False

    def _loop(self) -> None:
        while not self.stopped.wait(POLL_S):
            with contextlib.suppress(Exception):
                if self.check():
                    return

    def start(self) -> Watcher:
        others = [p for p in self.task.peers() if p != self.task.name]
        if others:
            threading.Thread(target=self._loop, name="tfyarn-regroup", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopped.set()
