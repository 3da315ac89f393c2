"""The ResourceManager's answers waited for a bounded time (tfyarn_jupyter.run.rm_calls)."""

from __future__ import annotations

import logging
import threading

import pytest

from tfyarn_jupyter.run.rm_calls import BoundedCall, unreachable_message


class Slow:
    """A call that blocks until released, counting how often it is made."""

    def __init__(self, value: object = "report") -> None:
        self.release = threading.Event()
        self.calls = 0
        self.value = value

    def __call__(self) -> object:
        self.calls += 1
        self.release.wait(10)
        return self.value


def test_an_answer_in_time_is_returned_and_nothing_is_unreachable():
    call = BoundedCall(lambda: "report", timeout=1)
    assert call.get() == "report"
    assert call.unreachable_since is None and call.message() == ""


def test_a_silent_resourcemanager_is_unreachable_from_the_first_miss_and_asked_once(caplog):
    caplog.set_level(logging.INFO, logger="tfyarn_jupyter")
    slow, now = Slow(), [1000.0]
    call = BoundedCall(slow, timeout=0.05, clock=lambda: now[0])
    assert call.get() is None
    assert call.unreachable_since == 1000.0 and call.reason == "no answer in 0 s"
    now[0] = 1042.0
    assert call.get() is None  # the same call is still running: not made again
    assert slow.calls == 1 and call.unreachable_since == 1000.0
    assert "(42 s; no answer in 0 s)" in call.message()
    slow.release.set()
    assert call.get() == "report"
    assert call.unreachable_since is None and call.message() == ""
    said = [r.getMessage() for r in caplog.records]
    assert any("does not answer" in m for m in said) and any("answers again" in m for m in said)


def test_a_call_that_raised_is_unreachable_naming_the_error_and_made_anew_next_time():
    answers = iter([ConnectionError("connection refused"), "report"])

    def fn() -> object:
        got = next(answers)
        if isinstance(got, Exception):
            raise got
        return got

    call = BoundedCall(fn, timeout=1, clock=lambda: 5.0)
    assert call.get() is None
    assert call.reason == "ConnectionError: connection refused"
    assert call.get() == "report" and call.unreachable_since is None


@pytest.mark.parametrize(("since", "now", "shown"), [(0.0, 75.0, "75 s"), (10.0, 5.0, "0 s")])
def test_the_note_says_since_when_how_long_and_why(since, now, shown):
    text = unreachable_message(since, now, "no answer in 8 s")
    assert text.startswith("ResourceManager unreachable since ")
    assert f"({shown}; no answer in 8 s)" in text and "progress still shows" in text
