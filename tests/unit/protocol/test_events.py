"""The events protocol (tfyarn_jupyter.protocol.events): keys, values, parsing a snapshot."""

from __future__ import annotations

import math

import pytest

from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.events import Events


class _Scalar:
    """Stands in for a numpy scalar: ``.item()`` gives the Python value."""

    def __init__(self, value: object) -> None:
        self.value = value

    def item(self) -> object:
        return self.value


class _Unconvertible:
    def item(self) -> object:
        raise ValueError("can only convert an array of size 1")

    def __str__(self) -> str:
        return "array([1, 2])"


# -- keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", events.TASK_KINDS)
def test_task_key_of_every_kind(kind):
    assert events.task_key("worker:1", kind) == f"task/worker:1/{kind}"


@pytest.mark.parametrize("kind", ["", "stopped", "STOP", "metrics", "stop/x"])
def test_task_key_refuses_an_unknown_kind(kind):
    with pytest.raises(ValueError, match="unknown event kind"):
        events.task_key("chief:0", kind)


def test_metrics_keys_sort_by_step_as_text():
    keys = [events.metrics_key(s) for s in (100, 9, 1000, 20)]
    assert keys[0] == "metrics/000000000100"
    assert sorted(keys) == [events.metrics_key(s) for s in (9, 20, 100, 1000)]


def test_ack_key_names_the_task():
    assert events.ack_key("ps:0") == "client/ack/ps:0"


# -- values -------------------------------------------------------------------------------
def test_encode_decode_round_trip_keeps_payload_and_time():
    payload = {"host": "node-1", "attempt": 2, "loss": 0.25, "ok": True, "none": None}
    assert events.decode(events.encode(payload, t=12.5)) == {**payload, "t": 12.5}


def test_encode_stamps_the_current_time_unless_given(monkeypatch):
    monkeypatch.setattr(events.time, "time", lambda: 1234.0)
    assert events.decode(events.encode({"a": 1}))["t"] == 1234.0
    assert events.decode(events.encode())["t"] == 1234.0
    assert events.decode(events.encode({"t": 5.0}))["t"] == 5.0


def test_encode_makes_metrics_json_safe():
    value = events.encode(
        {
            "scalar": _Scalar(3),
            "nan": math.nan,
            "inf": -math.inf,
            "nan_scalar": _Scalar(math.nan),
            "array": _Unconvertible(),
            "tuple": (1, 2),
        },
        t=0.0,
    )
    assert events.decode(value) == {
        "scalar": 3,
        "nan": None,
        "inf": None,
        "nan_scalar": None,
        "array": "array([1, 2])",
        "tuple": "(1, 2)",
        "t": 0.0,
    }


def test_encode_sorts_keys():
    assert events.encode({"b": 1, "a": 2}, t=0.0) == b'{"a": 2, "b": 1, "t": 0.0}'


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        (b"not json", {"raw": "not json"}),
        (b"\xff\xfe", {"raw": "\ufffd\ufffd"}),
        ("half {", {"raw": "half {"}),
        (b"[1, 2]", {"raw": [1, 2]}),
        (b"7", {"raw": 7}),
        ('{"t": 1}', {"t": 1}),
    ],
)
def test_decode_wraps_what_is_not_a_json_object(value, decoded):
    assert events.decode(value) == decoded


# -- parse --------------------------------------------------------------------------------
def test_parse_reads_every_key_family():
    kv = {
        events.task_key("chief:0", "start"): events.encode({"a": 1}, t=1.0),
        events.task_key("chief:0", "stop"): events.encode({"traceback": ""}, t=2.0),
        events.task_key("worker:0", "init"): events.encode({"address": "h:1"}, t=3.0),
        events.metrics_key(200): events.encode({"step": 200, "loss": 0.1}, t=5.0),
        events.metrics_key(100): events.encode({"step": 100, "loss": 0.3}, t=4.0),
        events.HEARTBEAT: events.encode(t=42.0),
        events.DETACHED: b"",
        events.ack_key("chief:0"): events.encode(t=6.0),
    }
    ev = events.parse(kv)
    assert ev.tasks == {
        "chief:0": {"start": {"a": 1, "t": 1.0}, "stop": {"traceback": "", "t": 2.0}},
        "worker:0": {"init": {"address": "h:1", "t": 3.0}},
    }
    assert [m["step"] for m in ev.metrics] == [100, 200]
    assert ev.metrics[0] == {"step": 100, "loss": 0.3, "t": 4.0}
    assert ev.heartbeat == 42.0
    assert ev.detached is True
    assert ev.acked == {"chief:0"}


