"""Requests that are wrong fail in the notebook, before HDFS or YARN is asked anything.

Every test runs with ``HADOOP_CONF_DIR`` unset and with the functions that
reach the cluster (the skein driver, the environment upload, WebHDFS,
submission) replaced by ones that fail the test: a :class:`SpecError` can
only come from the local checks.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
import types

import pytest
import skein

from tfyarn_jupyter import LaunchOptions, SpecError, TaskSpec
from tfyarn_jupyter.core import recovery
from tfyarn_jupyter.core.spec import validate_task_specs
from tfyarn_jupyter.core.state import AppInfo, Failure, RunStatus, TaskState
from tfyarn_jupyter.hadoop import filesystem, resourcemanager
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.events import Events
from tfyarn_jupyter.run import launch, skein_app
from tfyarn_jupyter.ship import packing

OK_SPECS = {"chief": TaskSpec(1024, 1), "evaluator": TaskSpec(1024, 1)}


def ok_fn():  # picklable by reference; never called
    return None


class TouchedCluster(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)

    def forbidden(*_a, **_k):
        raise TouchedCluster("validation reached the cluster")

    monkeypatch.setattr(resourcemanager, "get_client", forbidden)
    monkeypatch.setattr(resourcemanager, "submit_spec", forbidden)
    monkeypatch.setattr(resourcemanager, "check_queue", forbidden)
    monkeypatch.setattr(resourcemanager, "preflight", forbidden)
    monkeypatch.setattr(packing, "ensure_env", forbidden)
    monkeypatch.setattr(packing, "ensure_overlay", forbidden)
    monkeypatch.setattr(filesystem, "client", forbidden)
    monkeypatch.setattr(filesystem, "upload", forbidden)
    monkeypatch.setattr(filesystem, "exists", forbidden)


def prepare(experiment_fn, task_specs, **options):
    """``skein_app.prepare`` as ``submit`` calls it: topology first, then the options."""
    specs = validate_task_specs(task_specs)
    return skein_app.prepare(experiment_fn, specs, LaunchOptions.from_keywords(options))


@pytest.fixture(params=["prepare", "submit", "run_on_yarn"])
def entry(request):
    """Each public way in runs the same checks."""
    return prepare if request.param == "prepare" else getattr(launch, request.param)


def test_the_guard_itself_catches_cluster_access():
    # A valid request gets past the local checks and into the guarded calls.
    with pytest.raises(TouchedCluster):
        prepare(ok_fn, OK_SPECS)


# -- topology ---------------------------------------------------------------------------
def test_unknown_task_type(entry):
    with pytest.raises(SpecError, match="'master'") as exc:
        entry(ok_fn, {"chief": TaskSpec(1024, 1), "master": TaskSpec(1024, 1)})
    assert "chief, worker, ps, evaluator" in str(exc.value)


def test_two_chiefs(entry):
    with pytest.raises(SpecError, match="exactly one chief, got instances=2"):
        entry(ok_fn, {"chief": TaskSpec(1024, 1, instances=2)})


def test_no_chief(entry):
    with pytest.raises(SpecError, match='"chief"'):
        entry(ok_fn, {"evaluator": TaskSpec(1024, 1)})


def test_two_evaluators(entry):
    with pytest.raises(SpecError, match="at most one evaluator"):
        entry(ok_fn, {"chief": TaskSpec(1024, 1), "evaluator": TaskSpec(1024, 1, instances=2)})


def test_ps_without_a_chief_to_coordinate(entry):
    with pytest.raises(SpecError, match='"chief"'):
        entry(ok_fn, {"worker": TaskSpec(1024, 1, instances=2), "ps": TaskSpec(1024, 1)})


@pytest.mark.parametrize(
    "topology",
    [
        {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, instances=2)},
        {"worker": TaskSpec(1024, 1, instances=2), "evaluator": TaskSpec(1024, 1)},
    ],
)
def test_all_reduce_topologies_without_a_ps_pass_the_topology_checks(entry, topology):
    with pytest.raises(TouchedCluster):
        entry(ok_fn, topology)


def test_empty_topology(entry):
    with pytest.raises(SpecError, match="non-empty"):
        entry(ok_fn, {})


def test_task_spec_that_is_not_a_task_spec(entry):
    with pytest.raises(SpecError, match=r"task_specs\['chief'\] must be a TaskSpec"):
        entry(ok_fn, {"chief": {"memory": 1024, "vcores": 1}})


# -- the experiment ---------------------------------------------------------------------
def test_unpicklable_experiment_fn(entry):
    lock = threading.Lock()
    fn = lambda: lock  # noqa: E731 - a closure over something cloudpickle cannot pickle
    with pytest.raises(SpecError, match="cannot be serialised") as exc:
        entry(fn, OK_SPECS)
    assert "'<lambda>'" in str(exc.value)
    assert "lock" in str(exc.value)


def test_experiment_fn_that_is_not_callable(entry):
    with pytest.raises(SpecError, match="must be a function, got str"):
        entry("experiment_fn", OK_SPECS)


# -- files, env, queue, retries ------------------------------------------------------------
def test_missing_files_source(entry, tmp_path):
    missing = tmp_path / "nowhere" / "mod.py"
    with pytest.raises(SpecError, match="does not exist") as exc:
        entry(ok_fn, OK_SPECS, files={"mod.py": str(missing)})
    assert str(missing) in str(exc.value)
    assert "'mod.py'" in str(exc.value)


@pytest.mark.parametrize("target", ["pkg/mod.py", "", "..", "env", "experiment.pkl"])
def test_files_target_that_is_not_a_plain_name(entry, tmp_path, target):
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n")
    with pytest.raises(SpecError, match="not a plain name"):
        entry(ok_fn, OK_SPECS, files={target: src})


@pytest.mark.parametrize("value", ['say "hi"', "two\nlines"])
def test_env_value_yarn_cannot_carry(entry, value):
    with pytest.raises(SpecError, match="the value of GREETING contains a double quote"):
        entry(ok_fn, OK_SPECS, env={"OK": "fine", "GREETING": value})


@pytest.mark.parametrize("env", [{"N": 3}, {"NOT-A-NAME": "x"}, {"": "x"}])
def test_env_entries_that_are_not_name_to_string(entry, env):
    with pytest.raises(SpecError, match="must map a variable name to a string"):
        entry(ok_fn, OK_SPECS, env=env)


@pytest.mark.parametrize(
    "env", [{"TFYARN_PEER_TIMEOUT": "soon"}, {"TFYARN_PEER_TIMEOUT": "0"},
            {"TFYARN_HEARTBEAT_TIMEOUT": "5"}],
)  # fmt: skip
def test_timeout_bounds_in_env_that_are_not_usable_seconds(entry, env):
    (key,) = env
    with pytest.raises(SpecError, match=f"{key}=.* must be a number of seconds"):
        entry(ok_fn, OK_SPECS, env=env)


def test_timeout_bounds_in_env_override_the_defaults_but_a_detached_run_has_no_watchdog():
    topology = {"chief": 1, "worker": 2, "ps": 1}
    user = {"TFYARN_HEARTBEAT_TIMEOUT": "20", "TFYARN_PEER_TIMEOUT": "45", "A": "b"}

    def env_of(**options):
        opts = LaunchOptions(**options)
        return skein_app.task_env(opts, opts.contract(topology))

    owned = env_of(env=user)
    assert float(owned["TFYARN_HEARTBEAT_TIMEOUT"]) == 20
    assert float(owned["TFYARN_PEER_TIMEOUT"]) == 45
    assert owned["TFYARN_TASKS"] == "chief=1,worker=2,ps=1"
    assert owned["A"] == "b"
    detached = env_of(env=user, detach=True)
    assert float(detached["TFYARN_HEARTBEAT_TIMEOUT"]) == 0
    assert float(detached["TFYARN_PEER_TIMEOUT"]) == 45
    default = env_of()
    assert float(default["TFYARN_HEARTBEAT_TIMEOUT"]) == contract.HEARTBEAT_TIMEOUT_S
    assert default["TFYARN_PEER_TIMEOUT"] == "300.0"


@pytest.mark.parametrize("queue", ["", None, 3])
def test_queue_that_is_not_a_name(entry, queue):
    with pytest.raises(SpecError, match="queue must be a queue name"):
        entry(ok_fn, OK_SPECS, queue=queue)


@pytest.mark.parametrize("entry_name", ["submit", "run_on_yarn"])
@pytest.mark.parametrize("nb_retries", [-1, 1.5, True, "1"])
def test_bad_nb_retries(entry_name, nb_retries):
    with pytest.raises(SpecError, match="nb_retries must be an int >= 0"):
        getattr(launch, entry_name)(ok_fn, OK_SPECS, nb_retries=nb_retries)


def test_the_first_problem_is_reported_before_later_ones(tmp_path):
    # A bad topology is reported even when the function is unpicklable too:
    # the cheap checks run first.
    lock = threading.Lock()
    with pytest.raises(SpecError, match='"chief"'):
        prepare(
            lambda: lock,
            {"ps": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1)},
            files={"x.py": tmp_path / "missing.py"},
        )


# -- the heartbeat: as long as the launch, across its retried attempts ------------------------
# A retried attempt's tasks only see an attached client through the heartbeat: without
# it they neither end an orphaned attempt nor wait for the client to read a killed
# task's exit status. The sandbox test of a retried run is in tests/integration.
class Source:
    """Stands in for :class:`status.StatusSource`: counts heartbeats, ends on demand."""

    def __init__(self, ended: bool, misses: int = 0) -> None:
        self.ended = ended
        self.last = None
        self.beats = 0
        self.misses = misses  # the first writes that do not land (no master yet)
        self.beat = threading.Event()

    def heartbeat(self) -> bool:
        self.beats += 1
        self.beat.set()
        return self.beats > self.misses


def wait_beats(source: Source, n: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while source.beats < n:
        assert time.monotonic() < deadline, f"{source.beats} heartbeats, expected {n}"
        source.beat.wait(0.05)
        source.beat.clear()


@pytest.fixture
def fast_heartbeat(monkeypatch):
    monkeypatch.setattr(contract, "HEARTBEAT_INTERVAL_S", 0.01)


def make_run(nb_retries: int) -> launch.Run:
    return launch.Run(object(), "application_1_0001", {"chief": TaskSpec(1024, 1)},
                   nb_retries=nb_retries, heartbeat=False)  # fmt: skip


def test_heartbeat_goes_on_when_an_attempt_ended_and_a_retry_is_left(fast_heartbeat):
    handle = make_run(nb_retries=1)
    failed_attempt = Source(ended=True)
    handle._source = failed_attempt  # type: ignore[assignment]
    handle._start_heartbeat()
    try:
        wait_beats(failed_attempt, 3)
        retry = Source(ended=False)
        handle._source = retry  # type: ignore[assignment]
        handle.attempts.append("application_1_0002")
        wait_beats(retry, 3)
    finally:
        handle._heartbeat_stop.set()


def test_heartbeat_retries_soon_until_its_first_write_lands_then_keeps_its_interval(
    monkeypatch,
):
    monkeypatch.setattr(contract, "HEARTBEAT_INTERVAL_S", 60.0)
    monkeypatch.setattr(contract, "FIRST_HEARTBEAT_RETRY_S", 0.01)
    handle = make_run(nb_retries=0)
    source = Source(ended=False, misses=2)  # the master is not up for the first two
    handle._source = source  # type: ignore[assignment]
    handle._start_heartbeat()
    try:
        wait_beats(source, 3, timeout=2.0)
        time.sleep(0.3)
        assert source.beats == 3, "after a landed heartbeat the next waits its interval"
    finally:
        handle._heartbeat_stop.set()


def test_heartbeat_stops_when_the_last_attempt_ended(fast_heartbeat):
    handle = make_run(nb_retries=0)
    ended = Source(ended=True)
    handle._source = ended  # type: ignore[assignment]
    before = set(threading.enumerate())
    handle._start_heartbeat()
    started = [t for t in threading.enumerate() if t not in before]
    assert all(t.name == "tfyarn-heartbeat" for t in started), started
    for t in started:
        t.join(5)
        assert not t.is_alive(), "the heartbeat thread outlived the run"
    assert ended.beats == 0


# -- reading never changes a run; advance() drives it ----------------------------------------
def failed_status(app_id: str) -> RunStatus:
    app = AppInfo(app_id, state="FINISHED", final_status="FAILED", start_time=1.0,
                  finish_time=2.0)  # fmt: skip
    return RunStatus(app, [], [], [], Failure("chief:0", "boom"))


class EndedSource:
    """A status source whose attempt has failed; records the protocol writes asked of it."""

    def __init__(self, client, app_id, task_specs) -> None:
        self.app_id = app_id
        self.events = Events()
        self.last: RunStatus | None = None
        self.acks = 0

    @property
    def ended(self) -> bool:
        return self.last is not None

    def poll(self) -> RunStatus:
        self.last = failed_status(self.app_id)
        return self.last

    def acknowledge(self) -> None:
        self.acks += 1

    def publish_capacity(self) -> None:
        self.capacity_writes = getattr(self, "capacity_writes", 0) + 1


@pytest.fixture
def retry_run(monkeypatch):
    """A failed first attempt with one retry left; submissions and HDFS writes recorded."""
    submitted: list[skein.ApplicationSpec] = []
    written: list[str] = []
    monkeypatch.setattr(launch, "StatusSource", EndedSource)
    monkeypatch.setattr(
        resourcemanager, "submit_spec",
        lambda _c, spec: submitted.append(spec) or f"application_1_000{len(submitted) + 1}",
    )  # fmt: skip
    monkeypatch.setattr(filesystem, "write_bytes", lambda path, *_a, **_k: written.append(path))
    monkeypatch.setattr(filesystem, "home", lambda: "/user/me")
    spec = skein.ApplicationSpec(
        services={"chief": skein.Service(script="true", resources=skein.Resources(128, 1))}
    )
    prepared = skein_app.Prepared(spec, {"chief": TaskSpec(128, 1)},
                                contract.TaskContract({"chief": 1}), {}, None,
                                tempfile.TemporaryDirectory())  # fmt: skip
    handle = launch.Run(object(), "application_1_0001", {"chief": TaskSpec(128, 1)},
                     prepared=prepared, nb_retries=1, heartbeat=False)  # fmt: skip
    return handle, submitted, written


def test_status_of_a_failed_attempt_neither_resubmits_nor_writes(retry_run):
    handle, submitted, written = retry_run
    for _ in range(3):
        st = handle.status()
    assert st.ended and not st.succeeded
    assert (submitted, written, handle.attempts) == ([], [], ["application_1_0001"])
    assert handle.source.acks == 0
    assert not handle.ended  # a retry is left: the run is not over


def test_advance_keeps_the_event_log_and_resubmits_the_next_attempt(retry_run):
    handle, submitted, written = retry_run
    handle.advance()
    assert written == ["/user/me/.tfyarn/runs/application_1_0001.json"]
    assert handle.attempts == ["application_1_0001", "application_1_0002"]
    (spec,) = submitted
    env = spec.services["chief"].env
    assert contract.TaskContract.from_env(env).attempt == 1
    handle.advance()  # the retry failed too, and no retry is left
    assert len(submitted) == 1
    assert written[-1].endswith("application_1_0002.json")
    assert handle.ended


def test_wait_drives_the_retries_and_raises_naming_the_failed_task(retry_run):
    handle, submitted, _ = retry_run
    with pytest.raises(launch.RunFailed, match="in task chief:0") as exc:
        handle.wait(timeout=5, interval=0.01)
    assert exc.value.task == "chief:0"
    assert len(submitted) == 1


def preempted_status(app_id: str) -> RunStatus:
    """A failed attempt whose chief's container YARN took back (exit status -102)."""
    app = AppInfo(app_id, state="FINISHED", final_status="FAILED", start_time=1.0,
                  finish_time=2.0)  # fmt: skip
    chief = TaskState("chief:0", "chief", 0, "failed",
                      exit_message="Container preempted by scheduler")  # fmt: skip
    return RunStatus(app, [chief], [], [], Failure("chief:0", ""))


