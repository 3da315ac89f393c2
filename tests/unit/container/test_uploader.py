"""Checkpoint pushes beside training (tfyarn_jupyter.container.uploader): with a fake push."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from tfyarn_jupyter.container.uploader import (
    PUSH_NICE,
    BackgroundPusher,
    PushFailed,
    in_low_priority_thread,
)

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="per-thread priorities: Linux")


class SlowPush:
    """A push that takes ``seconds`` and records which checkpoint (the newest) it pushed."""

    def __init__(self, seconds: float = 0.0, fail_first: int = 0) -> None:
        self.seconds, self.fail_first = seconds, fail_first
        self.newest = 0
        self.pushed: list[int] = []
        self.tries = 0
        self.started = threading.Event()

    def __call__(self) -> None:
        self.tries += 1
        self.started.set()
        newest = self.newest  # what is on local disk when the push starts
        time.sleep(self.seconds)
        if self.tries <= self.fail_first:
            raise OSError(f"DataNode went away (try {self.tries})")
        self.pushed.append(newest)


def test_a_request_returns_at_once_however_slow_the_push():
    push, lines = SlowPush(seconds=0.5), []
    pusher = BackgroundPusher(push, lines.append)
    t0 = time.monotonic()
    push.newest = 1
    pusher.request()
    assert time.monotonic() - t0 < 0.1
    pusher.flush(timeout_s=10)
    pusher.close()
    assert push.pushed == [1]


def test_saves_made_while_a_push_runs_are_folded_into_one_push_of_the_newest():
    push = SlowPush(seconds=0.3)
    pusher = BackgroundPusher(push, lambda line: None)
    push.newest = 1
    pusher.request()
    assert push.started.wait(5)
    for step in (2, 3, 4):  # three saves while checkpoint 1 is pushed
        push.newest = step
        pusher.request()
    pusher.flush(timeout_s=10)
    pusher.close()
    assert push.pushed == [1, 4], "2 and 3 were skipped for the newest"
    assert pusher.stats["skipped"] == 2 and pusher.stats["pushes"] == 2


def test_a_failed_push_is_logged_and_tried_again_until_it_succeeds():
    push, lines = SlowPush(fail_first=2), []
    pusher = BackgroundPusher(push, lines.append, backoff_s=(0.01, 0.02))
    push.newest = 7
    pusher.flush(timeout_s=10)
    pusher.close()
    assert push.pushed == [7] and push.tries == 3
    assert len(lines) == 2 and "DataNode went away (try 1)" in lines[0]
    assert pusher.stats["failed"] == 2 and pusher.last_error is None


def test_flush_raises_when_the_newest_checkpoint_cannot_be_pushed_in_time():
    push = SlowPush(fail_first=1000)
    pusher = BackgroundPusher(push, lambda line: None, backoff_s=(0.01,))
    with pytest.raises(PushFailed, match="not pushed within") as failed:
        pusher.flush(timeout_s=0.3)
    assert isinstance(failed.value.__cause__, OSError)
    t0 = time.monotonic()
    pusher.close()
    assert time.monotonic() - t0 < 5, "a failing pusher stops without waiting out its tries"


def test_flush_with_nothing_new_pushes_once_and_returns():
    push = SlowPush()
    pusher = BackgroundPusher(push, lambda line: None)
    pusher.flush(timeout_s=5)
    pusher.flush(timeout_s=5)
    pusher.close()
    assert push.tries == 2


def nice_of_this_thread() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux_only
def test_pushes_run_at_a_lower_priority_than_the_training_thread():
    seen: list[int] = []
    pusher = BackgroundPusher(lambda: seen.append(nice_of_this_thread()), log=lambda _: None)
    pusher.request()
    pusher.flush(timeout_s=10)
    pusher.close()
    assert seen and all(n >= PUSH_NICE for n in seen), seen
    assert nice_of_this_thread() < PUSH_NICE  # the caller's (training's) own is untouched


@linux_only
def test_what_a_low_priority_thread_makes_starts_its_threads_at_that_priority():
    def make() -> list[int]:
        inner: list[int] = []
        child = threading.Thread(target=lambda: inner.append(nice_of_this_thread()))
        child.start()
        child.join()
        return [nice_of_this_thread(), *inner]

    assert all(n >= PUSH_NICE for n in in_low_priority_thread(make))
    assert nice_of_this_thread() < PUSH_NICE


def test_a_failure_to_make_in_the_low_priority_thread_is_raised_to_the_caller():
    def make() -> None:
        raise ConnectionError("no NameNode")

    with pytest.raises(ConnectionError, match="no NameNode"):
        in_low_priority_thread(make)
