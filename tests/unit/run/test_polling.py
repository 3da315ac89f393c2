"""Reading a run's state through a fake skein client: what one poll asks, and what it keeps.

The fake records every call it answers (ResourceManager and application master alike), so
the tests count what a poll costs and see that reading never writes to the tasks' store.
"""

from __future__ import annotations

import json
import types
from datetime import datetime, timezone

import pytest
import skein
from skein.model import ApplicationState, ContainerState, FinalStatus
from skein.utils import datetime_from_millis

from tfyarn_jupyter.core.spec import NodeLabel, TaskSpec
from tfyarn_jupyter.core.state import AppInfo, ContainerInfo, Failure, RunStatus, derive
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.run import polling as status
from tfyarn_jupyter.run import result
from tfyarn_jupyter.run.polling import StatusSource

APP = "application_1_0001"
SPECS = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, instances=2)}
#: skein's default for ``get_containers``: the ended containers only when asked for.
ACTIVE = ("WAITING", "REQUESTED", "RUNNING")
#: What a poll of a running application asks, sorted.
POLL = ["application_report", "get_containers", "kv.get_range"]


def report(state: str = "RUNNING", final_status: str = "UNDEFINED", **kw):
    usage = skein.model.ResourceUsageReport(0, 0, 0, *[skein.Resources(0, 0)] * 3)
    fields = {"id": APP, "name": "tfyarn", "user": "me", "queue": "default", "tags": set()}
    fields.update(host="am", port=1, tracking_url=f"http://rm/proxy/{APP}", progress=0.5)
    fields.update(state=state, final_status=final_status, usage=usage, diagnostics="")
    fields.update(start_time=datetime_from_millis(1_000_000), finish_time=None)
    return skein.model.ApplicationReport(**{**fields, **kw})


def container(task: str, state="RUNNING", node="n1:8042", start_ms=2_000_000, cid=""):
    service, _, index = task.partition(":")
    start, cid = datetime_from_millis(start_ms), cid or f"c_{service}_{index}"
    return skein.model.Container(service, int(index), state, cid, node, start, None, "")


def node(http: str, labels=()):
    size = skein.Resources(8192, 8)
    return skein.model.NodeReport(http, http, "/default", set(labels), "RUNNING", "", size, size)


class FakeKV:
    def __init__(self, am: FakeMaster) -> None:
        self.am = am
        self.data: dict[str, bytes] = {}
        self.transactions: list[list] = []

    def get_range(self) -> dict[str, bytes]:
        self.am.called("kv.get_range")
        return dict(self.data)

    def transaction(self, on_success=()):
        self.am.called("kv.transaction")
        self.transactions.append(list(on_success))
        for op in on_success:
            self.data[op.key] = op.value

    def __setitem__(self, key: str, value: bytes) -> None:
        self.am.called("kv.set")
        self.data[key] = value


class FakeMaster:
    """skein's ``ApplicationClient``: containers, the key-value store, kills, the spec."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls
        self.containers: list[skein.model.Container] = []
        self.kv = FakeKV(self)
        self.killed: list[str] = []
        self.spec: skein.ApplicationSpec | None = None
        self.gone: Exception | None = None

    def called(self, name: str) -> None:
        self.calls.append(name)
        if self.gone is not None:
            raise self.gone

    def get_containers(self, services=None, states=None):
        self.called("get_containers")
        wanted = {str(ContainerState(s)) for s in (states or ACTIVE)}
        return [c for c in self.containers if str(c.state) in wanted]

    def kill_container(self, container_id: str) -> None:
        self.called("kill_container")
        self.killed.append(container_id)

    def get_specification(self) -> skein.ApplicationSpec:
        self.called("get_specification")
        assert self.spec is not None
        return self.spec


class FakeClient:
    """skein's ``Client``, counting the calls it answers (its master's included)."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.report = report()
        self.nodes = [node("n1:8042"), node("n2:8042", {"gpu"})]
        self.am = FakeMaster(self.calls)
        self.not_running = False
        self.connect_waits: list[bool] = []

    def application_report(self, app_id: str):
        assert app_id == APP
        self.calls.append("application_report")
        return self.report

    def connect(self, app_id: str, wait: bool = True):
        assert app_id == APP
        self.calls.append("connect")
        self.connect_waits.append(wait)
        if self.not_running:
            raise skein.exceptions.ApplicationNotRunningError(f"{app_id} is not running")
        return self.am

    def get_nodes(self, states=None):
        self.calls.append("get_nodes")
        return list(self.nodes)


