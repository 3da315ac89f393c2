"""The TensorFlow cluster restarted together inside its application (container/regroup.py).

skein's application client is a fake: its key-value store a dict, its containers a list
the test writes as skein's application master would (a FAILED container replaced by the
service's next instance number), so the generation protocol runs without YARN.
"""

from __future__ import annotations

import datetime
import types

import pytest

from tfyarn_jupyter.container import exit_gate, progress, regroup, roles
from tfyarn_jupyter.container.task import Task
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.contract import TaskContract

PREEMPTED = "Container preempted by scheduler"
FOLLOWED = "Container failed during execution, see logs for more information."
T0 = datetime.datetime(2026, 12, 6, tzinfo=datetime.timezone.utc)


class KV(dict):
    def get_range(self) -> dict:
        return dict(self)

    def transaction(self, conditions=(), on_success=(), on_failure=()):
        """skein's transaction, for the conditions and operations regroup uses: ``missing``
        and ``put``."""
        ok = all(c.key not in self for c in conditions)
        for op in on_success if ok else on_failure:
            self[op.key] = op.value
        return types.SimpleNamespace(succeeded=ok, results=[])


class App:
    """skein's application client: a dict store, containers as the master lists them."""

    def __init__(self) -> None:
        self.kv = KV()
        self.containers: list = []
        self.shutdowns: list = []

    def add(self, service: str, instance: int, state: str = "RUNNING", ended: float | None = None,
            message: str = "") -> None:  # fmt: skip
        finish = T0 + datetime.timedelta(seconds=ended) if ended is not None else None
        self.containers.append(types.SimpleNamespace(
            service_name=service, instance=instance, state=state, finish_time=finish,
            exit_message=message))  # fmt: skip

    def get_containers(self, services=None, states=None):
        return [c for c in self.containers
                if (services is None or c.service_name in services)
                and (states is None or c.state in [str(s) for s in states])]  # fmt: skip

    def shutdown(self, status, diagnostics=""):
        self.shutdowns.append((str(status), diagnostics))


def task_of(monkeypatch, app: App, container: str, topology: dict) -> Task:
    contract = TaskContract(topology, peer_timeout_s=5.0, ack_timeout_s=0)
    for var, value in contract.to_env().items():
        monkeypatch.setenv(var, value)
    return Task(app, container)


def preempted_worker(app: App) -> None:
    """chief_0 and worker_0 ran; YARN preempted worker_0, skein started worker_1."""
    app.add("chief", 0)
    app.add("worker", 0, "FAILED", ended=1, message=PREEMPTED)
    app.add("worker", 1)


# -- which task a container is -----------------------------------------------------------------
def test_a_replacement_stands_for_the_container_it_replaces_in_the_order_they_ended():
    """Two workers: worker_1 preempted first (replaced by worker_2), worker_0 followed its
    cluster (worker_3), then worker_2 was lost too (worker_4)."""
    app = App()
    app.add("worker", 0, "FAILED", ended=2, message=FOLLOWED)
    app.add("worker", 1, "FAILED", ended=1, message=PREEMPTED)
    app.add("worker", 2, "FAILED", ended=3, message=PREEMPTED)
    app.add("worker", 3)
    app.add("worker", 4)
    failed = regroup.failed_in_order(app.containers)
    slots = {c.instance: regroup.slot_of(c.instance, 2, failed) for c in app.containers}
    assert {i: (s.index, s.restarts) for i, s in slots.items()} == {
        0: (0, 0), 1: (1, 0), 2: (1, 1), 3: (0, 1), 4: (1, 2)}  # fmt: skip
    assert slots[4].previous.instance == 2 and slots[0].previous is None
    assert regroup.names(app.containers, {"worker": 2}) == {
        "worker_0": "worker:0", "worker_1": "worker:1", "worker_2": "worker:1",
        "worker_3": "worker:0", "worker_4": "worker:1"}  # fmt: skip


def test_a_replacement_the_master_does_not_list_yet_falls_back_on_skeins_numbering():
    assert regroup.slot_of(3, 2, []) == regroup.Slot(1, 1)


def test_a_restarted_container_is_its_task_restarted(monkeypatch):
    app = App()
    preempted_worker(app)
    task = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1})
    assert (task.name, task.restarts, task.container_id) == ("worker:0", 1, "worker_1")
    assert task.slot.previous.instance == 0


