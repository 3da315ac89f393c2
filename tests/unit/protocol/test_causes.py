"""How both sides read why YARN ended a container (tfyarn_jupyter.protocol.causes)."""

from __future__ import annotations

import pytest

from tfyarn_jupyter.protocol.causes import LOSSES, Cause, read_yarn


@pytest.mark.parametrize(
    ("message", "status", "cause", "status_read"),
    [
        ("Container preempted by scheduler", None, Cause.PREEMPTED, -102),
        ("", -102, Cause.PREEMPTED, -102),
        ("Container released on a *lost* node", None, Cause.NODE_LOST, -100),
        ("Node decommissioned", None, Cause.NODE_LOST, -100),
        ("", -100, Cause.NODE_LOST, -100),
        ("", -101, Cause.NODE_LOST, -101),
        ("Disks failed on the node", None, Cause.NODE_LOST, -101),
        ("Container killed by the ApplicationMaster.", None, Cause.KILLED, None),
        ("Killed by user", None, Cause.KILLED, None),
        ("Exception from container-launch. Exit code: 1", None, Cause.FAILED, None),
        ("Exception from container-launch. Exit code: 1", 1, Cause.FAILED, 1),
        ("is running beyond physical memory limits", None, Cause.FAILED, None),
        # skein's words for any positive exit status, a container killed whole among them:
        # the container side tells that one apart by what its task wrote (container.regroup).
        ("Container failed during execution, see logs for more information.", None,
         Cause.FAILED, None),
        ("Container killed on request. Exit code is 137", None, Cause.FAILED, None),
        ("", None, Cause.FAILED, None),
    ],
)  # fmt: skip
def test_the_cause_comes_from_the_exit_status_else_from_yarns_words(
    message, status, cause, status_read
):
    assert read_yarn(message, status) == (cause, status_read)


def test_the_losses_are_the_containers_not_the_tasks():
    assert set(LOSSES) == {Cause.PREEMPTED, Cause.NODE_LOST, Cause.CONTAINER_KILLED}
    assert not {Cause.KILLED, Cause.FAILED, Cause.PEER_RESTARTED} & set(LOSSES)


def test_causes_are_the_words_a_restart_record_carries():
    words = {c.value for c in Cause}
    assert words == {"preempted", "node lost", "container killed", "killed", "failed",
                     "peer restarted"}  # fmt: skip