@pytest.fixture
def client(monkeypatch) -> FakeClient:
    # The queue's figures (read while tasks wait) come from a stub: see the capacity tests.
    monkeypatch.setattr(StatusSource, "queue_limits", lambda self, queue: {})
    return FakeClient()


def stop(kv: FakeKV, task: str, traceback: str = "") -> None:
    kv.data[events.task_key(task, "stop")] = events.encode({"traceback": traceback})


# -- the adapters -----------------------------------------------------------------------------
def test_app_info_turns_skeins_report_into_plain_data():
    r = report(
        "FINISHED",
        "FAILED",
        diagnostics="boom",
        start_time=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        finish_time=datetime_from_millis(1_704_164_700_250),
    )
    assert isinstance(r.state, ApplicationState) and isinstance(r.final_status, FinalStatus)
    info = status.app_info(r)
    assert info.finish_time == pytest.approx(1_704_164_700_250, abs=0.01)
    expected = ("tfyarn", "default", "me", "FINISHED", "FAILED", 1_704_164_645_000.0)
    assert info == AppInfo(APP, *expected, info.finish_time, f"http://rm/proxy/{APP}", "boom")
    assert type(info.state) is str and type(info.final_status) is str


def test_app_info_of_a_report_without_optional_fields():
    unset = dict.fromkeys(("name", "queue", "user", "start_time", "finish_time"), None)
    unset.update(tracking_url=None, diagnostics=None)
    bare = types.SimpleNamespace(id=APP, state="ACCEPTED", final_status="UNDEFINED", **unset)
    assert status.app_info(bare) == AppInfo(APP, state="ACCEPTED")


def test_container_info_names_the_task_and_converts_times_and_enums():
    cid, start, end = "container_1_0001_01_000003", *map(datetime_from_millis, (1_000, 5_000))
    c = skein.model.Container("worker", 1, "FAILED", cid, "n2:8042", start, end, "exit 1")
    assert isinstance(c.state, ContainerState)
    info = status.container_info(c)
    times = (info.start_time, info.finish_time)
    assert info == ContainerInfo("worker:1", "FAILED", cid, "n2:8042", *times, "exit 1", 1)
    assert times == pytest.approx((1_000, 5_000), abs=0.01)
    assert type(info.state) is str


def test_container_info_of_a_container_not_placed_yet():
    unset = ("yarn_container_id", "yarn_node_http_address", "start_time", "finish_time")
    unset_fields = dict.fromkeys((*unset, "exit_message"), None)
    waiting = types.SimpleNamespace(service_name="ps", instance=0, state="WAITING", **unset_fields)
    assert status.container_info(waiting) == ContainerInfo("ps:0", "WAITING")


# -- what a poll costs ------------------------------------------------------------------------
def test_a_poll_makes_a_fixed_number_of_calls_and_reads_labels_once_per_new_node(client):
    client.nodes = [node("n1:8042")]
    client.am.containers = [container("chief:0"), container("worker:0")]
    src = StatusSource(client, APP, SPECS)
    src.poll()
    assert sorted(client.calls) == sorted([*POLL, "connect", "get_nodes"])
    assert client.connect_waits == [False]

    for _ in range(2):
        client.calls.clear()
        src.poll()
        assert len(client.calls) == status.CALLS_PER_POLL
        assert sorted(client.calls) == POLL

    client.nodes.append(node("n3:8042", {"gpu"}))  # a node that joined the cluster since
    client.am.containers.append(container("worker:1", node="n3:8042"))
    client.calls.clear()
    st = src.poll()
    assert sorted(client.calls) == sorted([*POLL, "get_nodes"])
    assert [t.gpu for t in st.tasks] == [False, False, True]
    client.calls.clear()
    src.poll()
    assert "get_nodes" not in client.calls