# -- the generation --------------------------------------------------------------------------
def test_a_lost_container_is_counted_once_and_one_that_followed_never():
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message=PREEMPTED)
    app.add("chief", 0, "FAILED", ended=2, message=FOLLOWED)
    app.kv[regroup.follow_key("chief_0")] = b"1"
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 1
    assert regroup.lost_key("worker_0") in app.kv and regroup.lost_key("chief_0") not in app.kv
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 1  # no cascade


def test_a_new_generation_exchanges_addresses_under_its_own_keys(monkeypatch):
    """Generation 0's addresses (``task/<name>/init``) are stale after a loss: the tasks of
    generation 1 wait for each other's generation-1 address."""
    app = App()
    preempted_worker(app)
    events_put(app, "chief:0", "init", address="old-chief:1")
    events_put(app, "worker:0", "init", address="old-worker:1")
    app.kv[regroup.address_key(1, "chief:0")] = b"new-chief:2"
    task = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1})
    cluster = task.exchange_addresses()
    assert task.generation == 1
    mine = app.kv[regroup.address_key(1, "worker:0")].decode()
    assert cluster == {"chief": ["new-chief:2"], "worker": [mine]}
    assert events.decode(app.kv[events.task_key("worker:0", "init")])["address"] == mine
    task.release_port()


def test_generation_zero_exchanges_addresses_as_before(monkeypatch):
    app = App()
    app.add("chief", 0)
    app.add("worker", 0)
    events_put(app, "worker:0", "init", address="w:1")
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    cluster = task.exchange_addresses()
    assert task.generation == 0 and cluster["worker"] == ["w:1"]
    assert not any(k.startswith("cluster/") for k in app.kv)
    task.release_port()


def events_put(app: App, task: str, kind: str, **payload) -> None:
    app.kv[events.task_key(task, kind)] = events.encode(payload)


# -- a restarted container's record ----------------------------------------------------------
def record_of(app: App, task: str, n: int = 1) -> dict:
    return events.decode(app.kv[events.restart_key(task, n)])


def test_a_preempted_trainers_replacement_says_why_and_the_step_it_had(monkeypatch):
    app = App()
    preempted_worker(app)
    app.kv[events.progress_key("worker:0")] = events.encode({"step": 230})
    task = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1})
    assert regroup.begin(task) == ""
    rec = record_of(app, "worker:0")
    assert (rec["cause"], rec["exit_status"], rec["step"]) == ("preempted", -102, 230)
    assert regroup.lost_key("worker_0") in app.kv
    regroup.resumed(task, 200)
    assert record_of(app, "worker:0")["resumed_step"] == 200
    assert record_of(app, "worker:0")["cause"] == "preempted"


def test_a_trainer_that_followed_its_cluster_is_restarted_for_its_peer(monkeypatch):
    app = App()
    preempted_worker(app)
    app.add("chief", 0, "FAILED", ended=2, message=FOLLOWED)
    app.containers.pop(0)  # chief_0 was RUNNING: now FAILED, as the line above says
    app.add("chief", 1)
    app.kv[regroup.follow_key("chief_0")] = b"1"
    task = task_of(monkeypatch, app, "chief_1", {"chief": 1, "worker": 1})
    assert regroup.begin(task) == ""
    assert record_of(app, "chief:0")["cause"] == "peer restarted"
    assert regroup.lost_key("chief_0") not in app.kv


def test_a_preempted_trainer_that_also_followed_in_its_last_moment_is_recorded_preempted(
    monkeypatch,
):
    """YARN's SIGTERM leaves a preempted process a moment: it may see its own loss marked by
    a peer and follow. The loss, marked first, is why it restarts (and what it spends)."""
    app = App()
    preempted_worker(app)
    app.kv[regroup.lost_key("worker_0")] = b"1"
    app.kv[regroup.follow_key("worker_0")] = b"1"
    task = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1})
    assert regroup.begin(task) == ""
    rec = record_of(app, "worker:0")
    assert (rec["cause"], rec["exit_status"]) == ("preempted", -102)