def test_a_preempted_attempt_is_tried_again_without_spending_nb_retries(retry_run, monkeypatch):
    handle, submitted, _written = retry_run
    monkeypatch.setattr(recovery, "LOSS_BACKOFF_S", 0.0)  # the wait: the test below
    handle.budget = recovery.Budget(retries=0, preemptions=2)

    def poll(self):
        self.last = preempted_status(self.app_id)
        return self.last

    monkeypatch.setattr(EndedSource, "poll", poll)
    handle.status()
    assert not handle.ended and handle.budget.preemptions == 2  # reading decided nothing
    handle.advance()
    assert len(submitted) == 1 and handle.budget == recovery.Budget(retries=0, preemptions=1)
    assert [(r["task"], r["cause"], r["spent"]) for r in handle.restarts] == [
        ("chief:0", "preempted", "preemptions")
    ]
    handle.advance()
    handle.advance()  # the third preemption: the run's restarts for lost containers are spent
    assert len(submitted) == 2 and handle.ended


def test_a_runs_bound_on_lost_containers_comes_from_its_env_and_counts_restarts_inside(
    retry_run, monkeypatch
):
    handle, submitted, _written = retry_run
    monkeypatch.setattr(recovery, "LOSS_BACKOFF_S", 0.0)
    bounded = launch.Run(object(), "application_1_0009", {"chief": TaskSpec(128, 1)},
                         env={recovery.PREEMPTIONS_VAR: "2"}, heartbeat=False)  # fmt: skip
    assert bounded.budget == recovery.Budget(retries=0, preemptions=2)
    handle.budget = recovery.Budget(retries=0, preemptions=2)

    def poll(self):
        self.last = preempted_status(self.app_id)
        return self.last

    monkeypatch.setattr(EndedSource, "poll", poll)
    # the application restarted one lost container itself before a second loss ended it
    handle.source.events.restarts["worker:0"] = [{"cause": "preempted", "n": 1}]
    handle.source.events.restarts["chief:0"] = [{"cause": "peer restarted", "n": 1}]
    handle.advance()
    assert len(submitted) == 1 and handle.budget == recovery.Budget(retries=0, preemptions=0)
    # the next application restarted one too: past the bound, the run ends saying so
    handle.source.events.restarts["worker:0"] = [{"cause": "preempted", "n": 1}]
    handle.advance()
    assert len(submitted) == 1 and handle.ended
    assert handle.budget == recovery.Budget(retries=0, preemptions=0)


