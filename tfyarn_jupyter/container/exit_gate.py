"""Container side: the trainers that follow a lost peer end one at a time (issue 25).

When a container of the TensorFlow cluster is lost, every other trainer ends itself so
that skein restarts it in the cluster's new generation (:mod:`regroup`). Each end makes
skein's application master request a replacement; this module decides when a trainer
may end. I/O: skein's key-value store and container list, through the task's client.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from tfyarn_jupyter.container.log import log

#: How often a waiting trainer looks again (s).
POLL_S = 1.0
#: The key a trainer holds while it ends to restart with its cluster: one at a time.
EXITING = "cluster/exiting"
#: The most container requests skein's application master may have outstanding when one
#: more is made (see :func:`wait_for_turn`).
OUTSTANDING_MAX = 1
#: How long a trainer waits for its turn to end (s): then it ends anyway, as when the
#: requests outstanding wait for room that only its own container would make.
TURN_TIMEOUT_S = 90.0


def outstanding(app: Any) -> int:
    """The application's containers skein's master has asked YARN for and not received."""
    return len(app.get_containers(states=["WAITING", "REQUESTED"]))


def wait_for_turn(task: Any, timeout_s: float | None = None) -> bool:
    """Wait until this trainer may end to restart with its cluster: it alone is ending
    (it owns :data:`EXITING`) and at most :data:`OUTSTANDING_MAX` container request is
    outstanding. Whether it got its turn (False: it timed out, and ends anyway).

    Why: skein 0.8.2's application master numbers a new request with the smallest
    outstanding priority + 1 (``TreeMap.lastKey()``, meant as the largest, but Hadoop's
    ``Priority`` sorts from high numbers to low), so with two requests outstanding a third
    one takes the second's number; the master then releases every container YARN gives
    that number but one, and a replacement is never started. Ending one at a time, with at
    most one request outstanding, no number repeats. The key is owned by this container:
    the master deletes it when the container ends, under the same lock as it requests the
    replacement, so the next trainer's count includes that request.
    """
    import skein

    limit = TURN_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    me, owned = task.container_id, False
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if not owned:
                owned = (
                    task.app.kv.transaction(
                        conditions=[skein.kv.missing(EXITING)],
                        on_success=[skein.kv.put(EXITING, me.encode(), owner=me)],
                    ).succeeded
                    or task.app.kv.get(EXITING) == me.encode()
                )
            if owned and outstanding(task.app) <= OUTSTANDING_MAX:
                return True
        time.sleep(POLL_S)
    log(
        f"{task.name}: no turn to restart in {limit:.0f} s (container requests outstanding:"
        " skein's master could starve one); restarting anyway"
    )
    return False