def test_a_trainer_whose_container_failed_by_itself_ends_the_application_unrecorded(monkeypatch):
    """Its replacement (skein restarts any FAILED container) spends no restart: the run's
    retries decide, as before. An evaluator restarts alone whatever the cause."""
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message=FOLLOWED)  # killed: exit 137
    app.add("evaluator", 0, "FAILED", ended=1, message=FOLLOWED)
    worker = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1, "evaluator": 1})
    assert "worker_0 ended (failed)" in regroup.begin(worker)
    # Not a restart: no record, and the failed container's stop stays the task's last word.
    assert not [k for k in app.kv if k.startswith("restarts/worker:0/")]
    evaluator = task_of(monkeypatch, app, "evaluator_1", {"chief": 1, "evaluator": 1})
    assert regroup.begin(evaluator) == ""


def test_a_first_container_writes_no_record(monkeypatch):
    app = App()
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    assert regroup.begin(task) == "" and not app.kv


# -- the watcher --------------------------------------------------------------------------
def test_a_trainer_follows_when_its_cluster_loses_a_container(monkeypatch):
    app = App()
    app.add("chief", 0)
    app.add("worker", 0)
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    followed: list = []
    watcher = regroup.Watcher(task, exit_fn=followed.append)
    assert not watcher.check() and not followed
    app.containers[1].state, app.containers[1].exit_message = "FAILED", PREEMPTED
    assert watcher.check() and followed == [task]
    watcher.stop()
    assert not watcher.check(), "a trainer that finished training stays"


def test_the_run_ends_when_its_cluster_lost_containers_more_often_than_it_may_restart(monkeypatch):
    monkeypatch.setenv(regroup.PREEMPTIONS_VAR, "1")
    app = App()
    for i in range(2):
        app.kv[regroup.lost_key(f"worker_{i}")] = b"1"
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    task.generation = 1
    assert not regroup.Watcher(task, exit_fn=pytest.fail).check()
    assert app.shutdowns and "lost a container 2 times" in app.shutdowns[0][1]


def test_a_trainer_whose_training_raised_as_a_peer_was_lost_follows_instead_of_failing(
    monkeypatch, tmp_path
):
    """MultiWorkerMirrored's collectives raise in the survivor when a peer dies: that is the
    peer's loss, not the survivor's failure."""
    app = App()
    app.add("chief", 0)
    app.add("worker", 0)

    def role(task, cluster):
        app.containers[1].state = "FAILED"
        app.containers[1].exit_message = PREEMPTED
        raise RuntimeError("Collective ops is aborted by: ... UnavailableError")

    class Followed(Exception):
        pass

    def follow(task):
        raise Followed

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(roles, "run_role", role)
    monkeypatch.setattr(regroup, "follow", follow)
    monkeypatch.setattr(regroup, "POLL_S", 0.01)
    monkeypatch.setattr(progress, "_current", None)
    monkeypatch.setenv("TF_CONFIG", "")
    events_put(app, "worker:0", "init", address="w:1")
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    with pytest.raises(Followed):
        roles.run(task)
    assert not app.shutdowns and "stop" not in events.parse(app.kv).task("chief:0")


def test_a_failed_container_is_not_an_ended_task_its_replacement_that_succeeded_is(monkeypatch):
    app = App()
    preempted_worker(app)
    task = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    assert task.ended(["worker:0"]) == set()
    app.containers[-1].state = "SUCCEEDED"
    assert task.ended(["worker:0"]) == {"worker:0"}


def test_a_cluster_container_that_failed_by_itself_ends_the_application_at_once():
    """As skein does without restarts: its replacement would spend no retry (and might
    never be allocated, its node gone)."""
    app = App()
    app.add("chief", 0, "FAILED", ended=1, message=FOLLOWED)  # exit 143: the NM stopped it
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 0
    assert app.shutdowns == [("FAILED", "Failure in service chief, see logs for more information.")]
    assert regroup.lost_key("chief_0") not in app.kv


def test_an_evaluator_watches_its_cluster_but_never_follows_it(monkeypatch):
    app = App()
    app.add("chief", 0, "FAILED", ended=1, message=PREEMPTED)
    task = task_of(monkeypatch, app, "evaluator_0", {"chief": 1, "evaluator": 1})
    assert not regroup.Watcher(task, exit_fn=pytest.fail).check()
    assert regroup.lost_key("chief_0") in app.kv and not app.shutdowns