def test_a_poll_sees_the_containers_that_already_ended(client):
    client.am.containers = [container("chief:0", "SUCCEEDED"), container("worker:0", "FAILED")]
    st = StatusSource(client, APP, SPECS).poll()
    assert [t.state for t in st.tasks] == ["succeeded", "failed", "requested"]


def test_after_the_end_a_poll_returns_the_last_view_without_asking(client):
    client.report = report("FINISHED", "SUCCEEDED", finish_time=datetime_from_millis(3_000_000))
    src = StatusSource(client, APP, SPECS)
    st = src.poll()
    assert st.ended and src.ended
    assert client.calls == ["application_report"], "asked the gone master"
    client.calls.clear()
    client.report = report("RUNNING")  # would show if it were asked again
    assert src.poll() is st
    assert client.calls == []


def test_a_poll_before_the_master_runs_asks_the_resourcemanager_only(client):
    client.report = report("ACCEPTED")
    st = StatusSource(client, APP, SPECS).poll()
    assert client.calls == ["application_report"]
    assert not st.ended and st.pending


# -- reading never writes; acknowledging writes once --------------------------------------------
def test_poll_never_writes_and_acknowledge_acks_each_ended_task_once(client):
    kv = client.am.kv
    stop(kv, "chief:0")
    stop(kv, "worker:0", "Traceback: boom")
    kv.data[events.ack_key("worker:0")] = b"1"
    src = StatusSource(client, APP, SPECS)
    for _ in range(3):
        src.poll()
    assert not {"kv.transaction", "kv.set"} & set(client.calls)
    assert kv.transactions == []

    src.acknowledge()
    assert [[(op.key, op.value) for op in ops] for ops in kv.transactions] == [
        [("client/ack/chief:0", b"1")]
    ]
    client.calls.clear()
    src.acknowledge()
    src.poll()
    src.acknowledge()
    assert len(kv.transactions) == 1
    assert "kv.transaction" not in client.calls

    stop(kv, "worker:1")
    src.poll()
    src.acknowledge()
    assert [op.key for op in kv.transactions[-1]] == ["client/ack/worker:1"]


def test_acknowledge_with_nothing_to_ack_asks_nothing(client):
    StatusSource(client, APP, SPECS).acknowledge()
    assert client.calls == []


# -- a master that goes away ------------------------------------------------------------------
@pytest.mark.parametrize(
    "gone", [skein.exceptions.ConnectionError("gone"), skein.exceptions.SkeinError("closed")]
)
def test_a_master_that_went_away_keeps_the_last_view(client, gone):
    client.am.containers = [container("chief:0"), container("worker:0")]
    client.am.kv.data[events.task_key("chief:0", "container")] = events.encode({"host": "h"})
    src = StatusSource(client, APP, SPECS)
    before = src.poll()
    seen = src.events
    assert before.tasks[0].state == "running"

    client.am.gone = gone
    after = src.poll()
    assert after.tasks == before.tasks
    assert src.events is seen

    client.am.gone = None
    client.calls.clear()
    src.poll()
    assert "connect" in client.calls, "kept talking to the master that went away"


def test_a_master_not_running_yet_is_asked_again_next_poll(client):
    client.not_running = True
    src = StatusSource(client, APP, SPECS)
    st = src.poll()
    assert [t.state for t in st.tasks] == ["requested"] * 3
    client.not_running = False
    client.am.containers = [container("chief:0")]
    assert src.poll().tasks[0].state == "allocated"
    assert client.calls.count("connect") == 2


