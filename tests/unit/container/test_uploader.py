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
    push_report,
    thread_priorities,
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
    assert pusher.stats["nice"] == seen[0]  # what a run reports is what the thread ran at
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


def fake_task(root, tid: int, name: str, nice: int) -> None:
    """A ``/proc/<pid>/task/<tid>/stat`` line as Linux writes it (nice is field 19)."""
    (root / str(tid)).mkdir()
    fields = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", "0", "0", "0", "0",
              "20", str(nice), "1", "0"]  # fmt: skip
    (root / str(tid) / "stat").write_text(f"{tid} ({name}) {' '.join(fields)}\n")


def test_thread_priorities_counts_the_named_threads_by_nice_value(tmp_path):
    fake_task(tmp_path, 10, "python", 0)
    fake_task(tmp_path, 11, "tokio-rt-worker", 10)
    fake_task(tmp_path, 12, "tokio-rt-worker", 10)
    fake_task(tmp_path, 13, "tokio-rt-worker", 0)
    fake_task(tmp_path, 14, "a (b) c", 5)  # a name with parentheses and spaces
    (tmp_path / "15").mkdir()  # a thread that ended while the folder was read
    assert thread_priorities("tokio-rt-worker", proc=str(tmp_path)) == {10: 2, 0: 1}
    assert thread_priorities("a (b)", proc=str(tmp_path)) == {5: 1}
    assert thread_priorities("anything", proc=str(tmp_path / "missing")) == {}


def runtime_threads_at_push_nice(more_than: int, timeout_s: float = 10.0) -> int:
    """How many of the client runtime's threads run at :data:`PUSH_NICE`, once more than
    ``more_than`` do or ``timeout_s`` has passed: a Rust thread names itself after it
    starts, so a runtime's threads may not carry their name yet when the client is made."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = thread_priorities("tokio-rt-worker").get(PUSH_NICE, 0)
        if found > more_than or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@linux_only
def test_an_hdfs_client_made_at_low_priority_runs_its_runtime_threads_at_it():
    import hdfs_native

    before = thread_priorities("tokio-rt-worker").get(PUSH_NICE, 0)
    # making a client starts its runtime's threads; it connects on its first call only
    client = in_low_priority_thread(lambda: hdfs_native.Client("hdfs://127.0.0.1:9"))
    assert runtime_threads_at_push_nice(more_than=before) > before
    del client


@linux_only
def test_the_push_report_is_flat_and_says_the_priorities_pushes_ran_at():
    import hdfs_native

    client = in_low_priority_thread(lambda: hdfs_native.Client("hdfs://127.0.0.1:9"))
    runtime_threads_at_push_nice(more_than=0)
    pusher = BackgroundPusher(lambda: None, log=lambda _: None)
    pusher.request()
    pusher.flush(timeout_s=10)
    pusher.close()
    report = push_report(pusher)
    assert report["pushes"] == 1 and report["pushes_failed"] == 0
    assert report["push_nice"] == PUSH_NICE
    assert report["push_client_threads"] >= 1  # the client's, made at low priority
    assert report["push_client_nice_max"] == PUSH_NICE
    assert all(isinstance(v, int | float) for v in report.values()), report  # as events want
    del client
