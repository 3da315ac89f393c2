"""Container side: checkpoint pushes beside training, not inside its loop.

HDFS takes about half a second to close each file a push writes, and a checkpoint of a
few GB takes seconds more to upload: a push inside the training loop stops training for
that long at every save. A :class:`BackgroundPusher` takes the push off the loop: the
training thread only asks for one (:meth:`~BackgroundPusher.request` returns at once);
one thread per task pushes whatever checkpoint is newest when it gets to it, so a save
made while another is being pushed is not queued behind it (the queue holds one request,
and older checkpoints are skipped). A push keeps its atomic order (temporary names,
renames, the ``checkpoint`` index last: :meth:`.checkpoints.ModelDir.push_checkpoint`),
so the evaluator and a resumed run only ever see complete checkpoints. A failed push is
logged and tried again with a backoff; :meth:`~BackgroundPusher.flush`, at the end of
training, waits for the newest checkpoint to be pushed and raises if it cannot be: a
checkpoint is never lost silently.

The pushing thread runs at a lower CPU priority (:data:`PUSH_NICE`), and so do the threads
it starts: on a node whose cores the steps keep busy, a push takes what training leaves
rather than slowing the steps, and when it falls behind it skips to the newest checkpoint.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

#: Seconds between tries of a failing push: doubled each time, up to the last.
BACKOFF_S = (1.0, 2.0, 4.0, 8.0)
#: The nice value of the pushing threads (a training thread has 0): under contention a
#: thread at 10 gets about a tenth of what one at 0 gets.
PUSH_NICE = 10

T = TypeVar("T")


def lower_priority(nice: int = PUSH_NICE) -> None:
    """Lower the calling thread's CPU priority to ``nice`` (never raise it); threads it
    starts from then on inherit it. Linux sets it per thread; elsewhere nothing changes."""
    if not hasattr(os, "setpriority"):
        return
    with contextlib.suppress(OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), nice))


def thread_priorities(prefix: str, proc: str = "/proc/self/task") -> dict[int, int]:
    """``{nice: number of threads}`` over this process's threads whose name starts with
    ``prefix`` (Linux names are cut at 15 characters): what a run reports so that the
    priority its pushes really ran at can be checked. Empty where ``/proc`` is not."""
    found: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for tid in os.listdir(proc):
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(os.path.join(proc, tid, "stat")) as f:
                    stat = f.read()
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                if name.startswith(prefix[:15]):
                    nice = int(stat[stat.rindex(")") + 2 :].split()[16])  # field 19
                    found[nice] = found.get(nice, 0) + 1
    return found


def in_low_priority_thread(make: Callable[[], T]) -> T:
    """``make()`` called in a thread of lowered priority (:func:`lower_priority`):
    the threads it starts keep that priority. An ``hdfs_native.Client`` starts its runtime's
    threads as it is made, and those move the pushes' bytes."""
    out: list[T] = []
    errors: list[BaseException] = []

    def call() -> None:
        lower_priority()
        try:
            out.append(make())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=call, name="tfyarn-hdfs-client")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]


class PushFailed(RuntimeError):
    """The newest checkpoint could not be pushed before the deadline: the message says why."""


class BackgroundPusher:
    """One thread pushing a model dir's newest checkpoint whenever asked.

    ``push()`` pushes the newest local checkpoint (and may find nothing new); ``log``
    receives one line per failure and per skipped checkpoint.
    """

    def __init__(
        self,
        push: Callable[[], Any],
        log: Callable[[str], None],
        backoff_s: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self._push, self._log, self._backoff = push, log, backoff_s
        self._cond = threading.Condition()
        self._pending = False
        self._busy = False
        self._closed = False
        self._failures = 0
        self.last_error: BaseException | None = None
        #: What happened: pushes made, requests folded into a later push, failed tries,
        #: and the nice value the pushing thread runs at.
        self.stats = {"pushes": 0, "skipped": 0, "failed": 0, "push_s": 0.0, "nice": 0}
        self._thread = threading.Thread(target=self._loop, name="tfyarn-pusher", daemon=True)
        self._thread.start()

    def request(self) -> None:
        """Ask for a push of the newest checkpoint (a save was made); returns at once."""
        self._ask(save=True)

    def _ask(self, save: bool) -> None:
        with self._cond:
            if self._pending and save:
                self.stats["skipped"] += 1  # the push to come takes the newest anyway
            self._pending = True
            self._cond.notify_all()

    def _loop(self) -> None:
        lower_priority()
        with contextlib.suppress(AttributeError, OSError):
            self.stats["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending and self._closed:
                    return
                self._pending, self._busy = False, True
            ok = self._try_push()
            with self._cond:
                self._busy = False
                if not ok:
                    self._pending = True  # tried again after the backoff
                self._cond.notify_all()
            if not ok:
                self._sleep(self._backoff[min(self._failures, len(self._backoff)) - 1])

    def _try_push(self) -> bool:
        t0 = time.monotonic()
        try:
            self._push()
        except Exception as exc:
            self._failures += 1
            self.last_error = exc
            self.stats["failed"] += 1
            self._log(f"push failed (try {self._failures}), tried again: {exc!r}")
            return False
        self._failures, self.last_error = 0, None
        self.stats["pushes"] += 1
        self.stats["push_s"] += time.monotonic() - t0
        return True

    def _sleep(self, seconds: float) -> None:
        with self._cond:  # a close or a flush does not wait out the backoff
            self._cond.wait_for(lambda: self._closed, timeout=seconds)

    def flush(self, timeout_s: float = 600.0) -> None:
        """Push the newest checkpoint and wait until it is on HDFS; :class:`PushFailed` if it
        is not by ``timeout_s`` (the last try's error as the cause)."""
        self._ask(save=False)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    raise PushFailed(
                        f"the newest checkpoint was not pushed within {timeout_s:.0f} s "
                        f"({self._failures} failed tries)"
                    ) from self.last_error
                self._cond.wait(min(left, 1.0))

    def close(self) -> None:
        """Stop the thread once what is asked is done (or at once when it keeps failing)."""
        with self._cond:
            self._closed = True
            if self._failures:
                self._pending = False
            self._cond.notify_all()
        self._thread.join(timeout=60)


#: The name of the threads of an ``hdfs_native`` client's runtime, which move a push's bytes.
CLIENT_THREADS = "tokio-rt-worker"


def push_report(pusher: BackgroundPusher) -> dict[str, float | int | None]:
    """What the pushes did (:attr:`BackgroundPusher.stats`), the nice value
    their thread ran at and the range of those their HDFS client's threads run at (all
    :data:`PUSH_NICE` when the steps come first): flat, as events want."""
    stats = pusher.stats
    nices = thread_priorities(CLIENT_THREADS)
    return {
        "pushes": stats["pushes"],
        "pushes_skipped": stats["skipped"],
        "pushes_failed": stats["failed"],
        "push_s": round(stats["push_s"], 3),
        "push_nice": stats["nice"],
        "push_client_threads": sum(nices.values()),
        "push_client_nice_min": min(nices, default=None),
        "push_client_nice_max": max(nices, default=None),
    }