# -- containers and actions -------------------------------------------------------------------
@pytest.mark.parametrize("newest_first", [False, True])
def test_container_is_the_tasks_latest(client, newest_first):
    old = container("worker:0", "FAILED", start_ms=1_000_000, cid="c_old")
    new = container("worker:0", "RUNNING", start_ms=5_000_000, cid="c_new")
    client.am.containers = [container("chief:0"), *([new, old] if newest_first else [old, new])]
    src = StatusSource(client, APP, SPECS)
    src.poll()
    assert src.container("worker:0").container_id == "c_new"
    assert src.container("chief:0").container_id == "c_chief_0"


def test_container_of_an_unknown_task_lists_the_known_ones(client):
    src = StatusSource(client, APP, SPECS)
    with pytest.raises(KeyError, match="none yet"):
        src.container("chief:0")
    client.am.containers = [container("worker:0"), container("chief:0")]
    src.poll()
    with pytest.raises(KeyError, match=r"'ps:0'; tasks: chief:0, worker:0"):
        src.container("ps:0")


def test_kill_task_names_skeins_container(client):
    src = StatusSource(client, APP, SPECS)
    src.kill_task("worker:1")
    src.kill_task("chief:0")
    assert client.am.killed == ["worker_1", "chief_0"]
    lost = container("worker:1", "FAILED", cid="c_lost")
    again = container("worker:1", start_ms=2_090_000, cid="c_again")
    again.instance = 2  # worker:1 restarted inside the application: skein's worker_2
    client.am.containers = [container("chief:0"), container("worker:0"), lost, again]
    src.poll()
    src.kill_task("worker:1")
    assert client.am.killed[-1] == "worker_2"


def test_kill_task_of_an_application_not_running(client):
    client.not_running = True
    with pytest.raises(RuntimeError, match=f"{APP} is not running"):
        StatusSource(client, APP, SPECS).kill_task("worker:1")


# -- a finished run read back from its event log -------------------------------------------------
def event_log_record(monkeypatch) -> dict:
    """What :func:`result.write_event_log` keeps of a failed run, as read back."""
    written: list[bytes] = []
    monkeypatch.setattr(filesystem, "home", lambda: "/user/me")
    monkeypatch.setattr(filesystem, "write_bytes", lambda _p, data, **_k: written.append(data))
    app = AppInfo(APP, state="FINISHED", final_status="FAILED", start_time=1.0, finish_time=9.0)
    kv = {events.task_key("chief:0", "stop"): events.encode({"traceback": "Traceback: boom"})}
    kv[events.task_key("worker:0", "stop")] = events.encode({"traceback": ""})
    kv[events.metrics_key(10)] = events.encode({"step": 10, "loss": 0.5})
    ev = events.parse(kv)
    st = derive(app, SPECS, [], ev, {})
    result.write_event_log(st, SPECS, ev, [APP], {})
    record = json.loads(written[0])
    record["status"]["pending"] = ["stale: waiting for capacity"]
    return record


def test_restore_gives_the_ended_view_with_its_failure(client, monkeypatch):
    src = StatusSource(client, APP, SPECS)
    src.restore(event_log_record(monkeypatch))
    assert src.ended
    assert isinstance(src.last, RunStatus)
    assert src.last.failure == Failure("chief:0", "Traceback: boom")
    assert isinstance(src.last.failure, Failure)
    assert (src.last.app.state, src.last.app.final_status) == ("FINISHED", "FAILED")
    assert src.last.pending == []
    assert src.events.traceback("chief:0") == "Traceback: boom"
    assert [m["step"] for m in src.events.metrics] == [10]
    assert src.poll() is src.last
    assert client.calls == []


def test_an_ended_run_is_not_acknowledged_its_tasks_are_gone(client, monkeypatch):
    src = StatusSource(client, APP, SPECS)
    src.restore(event_log_record(monkeypatch))  # stop events, and no acks
    src.acknowledge()
    assert client.calls == []


def test_a_node_the_resourcemanager_no_longer_lists_is_looked_up_once(client):
    client.am.containers = [container("chief:0", node="lost:8042")]
    src = StatusSource(client, APP, SPECS)
    src.poll()
    assert client.calls.count("get_nodes") == 1
    client.calls.clear()
    src.poll()
    assert sorted(client.calls) == POLL


