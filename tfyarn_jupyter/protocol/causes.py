"""Why a task's container ended before its task did: the words both sides use (pure).

A restarted container writes its cause into its restart record (``restarts/<task>/<n>``,
:mod:`.events`); the client reads it there, and reads YARN's own report of a container
that ended, to decide what a failed attempt calls for. Both read YARN the same way, here:
its exit status when they have it, else the diagnostics skein passes on (only the text).
"""

from __future__ import annotations

import enum

#: YARN's ContainerExitStatus values that say the container, not the task, was lost.
PREEMPTED_STATUS, ABORTED_STATUS, DISKS_FAILED_STATUS = -102, -100, -101


class Cause(str, enum.Enum):
    """Why a task's container ended before the task finished."""

    #: YARN took it back for another queue.
    PREEMPTED = "preempted"
    #: Lost with its node (the node lost, decommissioned, or its disks failed).
    NODE_LOST = "node lost"
    #: Killed whole from outside by a signal (``yarn container -signal``): nothing in it
    #: lived to say so (found by the container side, not in YARN's words).
    CONTAINER_KILLED = "container killed"
    #: Killed by the user or the application master.
    KILLED = "killed"
    #: The task failed by itself (its code raised, it ran out of memory...).
    FAILED = "failed"
    #: Stopped so that its TensorFlow cluster restarts together (a restart record's cause).
    PEER_RESTARTED = "peer restarted"


#: The container's loss, not the task's failure: restarted from the run's own bound.
LOSSES = (Cause.PREEMPTED, Cause.NODE_LOST, Cause.CONTAINER_KILLED)


def read_yarn(exit_message: str, exit_status: int | None = None) -> tuple[Cause, int | None]:
    """Why YARN ended a container, and the exit status that says so (the given one, else
    the one YARN's words stand for; None for a kill or the task's own failure)."""
    if exit_status == PREEMPTED_STATUS:
        return Cause.PREEMPTED, exit_status
    if exit_status in (ABORTED_STATUS, DISKS_FAILED_STATUS):
        return Cause.NODE_LOST, exit_status
    text = (exit_message or "").lower()
    if "preempt" in text:
        return Cause.PREEMPTED, PREEMPTED_STATUS
    if "disks failed" in text or "disk failed" in text:
        return Cause.NODE_LOST, DISKS_FAILED_STATUS
    if "lost node" in text or "*lost*" in text or "node lost" in text or "decommission" in text:
        return Cause.NODE_LOST, ABORTED_STATUS
    if "killed by user" in text or "killed by the applicationmaster" in text:
        return Cause.KILLED, None
    return Cause.FAILED, exit_status