def preempted_every_time(monkeypatch) -> list[float]:
    """Every attempt's chief preempted; the driver's clock (``now[0]``), moved by hand."""
    now = [1000.0]

    def poll(self):
        self.last = preempted_status(self.app_id)
        return self.last

    monkeypatch.setattr(EndedSource, "poll", poll)
    clock = types.SimpleNamespace(monotonic=lambda: now[0], time=time.time, sleep=time.sleep)
    monkeypatch.setattr(launch, "time", clock)
    return now


def test_a_new_attempt_after_a_lost_container_waits_its_backoff_then_is_submitted(
    retry_run, monkeypatch, caplog
):
    handle, submitted, _written = retry_run
    handle.budget = recovery.Budget(retries=0, preemptions=3)
    now = preempted_every_time(monkeypatch)
    with caplog.at_level(logging.INFO, logger="tfyarn_jupyter"):
        handle.advance()
    assert submitted == [] and handle.budget.preemptions == 2  # decided, and waiting
    assert "a new attempt in 5 s" in caplog.text
    assert not handle.ended, "a run waiting for its next attempt is not over"
    now[0] += recovery.LOSS_BACKOFF_S - 0.5
    handle.advance()
    handle.advance()
    assert submitted == [] and handle.budget.preemptions == 2, "nothing spent twice"
    now[0] += 1.0
    handle.advance()
    assert len(submitted) == 1 and handle.attempts[-1] == "application_1_0002"
    handle.advance()  # the second attempt lost its container too: twice as long a wait
    now[0] += 2 * recovery.LOSS_BACKOFF_S - 0.5
    handle.advance()
    assert len(submitted) == 1
    now[0] += 1.0
    handle.advance()
    assert len(submitted) == 2


def test_a_run_cancelled_while_its_next_attempt_waits_submits_nothing_more(retry_run, monkeypatch):
    handle, submitted, _written = retry_run
    handle.budget = recovery.Budget(retries=0, preemptions=3)
    now = preempted_every_time(monkeypatch)
    handle.advance()
    handle.cancel()
    now[0] += recovery.LOSS_BACKOFF_CAP_S
    handle.advance()
    assert submitted == [] and handle.ended


def test_a_task_that_raises_spends_a_retry_and_none_left_ends_the_run(retry_run):
    handle, submitted, _written = retry_run
    handle.budget = recovery.Budget(retries=1, preemptions=5)
    handle.advance()  # failed_status: the chief raised ("boom"): a retry
    assert len(submitted) == 1 and handle.budget.retries == 0
    assert handle.ended, "the new attempt failed too, and no retry is left"
    handle.advance()
    assert len(submitted) == 1 and handle.ended
    assert handle.restarts[0]["spent"] == "retries"