def test_task_specs_of_recovers_the_topology_with_labels(client):
    chief = skein.Service(script="x", resources=skein.Resources(2048, 2))
    gpu = {"instances": 3, "node_label": "gpu"}
    worker = skein.Service(script="x", resources=skein.Resources(1024, 1), **gpu)
    client.am.spec = skein.ApplicationSpec(services={"chief": chief, "worker": worker})
    specs = status.task_specs_of(client, APP)
    assert specs == {"chief": TaskSpec(2048, 2), "worker": TaskSpec(1024, 1, 3, label="gpu")}
    assert specs["worker"].label is NodeLabel.GPU
    assert client.connect_waits == [False]


# -- what waits, and why; the loss history ----------------------------------------------------
def limits_stub(monkeypatch, full: bool = True) -> list[str]:
    """The queue's figures as the ResourceManager would give them; records each reading."""
    from tfyarn_jupyter.hadoop.capacity import Limit

    asked: list[str] = []
    used = 8192 if full else 0

    def read(self, queue):
        asked.append(queue)
        return {"": Limit("", 8192, 8, 8192, 8, 100.0, used, 8 if full else 0)}

    monkeypatch.setattr(StatusSource, "queue_limits", read)
    return asked


def test_waiting_tasks_are_explained_with_the_queues_figures_now_and_then(client, monkeypatch):
    asked = limits_stub(monkeypatch)
    client.am.containers = [container("chief:0"), container("worker:0")]
    src = StatusSource(client, APP, SPECS)
    st = src.poll()
    assert st.capacity == {"message": (
        "worker:1 waiting for 1024 MiB/1 vcores in the unlabelled partition: queue 'default' "
        "is full (8192 of 8192 MiB, 8 of 8 vcores in use)")}  # fmt: skip
    assert src.poll().capacity == st.capacity and asked == ["default"]  # not every poll
    client.am.containers.append(container("worker:1"))
    assert src.poll().capacity is None and src.capacity == ""


def test_before_the_master_runs_the_master_is_what_waits(client, monkeypatch):
    asked = limits_stub(monkeypatch)
    client.report = report("ACCEPTED", queue="root.default")  # YARN reports the queue's path
    st = StatusSource(client, APP, SPECS).poll()
    assert asked == ["root.default"] and "queue 'default' is full" in st.capacity["message"]
    assert st.capacity is not None
    assert st.capacity["message"].startswith(
        "the application master waiting for 512 MiB/1 vcores in the unlabelled partition"
    )


def test_the_explanation_is_published_to_the_tasks_once_per_change(client, monkeypatch):
    limits_stub(monkeypatch)
    client.am.containers = [container("chief:0")]
    src = StatusSource(client, APP, SPECS)
    src.poll()
    src.publish_capacity()
    src.publish_capacity()
    said = events.parse(client.am.kv.data).capacity
    assert said.startswith("worker:0, worker:1 waiting for 1024 MiB/1 vcores")
    assert client.calls.count("kv.set") == 1


def test_the_loss_history_grows_across_polls_though_the_store_holds_the_latest(client):
    src = StatusSource(client, APP, SPECS)
    for step, loss in ((10, 0.9), (10, 0.9), (20, 0.7), (30, 0.5)):
        client.am.kv.data[events.progress_key("chief:0")] = events.encode(
            {"step": step, "loss": loss, "max_steps": 100, "rss_bytes": 5 << 20}
        )
        st = src.poll()
    chief = st.to_dict()["progress"]["chief:0"]
    assert chief["history"] == [[10, 0.9], [20, 0.7], [30, 0.5]]
    assert (chief["max_steps"], chief["rss_bytes"]) == (100, 5 << 20)


