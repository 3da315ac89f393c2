"""The ResourceManager's answers, never waited for longer than a poll can afford.

While the ResourceManager restarts (an upgrade, a failover to its standby), YARN's client
retries each call for minutes (``yarn.resourcemanager.connect.max-wait.ms``, 15 min by
default). A poll that waited that long would freeze the panel while the application, its
master and its tasks go on training: with work-preserving recovery, a restart loses
nothing. So :class:`BoundedCall` makes each call on a thread of its own and waits at most
``timeout``; until an answer comes, the ResourceManager counts as unreachable (since when,
and why, for the panel's note), and the poller builds the run's view from the
application master alone. A call still running is not made again: the next poll waits
for the same one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("tfyarn_jupyter")

#: The longest a poll waits for the ResourceManager before it reads the master alone.
CALL_TIMEOUT_S = 8.0


class _Call:
    """One call on a daemon thread (a call blocked in the driver never holds up exit)."""

    def __init__(self, fn: Callable[[], Any], started: float) -> None:
        self.started = started
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        threading.Thread(target=self._run, args=(fn,), name="tfyarn-rm-call", daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.value = fn()
        except BaseException as exc:  # handed to the caller, who decides
            self.error = exc
        finally:
            self.done.set()


class BoundedCall:
    """``fn()``'s latest answer within ``timeout``; None (and unreachable) without one."""

    def __init__(
        self,
        fn: Callable[[], Any],
        timeout: float = CALL_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._fn = fn
        self.timeout = timeout
        self._clock = clock
        self._pending: _Call | None = None
        #: Since when (epoch seconds) the ResourceManager has not answered; None while it does.
        self.unreachable_since: float | None = None
        #: Why the latest call gave nothing: no answer in time, or the error it raised.
        self.reason = ""

    def get(self) -> Any:
        """The answer, or None when none came in time or the call failed."""
        call = self._pending or _Call(self._fn, self._clock())
        if not call.done.wait(self.timeout):
            self._pending = call  # still running: the next poll waits for this one
            return self._unanswered(f"no answer in {self.timeout:.0f} s", call.started)
        self._pending = None
        if call.error is not None:
            return self._unanswered(f"{type(call.error).__name__}: {call.error}", call.started)
        if self.unreachable_since is not None:
            down = self._clock() - self.unreachable_since
            logger.info("the ResourceManager answers again (unreachable for %.0f s)", down)
        self.unreachable_since, self.reason = None, ""
        return call.value

    def _unanswered(self, reason: str, since: float) -> None:
        if self.unreachable_since is None:
            self.unreachable_since = since  # when the unanswered call was made
            logger.warning("the ResourceManager does not answer (%s): the run's view comes "
                           "from its application master until it does", reason)  # fmt: skip
        self.reason = reason
        return None

    def message(self, now: float | None = None) -> str:
        """What the panel says while the ResourceManager does not answer ("" while it does)."""
        if self.unreachable_since is None:
            return ""
        return unreachable_message(
            self.unreachable_since, self._clock() if now is None else now, self.reason
        )


def unreachable_message(since: float, now: float, reason: str) -> str:
    """The note for a ResourceManager silent since ``since`` (epoch seconds)."""
    clock = time.strftime("%H:%M:%S", time.localtime(since))
    return (
        f"ResourceManager unreachable since {clock} ({max(0.0, now - since):.0f} s; {reason}). "
        "The tasks' own progress still shows; YARN's view of the run (states, nodes, "
        "queue) resumes when it answers. A restart of the ResourceManager with recovery "
        "loses no container."
    )
