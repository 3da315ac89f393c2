"""The container side without a container: a task's contract, address exchange, ack and exit.

skein's application client is replaced by a fake whose key-value store is a dict, so what
a task writes and reads is visible to the test; the contract comes from the environment
exactly as the client writes it (:meth:`TaskContract.to_env`).
"""

from __future__ import annotations

import datetime
import socket
import threading
import time
import types

import cloudpickle
import pytest
import skein

from tfyarn_jupyter.container import main, regroup
from tfyarn_jupyter.container.task import Task
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.contract import PAYLOAD, TaskContract

TOPOLOGY = {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1}


class FakeKV(dict):
    """skein's key-value store as a dict; counts the ``get_range()`` snapshots."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.on_read = None

    def get_range(self) -> dict[str, bytes]:
        self.reads += 1
        if self.on_read is not None:
            self.on_read(self.reads)
        return dict(self)


class FakeApp:
    def __init__(self) -> None:
        self.kv = FakeKV()

    def get_containers(self, **_kwargs):
        return []


@pytest.fixture
def app(monkeypatch):
    """The fake application every :class:`Task` built in the test connects to."""
    fake = FakeApp()
    monkeypatch.setattr(skein.ApplicationClient, "from_current", staticmethod(lambda: fake))
    return fake


def make_task(monkeypatch, container: str = "worker_1", **bounds) -> Task:
    # Short bounds: a task that waits wrongly fails the test instead of hanging it.
    contract = TaskContract(
        TOPOLOGY, **{"attempt": 2, "peer_timeout_s": 5.0, "ack_timeout_s": 5.0, **bounds}
    )
    for var, value in contract.to_env().items():
        monkeypatch.setenv(var, value)
    monkeypatch.setenv("SKEIN_CONTAINER_ID", container)
    return Task()


def put(kv: FakeKV, task: str, kind: str, t: float | None = None, **payload) -> None:
    kv[events.task_key(task, kind)] = events.encode(payload, t=t)


def attach_client(kv: FakeKV) -> None:
    kv[events.HEARTBEAT] = events.encode()


# -- the contract -----------------------------------------------------------------------------
def test_the_task_reads_its_name_and_contract_from_the_environment(app, monkeypatch):
    task = make_task(
        monkeypatch, "worker_1", peer_timeout_s=7.5, heartbeat_timeout_s=30.0, ack_timeout_s=3.0
    )
    assert task.app is app
    assert (task.type, task.index, task.name) == ("worker", 1, "worker:1")
    assert task.topology == TOPOLOGY
    assert task.attempt == 2
    assert (task.peer_timeout, task.heartbeat_timeout) == (7.5, 30.0)
    assert task.contract.ack_timeout_s == 3.0


def test_a_task_type_with_an_underscore_keeps_it(app, monkeypatch):
    monkeypatch.setenv("SKEIN_CONTAINER_ID", "my_type_3")
    monkeypatch.setenv("TFYARN_TASKS", "chief=1")
    task = Task()
    assert (task.type, task.index, task.name) == ("my_type", 3, "my_type:3")


def test_peers_are_the_tensorflow_cluster_without_the_evaluator(app, monkeypatch):
    task = make_task(monkeypatch)
    assert task.peers() == ["chief:0", "worker:0", "worker:1", "ps:0"]


# -- the address exchange ---------------------------------------------------------------------
def test_exchange_publishes_this_address_and_waits_for_every_peer(app, monkeypatch):
    task = make_task(monkeypatch, "worker_1")
    put(app.kv, "chief:0", "init", address="c:1")
    put(app.kv, "worker:0", "init", address="w:0")

    def late_ps(reads: int) -> None:
        if reads == 3:
            put(app.kv, "ps:0", "init", address="p:0")

    app.kv.on_read = late_ps
    cluster = task.exchange_addresses()

    mine = events.decode(app.kv[events.task_key("worker:1", "init")])["address"]
    host, _, port = mine.rpartition(":")
    assert host == socket.gethostname() and int(port) > 0
    assert cluster == {"chief": ["c:1"], "worker": ["w:0", mine], "ps": ["p:0"]}
    assert app.kv.reads == 3, "returned before the last peer published its address"


def test_the_evaluator_learns_the_cluster_without_publishing_an_address(app, monkeypatch):
    task = make_task(monkeypatch, "evaluator_0")
    for name, addr in (
        ("chief:0", "c:1"),
        ("worker:0", "w:0"),
        ("worker:1", "w:1"),
        ("ps:0", "p:0"),
    ):
        put(app.kv, name, "init", address=addr)
    assert task.exchange_addresses() == {"chief": ["c:1"], "worker": ["w:0", "w:1"], "ps": ["p:0"]}
    assert events.task_key("evaluator:0", "init") not in app.kv


def test_exchange_times_out_naming_the_peers_that_never_started(app, monkeypatch):
    task = make_task(monkeypatch, "worker_1", peer_timeout_s=0.05)
    put(app.kv, "chief:0", "init", address="c:1")
    start = time.monotonic()
    with pytest.raises(TimeoutError) as err:
        task.exchange_addresses()
    assert time.monotonic() - start < 2
    assert "worker:0, ps:0 were never allocated: no free capacity on the queue" in str(err.value)
    assert "TFYARN_PEER_TIMEOUT=SECONDS waits longer" in str(err.value)


def test_the_peer_timeout_names_the_real_cause_of_each_missing_peer(app, monkeypatch):
    """Never allocated (with the client's word on the queue), started but silent, or ended."""
    when = datetime.datetime(2026, 12, 3, 12, 0)

    def containers(**kwargs):
        assert set(kwargs["services"]) == {"worker", "ps", "chief"}
        return [
            skein.model.Container("worker", 0, "REQUESTED", "", "", None, None, ""),
            skein.model.Container("ps", 0, "RUNNING", "c_1", "n:1", when, None, ""),
            skein.model.Container("chief", 0, "FAILED", "c_2", "n:1", when, when, "exit 137"),
        ]

    app.get_containers = containers
    app.kv[events.CAPACITY] = events.encode({"message": "queue 'ml-gpu' is full"})
    task = make_task(monkeypatch, "worker_1", peer_timeout_s=0.05)
    with pytest.raises(TimeoutError) as err:
        task.exchange_addresses()
    text = str(err.value)
    assert "worker:0 was never allocated: queue 'ml-gpu' is full;" in text
    assert "ps:0 started but never published an address" in text
    assert "container ended before joining: chief:0 (FAILED: exit 137)" in text


# -- waiting for the client's acknowledgement ------------------------------------------------
def test_wait_for_ack_returns_as_soon_as_the_client_acked(app, monkeypatch):
    task = make_task(monkeypatch)
    attach_client(app.kv)
    app.kv[events.ack_key("worker:1")] = b"1"
    start = time.monotonic()
    task.wait_for_ack()
    assert time.monotonic() - start < 2
    assert app.kv.reads == 1


def test_wait_for_ack_returns_at_once_when_the_run_is_detached_or_its_client_went_silent(
    app, monkeypatch
):
    task = make_task(monkeypatch)
    app.kv[events.HEARTBEAT] = events.encode(t=time.time() - 120)  # silent for 2 minutes
    task.wait_for_ack()
    assert app.kv.reads == 1
    app.kv[events.DETACHED] = events.encode()
    attach_client(app.kv)
    task.wait_for_ack()
    assert app.kv.reads == 2


def test_wait_for_ack_waits_for_a_client_not_heard_from_yet(app, monkeypatch):
    """A task that fails at once may stop before the submitting client's first heartbeat:
    it waits for that client to read its traceback rather than leave with the application."""
    task = make_task(monkeypatch, ack_timeout_s=5.0)

    def client_connects_and_acks() -> None:
        time.sleep(0.5)
        attach_client(app.kv)
        app.kv[events.ack_key("worker:1")] = b"1"

    threading.Thread(target=client_connects_and_acks).start()
    start = time.monotonic()
    task.wait_for_ack()
    assert 0.5 <= time.monotonic() - start < 4
    assert app.kv.reads >= 2


def test_wait_for_ack_waits_for_an_attached_client_until_its_bound(app, monkeypatch):
    task = make_task(monkeypatch, ack_timeout_s=0.5)
    attach_client(app.kv)
    app.kv[events.ack_key("worker:0")] = b"1"  # another task's ack does not count
    start = time.monotonic()
    task.wait_for_ack()
    assert 0.5 <= time.monotonic() - start < 2
    assert app.kv.reads >= 2


# -- a process that died without reporting --------------------------------------------------
def stop_of(kv: FakeKV, task: str = "worker:1") -> dict:
    return events.decode(kv[events.task_key(task, "stop")])


def test_report_exit_names_the_signal_that_killed_the_process(app, monkeypatch):
    make_task(monkeypatch, ack_timeout_s=0.0)
    assert main.report_exit(137) == 137
    stop = stop_of(app.kv)
    assert stop["exit_code"] == 137
    assert "worker:1: its process exited with status 137" in stop["traceback"]
    assert "(killed by signal 9, SIGKILL)" in stop["traceback"]


def test_report_exit_without_a_signal_gives_the_status_only(app, monkeypatch):
    make_task(monkeypatch, ack_timeout_s=0.0)
    assert main.report_exit(3) == 3
    stop = stop_of(app.kv)
    del stop["t"]
    assert stop == {"exit_code": 3, "traceback": "worker:1: its process exited with status 3"}


def test_report_exit_of_a_status_above_128_that_is_no_signal(app, monkeypatch):
    make_task(monkeypatch, ack_timeout_s=0.0)
    assert main.report_exit(250) == 250
    assert stop_of(app.kv)["traceback"] == "worker:1: its process exited with status 250"


def test_report_exit_keeps_a_stop_the_task_already_reported(app, monkeypatch):
    make_task(monkeypatch, ack_timeout_s=0.0)
    put(app.kv, "worker:1", "stop", t=1.0, traceback="", exit_code=0)
    before = dict(app.kv)
    assert main.report_exit(137) == 137
    # The stop stays; the container is marked as ending by itself (not a lost container).
    assert app.kv.pop(regroup.exited_key("worker_1")) == b"1"
    assert app.kv == before


def test_report_exit_waits_for_the_clients_ack_like_a_reported_stop(app, monkeypatch):
    make_task(monkeypatch, ack_timeout_s=0.5)
    attach_client(app.kv)

    def ack_the_stop(_reads: int) -> None:
        if events.task_key("worker:1", "stop") in app.kv:
            app.kv[events.ack_key("worker:1")] = b"1"

    app.kv.on_read = ack_the_stop
    start = time.monotonic()
    main.report_exit(137)
    assert time.monotonic() - start < 0.5, "waited its whole bound though the client acked"
    assert events.ack_key("worker:1") in app.kv


# -- the experiment ---------------------------------------------------------------------------
def payload_task(tmp_path, monkeypatch, experiment_fn) -> Task:
    (tmp_path / PAYLOAD).write_bytes(cloudpickle.dumps(experiment_fn))
    monkeypatch.chdir(tmp_path)
    return Task.__new__(Task)


def test_build_experiment_refuses_what_is_not_an_experiment(tmp_path, monkeypatch):
    def half_experiment():
        return types.SimpleNamespace(estimator="e", train_spec="t")

    task = payload_task(tmp_path, monkeypatch, half_experiment)
    with pytest.raises(
        TypeError, match=r"\(estimator, train_spec, eval_spec\), got SimpleNamespace"
    ):
        task.build_experiment()


def test_build_experiment_returns_what_the_function_built(tmp_path, monkeypatch):
    task = payload_task(
        tmp_path,
        monkeypatch,
        lambda: types.SimpleNamespace(estimator="e", train_spec="t", eval_spec="v"),
    )
    assert task.build_experiment() == types.SimpleNamespace(
        estimator="e", train_spec="t", eval_spec="v"
    )


def test_a_container_started_in_place_of_a_lost_one_is_the_same_task_restarted(app, monkeypatch):
    """skein gives a restarted service container the next instance number: evaluator_1 of a
    run with one evaluator is evaluator:0's first restart, and it forgets the lost one's stop."""
    monkeypatch.setenv("SKEIN_CONTAINER_ID", "evaluator_1")
    monkeypatch.setenv("TFYARN_TASKS", "chief=1,evaluator=1")
    task = Task(app)
    assert (task.name, task.index, task.restarts) == ("evaluator:0", 0, 1)
    app.kv[events.task_key("evaluator:0", "stop")] = events.encode({"exit_code": 137})
    app.kv[events.ack_key("evaluator:0")] = b"1"
    task.forget_stop()
    assert events.task_key("evaluator:0", "stop") not in app.kv
    assert events.ack_key("evaluator:0") not in app.kv
    task.forget_stop()  # nothing left to forget: no error


def test_each_phase_of_a_tasks_start_is_reported_in_one_event(app, monkeypatch):
    task = make_task(monkeypatch)
    task.phase("interpreter", at=100.0)
    task.phase("tensorflow")
    ev = task.snapshot().task(task.name)["phases"]
    assert ev["interpreter"] == 100.0 and ev["tensorflow"] > 100.0