def test_a_restored_run_keeps_its_loss_history(client, monkeypatch):
    record = event_log_record(monkeypatch)
    record["status"]["progress"] = {"chief:0": {"step": 30, "history": [[10, 0.9], [30, 0.5]]}}
    src = StatusSource(client, APP, SPECS)
    src.restore(record)
    assert src.history.points == {"chief:0": [[10, 0.9], [30, 0.5]]}
    assert src.last is not None and src.last.progress["chief:0"]["history"] == [
        [10, 0.9],
        [30, 0.5],
    ]


# -- a task that failed before it reported ---------------------------------------------------------
def test_the_poll_that_sees_an_unreported_failure_quotes_the_tasks_last_error_line(
    client, monkeypatch
):
    read: list[tuple[str, str, str]] = []

    def error_line_of(app_id, c, user, timeout_s=15.0):
        read.append((app_id, c.container_id, user))
        return "ModuleNotFoundError: No module named 'tf_yarn'"

    monkeypatch.setattr(status.task_logs, "error_line_of", error_line_of)
    client.am.containers = [container("chief:0"), container("worker:0"), container("worker:1")]
    src = StatusSource(client, APP, SPECS)
    assert src.poll().failure is None and read == []
    said = "Failure in service chief, see logs for more information."
    client.report = report("FINISHED", "FAILED", diagnostics=said)
    st = src.poll()
    assert read == [(APP, "c_chief_0", "me")]
    assert st.failure == Failure(
        "chief:0",
        "chief:0 ended before reporting to tfyarn; the last error in its stderr:\n"
        "ModuleNotFoundError: No module named 'tf_yarn'",
    )
    assert "see logs" not in str(result.failure_of(st, APP))
    assert src.poll() is st and len(read) == 1  # read once, at the end


def test_an_unreadable_log_leaves_the_failure_as_yarn_said_it(client, monkeypatch):
    monkeypatch.setattr(status.task_logs, "error_line_of", lambda *a, **k: None)
    client.am.containers = [container("chief:0")]
    src = StatusSource(client, APP, SPECS)
    src.poll()
    said = "Failure in service chief, see logs for more information."
    client.report = report("FINISHED", "FAILED", diagnostics=said)
    assert src.poll().failure == Failure("chief:0", said)


def test_a_failure_the_task_reported_itself_reads_no_log(client, monkeypatch):
    def error_line_of(*args, **kwargs):
        raise AssertionError("read the logs of a task that reported its failure")

    monkeypatch.setattr(status.task_logs, "error_line_of", error_line_of)
    client.am.containers = [container("chief:0", "FAILED")]
    client.am.kv.data[events.task_key("chief:0", "container")] = events.encode({"host": "n1"})
    stop(client.am.kv, "chief:0", "Traceback...\nKeyError: 'x'")
    src = StatusSource(client, APP, SPECS)
    src.poll()
    client.report = report("FINISHED", "FAILED", diagnostics="Failure in service chief, ...")
    assert src.poll().failure == Failure("chief:0", "Traceback...\nKeyError: 'x'")


def test_a_restarted_service_container_counts_as_its_task():
    import types

    c = types.SimpleNamespace(
        service_name="evaluator", instance=2, state="RUNNING", yarn_container_id="c_3",
        yarn_node_http_address="n:8042", start_time=None, finish_time=None, exit_message="",
    )  # fmt: skip
    assert status.container_info(c, instances=1).task == "evaluator:0"
    assert status.container_info(c, instances=3).task == "evaluator:2"
    assert status.container_info(c).task == "evaluator:2"  # the service's size unknown