def test_parse_orders_metrics_by_step_whatever_their_keys():
    kv = {
        "metrics/a": events.encode({"step": 30}, t=1.0),
        "metrics/b": events.encode({"step": 10}, t=2.0),
        "metrics/c": events.encode({"step": 20}, t=3.0),
    }
    assert [m["step"] for m in events.parse(kv).metrics] == [10, 20, 30]


def test_parse_ignores_what_it_does_not_know():
    kv = {
        "task/chief:0/bogus": events.encode(t=1.0),
        "task/chief:0/stop/extra": events.encode(t=1.0),
        "task/chief:0": events.encode(t=1.0),
        "metrics/000000000001": events.encode({"loss": 1.0}, t=1.0),
        "metrics/1/2": events.encode({"step": 1}, t=1.0),
        "other/key": b"x",
    }
    assert events.parse(kv) == Events()


def test_parse_of_an_empty_store():
    ev = events.parse({})
    assert (ev.tasks, ev.metrics, ev.heartbeat, ev.detached, ev.acked) == (
        {},
        [],
        None,
        False,
        set(),
    )


def test_task_and_traceback_accessors():
    ev = events.parse(
        {
            events.task_key("chief:0", "stop"): events.encode({"traceback": "Boom"}, t=1.0),
            events.task_key("worker:0", "stop"): events.encode({"traceback": None}, t=1.0),
        }
    )
    assert ev.task("chief:0") == {"stop": {"traceback": "Boom", "t": 1.0}}
    assert ev.task("ps:0") == {}
    assert ev.traceback("chief:0") == "Boom"
    assert ev.traceback("worker:0") == ""
    assert ev.traceback("ps:0") == ""


# -- acknowledgements and the attached client ---------------------------------------------
def test_unacked_stops_are_ended_tasks_the_client_has_not_acknowledged():
    kv = {
        events.task_key("chief:0", "stop"): events.encode(t=1.0),
        events.task_key("worker:0", "stop"): events.encode(t=1.0),
        events.task_key("ps:0", "start"): events.encode(t=1.0),
        events.ack_key("worker:0"): events.encode(t=2.0),
    }
    assert events.parse(kv).unacked_stops() == ["chief:0"]
    kv[events.ack_key("chief:0")] = events.encode(t=3.0)
    assert events.parse(kv).unacked_stops() == []


def test_parse_lists_each_tasks_restarts_in_order_with_their_number():
    kv = {
        events.restart_key("worker:0", 10): events.encode({"cause": "failed"}, t=3.0),
        events.restart_key("worker:0", 2): events.encode({"cause": "preempted", "step": 40}, t=2.0),
        events.restart_key("chief:0", 1): events.encode({"cause": "peer restarted"}, t=2.5),
        "restarts/worker:0/not-a-number": b"{}",
    }
    got = events.parse(kv).restarts
    assert [(r["n"], r["cause"]) for r in got["worker:0"]] == [(2, "preempted"), (10, "failed")]
    assert got["worker:0"][0]["step"] == 40
    assert [r["cause"] for r in got["chief:0"]] == ["peer restarted"]


@pytest.mark.parametrize(
    ("heartbeat", "detached", "now", "may_read"),
    [
        (None, False, 105.0, True),  # submitted, not heard from yet
        (100.0, False, 105.0, True),
        (100.0, False, 160.0, False),  # exactly the timeout: no longer read by that client
        (100.0, False, 170.0, False),
        (None, True, 105.0, False),
        (100.0, True, 105.0, False),
    ],
)
def test_client_may_read_while_attached_or_not_heard_from_yet(heartbeat, detached, now, may_read):
    ev = Events(heartbeat=heartbeat, detached=detached)
    assert ev.client_may_read(now, timeout=60.0) is may_read
