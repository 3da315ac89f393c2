"""The client's heartbeat lasts as long as the run, across its retried attempts.

A retried attempt's tasks only see an attached client through the heartbeat: without
it they neither end an orphaned attempt nor wait for the client to read a killed
task's exit status. The status source is a fake here; the sandbox test of a retried
run is ``tests/integration/test_faults.py``.
"""

from __future__ import annotations

import threading
import time

import pytest

from tfyarn_jupyter import TaskSpec, launch


class Source:
    """Stands in for :class:`poller.StatusSource`: counts heartbeats, ends on demand."""

    def __init__(self, ended: bool) -> None:
        self.ended = ended
        self.last = None
        self.beats = 0
        self.beat = threading.Event()

    def heartbeat(self) -> None:
        self.beats += 1
        self.beat.set()


def wait_beats(source: Source, n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while source.beats < n:
        assert time.monotonic() < deadline, f"{source.beats} heartbeats, expected {n}"
        source.beat.wait(0.05)
        source.beat.clear()


@pytest.fixture
def fast_heartbeat(monkeypatch):
    monkeypatch.setattr(launch, "HEARTBEAT_INTERVAL_S", 0.01)


def make_run(nb_retries: int) -> launch.Run:
    return launch.Run(object(), "application_1_0001", {"chief": TaskSpec(1024, 1)},
                      nb_retries=nb_retries, heartbeat=False)  # fmt: skip


def test_heartbeat_goes_on_when_an_attempt_ended_and_a_retry_is_left(fast_heartbeat):
    run = make_run(nb_retries=1)
    failed_attempt = Source(ended=True)
    run._poller = failed_attempt  # type: ignore[assignment]
    run._start_heartbeat()
    try:
        wait_beats(failed_attempt, 3)
        retry = Source(ended=False)
        run._poller = retry  # type: ignore[assignment]
        run.attempts.append("application_1_0002")
        wait_beats(retry, 3)
    finally:
        run._heartbeat_stop.set()


def test_heartbeat_stops_when_the_last_attempt_ended(fast_heartbeat):
    run = make_run(nb_retries=0)
    ended = Source(ended=True)
    run._poller = ended  # type: ignore[assignment]
    before = set(threading.enumerate())
    run._start_heartbeat()
    started = [t for t in threading.enumerate() if t not in before]
    assert all(t.name == "tfyarn-heartbeat" for t in started), started
    for t in started:
        t.join(5)
        assert not t.is_alive(), "the heartbeat thread outlived the run"
    assert ended.beats == 0
