"""What to do when a task's container is lost: why it was lost, what restarts, which budget pays.

Pure: the decision table of issue 25, from why a container was lost (as
:func:`.protocol.causes.read_yarn` reads YARN's exit status or diagnostics, the container
side too), the task's type and the program's strategy.

- **Why.** A container YARN took back (PREEMPTED, -102), or lost with its node (ABORTED,
  -100, "released on a *lost* node"; DISKS_FAILED, -101), or killed whole by a signal
  (``yarn container -signal ID FORCEFUL_SHUTDOWN``: exit 137, with nothing left in it to
  report), is not the task's fault: it is restarted without spending the user's
  ``nb_retries``, from a budget of its own (``preemptions``, generous by default). A task
  that failed on its own (its code raised, it ran out of memory, its process was killed
  inside a container that lived on) spends a retry, as before; ``nb_retries=0`` still
  means one try. A task the user killed is not restarted.
- **What.** A task no one depends on (evaluator, tensorboard) restarts alone. Trainers and
  parameter servers restart as the strategy needs: all-reduce (MultiWorkerMirrored, an
  Estimator's between-graph replication) and a lost ps need every task of the TensorFlow
  cluster restarted together, from the last complete checkpoint. Keras's
  ParameterServerStrategy too: TensorFlow's ``ClusterCoordinator`` reschedules a lost
  worker's closures and waits for the worker to come back *at the address of its
  ClusterSpec*, fixed when the strategy was made; a replacement YARN container has a new
  host and port, which the coordinator never learns. So a worker cannot restart alone on
  YARN, and the whole cluster restarts with a new cluster spec (``container.regroup``).

The tasks apply the table inside the application (``container.regroup``: skein's
``max_restarts`` starts the replacements); :func:`decide_attempt` is the client's reading
of an attempt that ended, for its run-level retries, with what the application already
restarted itself taken from the same bound. A new application after a lost container waits
first (:func:`loss_backoff_s`: the cluster took it back, and asking again at once meets the
same full queue); one after the task's own failure is submitted at once, as tf-yarn does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tfyarn_jupyter.protocol.causes import LOSSES, Cause

#: Restarts a run makes for preempted and lost containers before it gives up.
DEFAULT_PREEMPTIONS = 10
#: Where a user sets that bound (``env=``); the tasks read it too (``container.regroup``).
PREEMPTIONS_VAR = "TFYARN_PREEMPTIONS"
#: The wait before a new application after the first lost container, doubled for each
#: further one, up to the cap: a queue that preempts is full, and stays full for a while.
LOSS_BACKOFF_S, LOSS_BACKOFF_CAP_S = 5.0, 120.0
#: Tasks outside the TensorFlow cluster: nothing waits on them.
INDEPENDENT = ("evaluator", "tensorboard")
#: Everything of the TensorFlow cluster (restarted together where the strategy needs it).
CLUSTER = ("chief", "worker", "ps")


@dataclasses.dataclass(frozen=True)
class Budget:
    """What is left to spend: retries (the user's ``nb_retries``) and preemption restarts."""

    retries: int
    preemptions: int = DEFAULT_PREEMPTIONS


@dataclasses.dataclass(frozen=True)
class Decision:
    """What to restart (task types, in the cluster's order; empty: nothing), what it costs,
    and what is left; ``give_up`` with ``why`` when the run ends instead."""

    restart: tuple[str, ...]
    spends: str  # "retries", "preemptions" or "" (nothing is restarted)
    left: Budget
    why: str
    give_up: bool = False


def restart_set(task_type: str, strategy: str, topology: Mapping[str, int]) -> tuple[str, ...]:
    """The task types to restart when one ``task_type`` task is lost under ``strategy``."""
    if task_type in INDEPENDENT:
        return (task_type,)
    # Every strategy: a replacement has a new address, which no running task would use.
    return tuple(t for t in CLUSTER if topology.get(t, 0))


def decide(
    task: str, cause: Cause, strategy: str, topology: Mapping[str, int], budget: Budget
) -> Decision:
    """The decision for ``task`` (``"worker:1"``) lost for ``cause``."""
    task_type = task.partition(":")[0]
    if cause is Cause.KILLED:
        return Decision((), "", budget, f"{task} was killed by the user: not restarted", True)
    what = restart_set(task_type, strategy, topology)
    if cause in LOSSES:
        if budget.preemptions <= 0:
            why = f"{task} {cause.value} once more than the run's restarts for lost containers"
            return Decision((), "", budget, why, True)
        left = dataclasses.replace(budget, preemptions=budget.preemptions - 1)
        return Decision(what, "preemptions", left, f"{task} {cause.value}: restarting {what}")
    if budget.retries <= 0:
        return Decision((), "", budget, f"{task} failed and no retry is left (nb_retries)", True)
    left = dataclasses.replace(budget, retries=budget.retries - 1)
    return Decision(what, "retries", left, f"{task} failed: restarting {what}")


def preemptions_bound(env: Mapping[str, str]) -> int:
    """The run's bound on restarts for lost containers, from its ``env=`` (else the default)."""
    value = env.get(PREEMPTIONS_VAR, "")
    return int(value) if value.isdecimal() else DEFAULT_PREEMPTIONS


def losses_restarted(restarts: Mapping[str, Sequence[Mapping[str, Any]]]) -> int:
    """How many lost containers an application restarted itself: its tasks' restart records
    (``protocol.events``' ``restarts``) whose cause is the container's loss. A peer stopped
    to regroup, or a task that failed on its own, spent nothing of the bound."""
    lost = {c.value for c in LOSSES}
    return sum(1 for records in restarts.values() for r in records if r.get("cause") in lost)


def decide_attempt(
    task: str,
    cause: Cause,
    strategy: str,
    topology: Mapping[str, int],
    budget: Budget,
    restarted_inside: int,
) -> Decision:
    """The client's decision for an attempt that ended, after its application had already
    restarted ``restarted_inside`` lost containers itself: those come out of the same bound,
    so a run never makes more restarts for lost containers than it may, inside and across
    its applications; past the bound it ends, saying so."""
    left = dataclasses.replace(budget, preemptions=max(0, budget.preemptions - restarted_inside))
    if restarted_inside > budget.preemptions:
        why = (
            f"the application restarted {restarted_inside} lost containers, more than the "
            f"run's {budget.preemptions} restarts for lost containers ({PREEMPTIONS_VAR})"
        )
        return Decision((), "", left, why, True)
    return decide(task, cause, strategy, topology, left)


def loss_backoff_s(losses_before: int) -> float:
    """Seconds to wait before the new application that replaces one ended by a lost container,
    when the run's previous attempts already ended that way ``losses_before`` times."""
    return min(LOSS_BACKOFF_S * 2 ** max(losses_before, 0), LOSS_BACKOFF_CAP_S)


def backoff_after(restarts: Sequence[Mapping[str, Any]]) -> float:
    """The wait before the new attempt that the last of a run's restart records decided:
    none after a task's own failure, :func:`loss_backoff_s` after a lost container."""
    if not restarts or restarts[-1].get("spent") != "preemptions":
        return 0.0
    return loss_backoff_s(sum(1 for r in restarts[:-1] if r.get("spent") == "preemptions"))