# -- restarts inside the application ----------------------------------------------------------
def test_each_restart_is_logged_once_as_a_poll_first_sees_it(client, caplog):
    lost = container("worker:1", "FAILED", start_ms=2_000_000, cid="c_worker_1")
    lost.exit_message, lost.finish_time = "Container preempted", datetime_from_millis(2_050_000)
    again = container("worker:1", start_ms=2_060_000, cid="c_worker_1b")
    again.instance = 2  # skein's first replacement in the service: for worker:1, its failed one
    client.am.containers = [container("chief:0"), container("worker:0"), lost]
    src = StatusSource(client, APP, SPECS)
    caplog.set_level("INFO", logger="tfyarn_jupyter")
    src.poll()
    assert "restarted" not in caplog.text
    client.am.containers.append(again)
    record = {"cause": "preempted", "exit_status": -102, "step": 1200}
    client.am.kv.data[events.restart_key("worker:1", 1)] = events.encode(record)
    st = src.poll()
    assert [(t.task, t.restarts) for t in st.tasks if t.restarts] == [("worker:1", 1)]
    record["resumed_step"] = 1000  # the restarted worker restored its checkpoint
    client.am.kv.data[events.restart_key("worker:1", 1)] = events.encode(record)
    assert src.poll().tasks[2].steps_lost == 200
    lines = [r.getMessage() for r in caplog.records if "restarted" in r.getMessage()]
    assert lines == [
        f"{APP} worker:1 restarted in the application (attempt 2): preempted (exit status -102)"
        " at step 1200"
    ]


def test_a_restart_line_says_the_steps_lost_once_known_and_what_it_can_without_a_record():
    from tfyarn_jupyter.core.state import TaskState

    t = TaskState("evaluator:0", "evaluator", 0)
    known = {"n": 2, "cause": "node lost", "exit_status": None, "step": 900, "resumed_step": 850,
             "steps_lost": 50}  # fmt: skip
    assert status.restart_line(APP, t, known) == (
        f"{APP} evaluator:0 restarted in the application (attempt 3): node lost; "
        "resumed at step 850, 50 steps lost"
    )
    bare = {"n": 1, "cause": "", "exit_status": None, "step": None, "steps_lost": None}
    assert status.restart_line(APP, t, bare).endswith("(attempt 2): lost")


def test_a_replacement_stands_for_the_failed_container_skein_started_it_for():
    def c(instance: int, state: str = "RUNNING", end: int | None = None):
        finish = datetime_from_millis(end) if end else None
        return types.SimpleNamespace(instance=instance, state=state, finish_time=finish)

    # of 3 workers, worker_2 failed first, then worker_0; then worker_3 (worker_2's
    # replacement) failed too: replacements 3, 4, 5 stand for worker:2, worker:0, worker:2
    seen = [c(0, "FAILED", 9_000), c(1), c(2, "FAILED", 5_000), c(3, "FAILED", 12_000),
            c(4), c(5)]  # fmt: skip
    failed = status.failed_in_order(seen)
    assert [f.instance for f in failed] == [2, 0, 3]
    assert [status.task_index(x.instance, 3, failed) for x in seen] == [0, 1, 2, 2, 0, 2]
    assert status.task_index(4, 3, []) == 1  # not seen failing yet: skein's numbering


# -- a ResourceManager that does not answer -----------------------------------------------
def test_without_the_resourcemanager_a_poll_keeps_its_last_word_and_reads_the_master(client):
    client.am.containers = [container("chief:0")]
    src = StatusSource(client, APP, SPECS)
    first = src.poll()
    assert first.app.state == "RUNNING" and src.report.message() == ""
    client.am.kv.data[events.progress_key("chief:0")] = events.encode({"step": 7})

    def refused(app_id: str):
        raise skein.exceptions.ConnectionError("Unable to connect to the ResourceManager")

    client.application_report = refused  # type: ignore[method-assign]
    client.calls.clear()
    st = src.poll()
    assert st.app == first.app  # YARN's last word stands
    assert st.progress["chief:0"]["step"] == 7  # the master's store still reads
    assert "get_nodes" not in client.calls and "connect" not in client.calls
    assert "ResourceManager unreachable since" in src.report.message()
    assert "ConnectionError: Unable to connect" in src.report.message()


def test_a_first_poll_without_the_resourcemanager_raises_saying_so(client):
    def refused(app_id: str):
        raise skein.exceptions.ConnectionError("Unable to connect")

    client.application_report = refused  # type: ignore[method-assign]
    with pytest.raises(ConnectionError, match="ResourceManager unreachable since"):
        StatusSource(client, APP, SPECS).poll()