def test_a_trainer_killed_from_outside_ends_the_application_instead_of_being_restarted(
    monkeypatch,
):
    """The service script reports a killed process (``--exited 137``): a task of the cluster
    then ends the application before its container ends, so skein restarts nothing."""
    from tfyarn_jupyter.container import main

    app = App()
    app.add("worker", 0)
    monkeypatch.setattr("skein.ApplicationClient.from_current", staticmethod(lambda: app))
    monkeypatch.setenv("SKEIN_CONTAINER_ID", "worker_0")
    for var, value in TaskContract({"chief": 1, "worker": 1}, ack_timeout_s=0).to_env().items():
        monkeypatch.setenv(var, value)
    assert main.report_exit(137) == 137
    assert app.shutdowns == [
        ("FAILED", "Failure in service worker, see logs for more information.")
    ]
    assert "137" in events.parse(app.kv).traceback("worker:0")


def test_a_container_lost_with_its_node_starts_a_new_generation_and_the_application_goes_on():
    """Recovered inside the application, as a preemption is: its replacement waits for a
    node of its partition, the cluster regroups around it."""
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message="Container released on a *lost* node")
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 1
    assert app.shutdowns == []
    assert app.kv.get_range() == {"cluster/lost/worker_0": b"1"}


def test_a_container_killed_whole_after_its_task_started_is_lost_not_failed():
    """``yarn container -signal ID FORCEFUL_SHUTDOWN``: skein says only that the container
    failed; its task had started and nothing in it lived to say it ended by itself."""
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message=FOLLOWED)
    app.kv[regroup.up_key("worker_0")] = b"1"
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 1
    assert app.shutdowns == [] and regroup.lost_key("worker_0") in app.kv


@pytest.mark.parametrize("in_snapshot", [True, False])
def test_a_container_whose_task_said_it_ended_by_itself_fails_the_run(in_snapshot):
    """Its code raised, or its service script reported the process killed: a failure, even
    when the marker came after the snapshot the watcher read (it is written before the
    container ends)."""
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message=FOLLOWED)
    app.kv[regroup.up_key("worker_0")] = b"1"
    snapshot = app.kv.get_range()
    app.kv[regroup.exited_key("worker_0")] = b"1"
    kv = app.kv.get_range() if in_snapshot else snapshot
    assert regroup.sync(app, kv, ["chief", "worker"]) == 0
    assert app.shutdowns[0][1].startswith("Failure in service worker")
    assert regroup.lost_key("worker_0") not in app.kv


def test_a_container_that_failed_before_its_task_started_fails_the_run():
    """Its environment or a pre-script hook failed: every replacement would fail the same."""
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message=FOLLOWED)
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 0
    assert app.shutdowns and regroup.lost_key("worker_0") not in app.kv


def test_the_replacement_of_a_container_killed_whole_records_why_and_marks_the_loss(monkeypatch):
    app = App()
    app.add("chief", 0)
    app.add("worker", 0, "FAILED", ended=1, message=FOLLOWED)
    app.add("worker", 1)
    app.kv[regroup.up_key("worker_0")] = b"1"
    app.kv[events.progress_key("worker:0")] = events.encode({"step": 410})
    task = task_of(monkeypatch, app, "worker_1", {"chief": 1, "worker": 1})
    assert regroup.begin(task) == ""
    rec = record_of(app, "worker:0")
    assert (rec["cause"], rec["step"], rec["container"]) == ("container killed", 410, "worker_0")
    assert regroup.lost_key("worker_0") in app.kv


def test_a_container_that_failed_by_itself_still_ends_the_application():
    app = App()
    app.add("worker", 0, "FAILED", ended=1, message="Exception from container-launch: exit 1")
    assert regroup.sync(app, app.kv.get_range(), ["chief", "worker"]) == 0
    assert app.shutdowns[0][1].startswith("Failure in service worker")


# -- following the cluster --------------------------------------------------------------------
def test_following_marks_the_container_and_exits_after_its_turn(monkeypatch):
    monkeypatch.setattr(regroup, "POLL_S", 0.01)
    app = App()
    app.add("chief", 0)
    app.add("worker", 0)
    chief = task_of(monkeypatch, app, "chief_0", {"chief": 1, "worker": 1})
    order: list = []
    monkeypatch.setattr(exit_gate, "wait_for_turn", lambda task: order.append("turn"))
    monkeypatch.setattr(regroup.os, "_exit", lambda code: order.append(code))
    regroup.follow(chief)
    assert order == ["turn", regroup.FOLLOW_EXIT]
    assert regroup.follow_key("chief_0") in app.kv
