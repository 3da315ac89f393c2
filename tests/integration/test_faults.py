"""Fault tests on the real sandbox: each fault ends in a clear, truthful state, in bounded time.

Faults are real: processes are killed with signals (found by pid and checked
by their ``CONTAINER_ID`` environment before being signalled), a NodeManager
is stopped and restarted, resources are asked for that can never be granted.
Each test prints ``FIGURE case=... seconds=...``: how long after the fault the
final state was reported (``pytest -s`` shows them).

The sandbox has 8 vcores per NodeManager and the ``default`` queue reaches only
the unlabelled one, so bigger topologies put some tasks on the ``gpu`` node
(queue ``ml-gpu``). The NodeManager test is last: other sessions share the
sandbox, and its outage is kept short.
"""

from __future__ import annotations

import re
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import psutil
import pytest
import skein

from tfyarn_jupyter import NodeLabel, RunFailed, TaskSpec, submit
from tfyarn_jupyter.core.state import RunStatus
from tfyarn_jupyter.run.launch import Run, attach, event_log_path, read_event_log
from tfyarn_jupyter.run.polling import CALLS_PER_POLL, StatusSource

from .helpers import unique

pytestmark = pytest.mark.sandbox

SMALL = TaskSpec("512M", 1)
GPU_SMALL = TaskSpec("512M", 1, label=NodeLabel.GPU)
RUN_TIMEOUT_S = 600
#: Longer than any test's training: runs end by the fault, not by themselves.
ENDLESS = 1_000_000

T = TypeVar("T")


def figure(case: str, seconds: float) -> None:
    print(f"FIGURE case={case} seconds={seconds:.1f}")


def wait_for(what: str, check: Callable[[], T | None], timeout: float, interval: float = 1.0) -> T:
    """Call ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(interval)


def watch(run: Run, timeout: float = RUN_TIMEOUT_S) -> RunStatus:
    """Drive the run until it (and its retries) ended; the last status."""

    def ended() -> RunStatus | None:
        st = run.advance()
        return st if st.ended and (st.succeeded or run.attempt >= run.nb_retries) else None

    return wait_for(f"{run.app_id} ended", ended, timeout)


def task_states(st: RunStatus) -> dict[str, str]:
    return {t.task: t.state for t in st.tasks}


def task_event(run: Run, task: str, kind: str, timeout: float = RUN_TIMEOUT_S) -> dict[str, Any]:
    """Wait until ``task`` reported ``kind`` (e.g. ``train_start``); its ``container`` event."""

    def seen() -> dict[str, Any] | None:
        st = run.status()
        assert not st.ended, f"{run.app_id} ended {st.app.state} before {task} {kind}"
        ev = run.source.events.task(task)
        return ev["container"] if kind in ev else None

    return wait_for(f"{task} reported {kind}", seen, timeout)


def _container_id(proc: psutil.Process) -> str:
    try:
        return proc.environ().get("CONTAINER_ID", "")
    except (psutil.Error, OSError):
        return ""


def app_processes(app_id: str) -> list[psutil.Process]:
    """Processes of the application's containers (the AM's included), by ``CONTAINER_ID``."""
    suffix = app_id.removeprefix("application_")
    pattern = re.compile(rf"^container_(e\d+_)?{re.escape(suffix)}_\d+_\d+$")
    return [p for p in psutil.process_iter() if pattern.match(_container_id(p))]


def task_process(run: Run, task: str) -> psutil.Process:
    """The task's python process: the pid it reported, checked against its container id."""
    pid = run.source.events.task(task)["container"]["pid"]
    container = {t.task: t.container_id for t in run.status().tasks}[task]
    proc = psutil.Process(pid)
    assert container and _container_id(proc) == container, (pid, container, proc.cmdline())
    return proc


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone(procs: list[psutil.Process], timeout: float) -> float:
    """Wait until every process in ``procs`` exited; the seconds it took."""
    t0 = time.monotonic()
    wait_for(
        f"processes {[p.pid for p in procs]} exited",
        lambda: not any(alive(p) for p in procs),
        timeout,
        interval=0.5,
    )
    return time.monotonic() - t0


def latest_step(model_dir: str) -> int:
    """The step of the checkpoint TensorFlow's ``checkpoint`` file points at (it must exist)."""
    text = Path(model_dir, "checkpoint").read_text()
    name = re.search(r'^model_checkpoint_path: "(.+)"$', text, re.MULTILINE)
    assert name, text
    assert Path(model_dir, f"{name.group(1)}.index").exists(), name.group(1)
    return int(name.group(1).rsplit("-", 1)[1])


def checkpoints(model_dir: str) -> set[int]:
    """Steps of the checkpoints in ``model_dir``."""
    return {int(p.name[len("model.ckpt-") : -len(".index")])
            for p in Path(model_dir).glob("model.ckpt-*.index")}  # fmt: skip


# -- 1. a worker killed with signal 9 ------------------------------------------------------
def test_worker_killed_by_sigkill_fails_its_attempt_with_exit_137_is_resubmitted_then_fails_run(
    sandbox, cancer, cancer_files, tmp_path, runs
):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=ENDLESS, save_checkpoints_steps=100)

    specs = {"chief": SMALL, "worker": SMALL, "ps": SMALL}
    run = submit(
        experiment_fn, specs, files=cancer_files, nb_retries=1, name=unique("tfyarn-fault-kill9")
    )
    runs.append(run)
    first = run.app_id

    # Attempt 0: kill worker:0 mid-training; the attempt is reported failed and resubmitted.
    task_event(run, "worker:0", "train_start")
    worker, ps = task_process(run, "worker:0"), task_process(run, "ps:0")
    t0 = time.monotonic()
    worker.send_signal(signal.SIGKILL)
    wait_for("attempt 1 submitted", lambda: run.advance() and run.attempt == 1, 180)
    figure("worker-sigkill-attempt0-reported", time.monotonic() - t0)
    assert run.app_id != first
    record = read_event_log(first)
    assert record is not None, "attempt 0 left no event log"
    st0 = record["status"]
    assert st0["app"]["final_status"] == "FAILED", st0["app"]
    tasks0 = {t["task"]: t for t in st0["tasks"]}
    assert tasks0["worker:0"]["state"] == "failed"
    assert "137" in tasks0["worker:0"]["exit_message"], tasks0["worker:0"]
    assert st0["failure"]["task"] == "worker:0"
    assert tasks0["ps:0"]["state"] == "killed"
    figure("worker-sigkill-attempt0-ps-process-gone", gone([ps], 120))

    # Attempt 1: the same fault, no retry left: the run fails naming the task.
    task_event(run, "worker:0", "train_start")
    # The client heartbeats into the retried attempt too: its tasks wait for it to read
    # a killed task's exit status.
    # (Each check reads the store again: the heartbeat may come after task_event's last read.)
    wait_for("a heartbeat in attempt 1", lambda: run.status() and run.source.events.heartbeat, 30)
    worker, ps = task_process(run, "worker:0"), task_process(run, "ps:0")
    t1 = time.monotonic()
    worker.send_signal(signal.SIGKILL)
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=180)
    figure("worker-sigkill-run-failed", time.monotonic() - t1)
    err = exc.value
    assert err.task == "worker:0"
    assert "in task worker:0" in str(err)
    assert "137" in err.traceback
    assert err.status is not None and err.status.attempt == 1 == run.attempt
    assert err.status.app.final_status == "FAILED"
    states = task_states(err.status)
    assert states["worker:0"] == "failed"
    assert states["ps:0"] == "killed"
    figure("worker-sigkill-ps-process-gone", gone([ps], 120))
    # The NodeManager then stops the remaining containers (the chief): bounded, not instant.
    t2 = time.monotonic()
    wait_for("no container process of the app left", lambda: not app_processes(run.app_id), 120)
    figure("worker-sigkill-all-processes-gone", time.monotonic() - t2)
    assert checkpoints(model_dir), "training's checkpoints were not kept"
    assert latest_step(model_dir) >= 0


# -- 3. a peer that never starts ------------------------------------------------------------
def test_peer_never_granted_fails_the_run_after_peer_timeout_naming_the_missing_task(
    sandbox, cancer, cancer_files, tmp_path, runs
):
    # Another run holds 5 GiB of the 8 GiB gpu partition: of two 2 GiB workers (which would
    # fit the partition, so the launch is accepted) at most one is ever granted.
    model_dir = str(tmp_path / "model")
    timeout_s = 30

    def hold():
        time.sleep(1800)

    blocker = submit(hold, {"chief": TaskSpec("5G", 1, label="gpu")}, queue="ml-gpu",
                     name=unique("tfyarn-fault-blocker"))  # fmt: skip
    runs.append(blocker)
    held = lambda: task_states(blocker.status())["chief:0"] == "running"  # noqa: E731
    wait_for("blocker running", held, RUN_TIMEOUT_S)

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=200)

    specs = {"chief": SMALL, "worker": TaskSpec("2G", 1, instances=2, label="gpu"), "ps": SMALL}
    run = submit(
        experiment_fn,
        specs,
        files=cancer_files,
        queue="ml-gpu",
        peer_timeout_s=timeout_s,
        name=unique("tfyarn-fault-nopeer"),
    )
    runs.append(run)
    t0 = time.monotonic()

    def chief_waiting() -> RunStatus | None:
        st = run.status()
        assert not st.ended, (st.app.state, task_states(st), st.app.diagnostics)
        return st if task_states(st)["chief:0"] == "running" else None

    waiting = wait_for("chief running", chief_waiting, RUN_TIMEOUT_S)
    assert any(p.startswith("worker: ") and "2048 MiB" in p for p in waiting.pending), waiting
    t1 = time.monotonic()
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=timeout_s + 240)
    figure("peer-never-granted-run-failed-after-chief-running", time.monotonic() - t1)
    figure("peer-never-granted-run-failed-after-submit", time.monotonic() - t0)
    blocker.cancel()
    err = exc.value
    assert err.status is not None and err.status.app.final_status == "FAILED"
    ev = run.source.events
    never = [t for t in ("chief:0", "worker:0", "worker:1", "ps:0") if "init" not in ev.task(t)]
    assert never and all(t.startswith("worker:") for t in never), never
    assert f"waited {timeout_s}s for its peers" in err.traceback
    was = "was" if len(never) == 1 else "were"
    assert f"{', '.join(never)} {was} never allocated: " in err.traceback
    # The cause, as the client saw it: the gpu partition of queue ml-gpu is taken.
    assert "2048 MiB/1 vcores in partition 'gpu': queue 'ml-gpu'" in err.traceback
    assert "TFYARN_PEER_TIMEOUT" in err.traceback  # says how to wait longer
    assert err.task in {"chief:0", "worker:0", "worker:1", "ps:0"} - set(never)


# -- 4. the evaluator crashes ---------------------------------------------------------------
def test_evaluator_crash_fails_the_run_naming_it_and_keeps_checkpoints_and_event_log(
    sandbox, cancer, cancer_files, tmp_path, runs, launch
):
    token = uuid.uuid4().hex[:12]
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        import tensorflow as tf

        exp = cancer.experiment(model_dir, max_steps=ENDLESS, save_checkpoints_steps=50)

        def broken_eval_input():
            raise RuntimeError(f"eval input broken {token}")

        return exp._replace(
            eval_spec=tf.estimator.EvalSpec(broken_eval_input, start_delay_secs=0, throttle_secs=1)
        )

    run = launch(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, "tfyarn-fault-evalcrash")
    task_event(run, "evaluator:0", "eval_start")
    t0 = time.monotonic()
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=RUN_TIMEOUT_S)
    figure("evaluator-crash-run-failed-after-eval-start", time.monotonic() - t0)
    err = exc.value
    assert err.task == "evaluator:0"
    assert f"RuntimeError: eval input broken {token}" in err.traceback
    assert "in broken_eval_input" in err.traceback
    assert err.status is not None
    states = task_states(err.status)
    assert states["evaluator:0"] == "failed"
    assert states["chief:0"] == "killed"
    # The chief's checkpoints stay.
    assert checkpoints(model_dir)
    assert latest_step(model_dir) >= 0
    # The event log keeps the traceback.
    record = read_event_log(run.app_id)
    assert record is not None
    assert record["status"]["failure"]["task"] == "evaluator:0"
    assert token in record["events"]["tasks"]["evaluator:0"]["stop"]["traceback"]


# -- 5. the application master killed --------------------------------------------------------
def test_application_master_killed_fails_the_run_and_no_container_keeps_running(
    sandbox, cancer, cancer_files, tmp_path, runs, launch
):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=ENDLESS, save_checkpoints_steps=100)

    run = launch(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, "tfyarn-fault-amkill")
    task_event(run, "chief:0", "train_start")
    procs = app_processes(run.app_id)
    masters = [
        p
        for p in procs
        if _container_id(p).endswith("_000001")
        and "com.anaconda.skein.ApplicationMaster" in p.cmdline()
    ]
    assert len(masters) == 1, [(p.pid, p.cmdline()) for p in procs]
    chief = task_process(run, "chief:0")
    assert chief in procs
    t0 = time.monotonic()
    masters[0].send_signal(signal.SIGKILL)
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=180)
    figure("am-sigkill-run-failed", time.monotonic() - t0)
    err = exc.value
    assert err.status is not None
    assert err.status.app.state == "FAILED" and err.status.app.final_status == "FAILED"
    assert "137" in err.traceback or "exitCode" in err.traceback, err.traceback
    assert set(task_states(err.status).values()) <= {"killed", "failed"}
    wait_for("no container process of the app left", lambda: not app_processes(run.app_id), 180)
    figure("am-sigkill-no-container-left", time.monotonic() - t0)


# -- 7. cancel ----------------------------------------------------------------------------
def test_cancel_ends_killed_keeps_checkpoints_and_logs_stay_readable(
    sandbox, cancer, cancer_files, tmp_path, runs, launch
):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=ENDLESS, save_checkpoints_steps=50)

    run = launch(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, "tfyarn-fault-cancel")
    task_event(run, "chief:0", "train_start")
    before = wait_for("two checkpoints written", lambda: len(checkpoints(model_dir)) >= 2 and
                      checkpoints(model_dir), RUN_TIMEOUT_S)  # fmt: skip
    t0 = time.monotonic()
    run.cancel()
    st = watch(run, timeout=120)
    figure("cancel-reported-killed", time.monotonic() - t0)
    assert st.app.state == "KILLED"
    summary = st.summary()
    assert summary is not None and summary["final_status"] == "KILLED"
    assert set(task_states(st).values()) == {"killed"}
    with pytest.raises(RunFailed, match="KILLED"):
        run.wait(timeout=10)
    # The newest checkpoint written before the cancel (or a later one) is there and usable.
    assert latest_step(model_dir) >= max(before), (before, checkpoints(model_dir))
    t1 = time.monotonic()
    logs = run.logs("chief:0")
    figure("cancel-aggregated-logs-readable", time.monotonic() - t1)
    assert logs.source == "aggregated"
    assert "chief:0 TF_CONFIG=" in logs.stderr
    assert "TF_CONFIG=" not in logs.stdout  # stdout and stderr were told apart
    ev_logs = run.logs("evaluator:0")
    assert ev_logs.source == "aggregated" and "evaluator:0 TF_CONFIG=" in ev_logs.stderr


# -- load and 8. the event log ---------------------------------------------------------------
def test_eight_task_topology_trains_to_completion_and_leaves_an_event_log_attach_reads(
    sandbox, cancer, cancer_files, tmp_path, runs
):
    model_dir = str(tmp_path / "model")
    max_steps = 200

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=max_steps, save_checkpoints_steps=100)

    # 8 containers + the master exceed one NodeManager's 8 vcores: workers go to the gpu node.
    specs = {
        "chief": SMALL,
        "worker": TaskSpec("512M", 1, instances=4, label=NodeLabel.GPU),
        "ps": TaskSpec("512M", 1, instances=2),
        "evaluator": SMALL,
    }
    run = submit(
        experiment_fn, specs, files=cancer_files, queue="ml-gpu", name=unique("tfyarn-load8")
    )
    runs.append(run)
    t0 = time.monotonic()
    st = watch(run)
    figure("load-8-tasks-succeeded-after-submit", time.monotonic() - t0)
    result = run.wait(timeout=60)
    assert result.final_status == "SUCCEEDED"
    names = [
        "chief:0", "worker:0", "worker:1", "worker:2", "worker:3", "ps:0", "ps:1", "evaluator:0",
    ]  # fmt: skip
    assert {t: d["state"] for t, d in result.tasks.items()} == dict.fromkeys(names, "succeeded")
    assert all(t.gpu for t in st.tasks if t.type == "worker")
    assert result.metrics["global_step"] >= max_steps

    # The event log: per-task states and times, tracebacks, metrics, on HDFS in the home.
    from tfyarn_jupyter.hadoop import filesystem

    path = event_log_path(run.app_id)
    assert path.startswith(f"{filesystem.home()}/")
    assert filesystem.exists(path)
    record = read_event_log(run.app_id)
    assert record is not None
    logged = {t["task"]: t for t in record["status"]["tasks"]}
    assert list(logged) == names
    for name in names:
        assert logged[name]["state"] == "succeeded"
        assert logged[name]["start_time"] > 0, logged[name]
        task_events = record["events"]["tasks"][name]
        assert task_events["stop"]["traceback"] == ""
        assert 0 < task_events["container"]["t"] <= task_events["start"]["t"]
        assert task_events["start"]["t"] <= task_events["stop"]["t"]
    assert record["status"]["metrics"][-1] == result.metrics
    assert record["status"]["app"]["final_status"] == "SUCCEEDED"

    # attach() on the finished run reads it back.
    again = attach(run.app_id)
    st2 = again.status()
    assert st2.ended and st2.succeeded
    assert task_states(st2) == dict.fromkeys(names, "succeeded")
    assert st2.metrics[-1] == result.metrics
    result2 = again.wait(timeout=30)
    assert again.result is result2
    assert result2.metrics == result.metrics and result2.final_status == "SUCCEEDED"


# -- load: the poller's cost does not grow with the number of tasks --------------------------
class CallCounter:
    """A proxy that counts the calls made through it (and through what ``connect`` returns)."""

    def __init__(self, target: Any, calls: list[str], prefix: str = "") -> None:
        self._target = target
        self._calls = calls
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name == "kv":
            return CallCounter(attr, self._calls, f"{self._prefix}kv.")
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(self._prefix + name)
            out = attr(*args, **kwargs)
            return CallCounter(out, self._calls, "am.") if name == "connect" else out

        return counted


def sleeping_app(name: str, workers: int, label: str) -> skein.ApplicationSpec:
    svc = {"resources": skein.Resources(memory=128, vcores=1), "script": "sleep 600",
           "node_label": label}  # fmt: skip
    return skein.ApplicationSpec(
        name=name,
        queue="ml-gpu",
        services={
            "chief": skein.Service(**svc),
            "worker": skein.Service(instances=workers, **svc),
        },
        max_attempts=1,
    )


def test_poll_costs_the_same_calls_for_48_sleeping_tasks_as_for_2(sandbox, skein_client, apps):
    sizes = {2: 1, 48: 47}  # tasks -> workers
    labels = {2: "", 48: "gpu"}  # each on its own node: 48 fill what they can of the gpu one
    ids = {n: apps.submit(sleeping_app(unique(f"tfyarn-poll{n}"), w, labels[n]))
           for n, w in sizes.items()}  # fmt: skip
    per_poll: dict[int, list[int]] = {}
    running: dict[int, int] = {}
    for n, app_id in ids.items():
        calls: list[str] = []
        specs = {"chief": TaskSpec(128, 1), "worker": TaskSpec(128, 1, instances=sizes[n])}
        source = StatusSource(cast(skein.Client, CallCounter(skein_client, calls)), app_id, specs)

        def placed(source: StatusSource = source) -> RunStatus | None:
            st = source.poll()
            assert not st.ended, st.app
            nodes = {t.node for t in st.tasks if t.node}
            return st if st.app.state == "RUNNING" and nodes else None

        wait_for(f"{app_id} has containers on a node", placed, 180)
        placed_nodes = {t.node for t in source.last.tasks if t.node} if source.last else set()
        wait_for("labels read", lambda s=source, p=placed_nodes: set(s._labels) >= p, 5)
        deltas = []
        for _ in range(5):
            before = len(calls)
            st = source.poll()
            deltas.append(len(calls) - before)
            time.sleep(0.5)
        per_poll[n] = deltas
        running[n] = sum(t.state == "allocated" for t in st.tasks)
        assert len(st.tasks) == n
        # The application master is connected to once, not once a poll.
        assert calls.count("connect") == 1, calls
        print(f"{n} tasks: {running[n]} allocated, calls per poll {deltas}, calls {calls[-3:]}")
        print(f"FIGURE case=poll-{n}-tasks calls_per_poll={max(deltas)} allocated={running[n]}")
    assert per_poll[48] == per_poll[2] == [CALLS_PER_POLL] * 5
    assert running[48] > running[2], running


# -- 2. a NodeManager stopped (last: the cluster is shared) ---------------------------------
@pytest.fixture
def gpu_nm_outage(sandbox) -> Iterator[Callable[[], Any]]:
    """``gpu_nm_outage()``: a context that stops the gpu NodeManager and always restarts it."""
    yield lambda: sandbox.daemon_stopped("nodemanager-gpu")
    # daemon_stopped restarts in its own finally; this checks the cluster came back.
    wait_for("sandbox ready again", lambda: sandbox.status()["ready"], 180)


def test_a_chief_lost_with_its_nodemanager_restarts_in_the_same_application_and_resumes(
    sandbox, skein_client, apps, cancer, cancer_files, tmp_path, runs, gpu_nm_outage
):
    """A node gone is not the task's failure (issue 25): the chief's container, lost with
    its NodeManager, is replaced inside the application once a node of its partition is
    back; the replacement resumes from the last checkpoint; the evaluator never stops."""
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=ENDLESS, save_checkpoints_steps=100)

    run = submit(
        experiment_fn,
        {"chief": GPU_SMALL, "evaluator": SMALL},
        files=cancer_files,
        queue="ml-gpu",
        name=unique("tfyarn-fault-nmstop"),
    )
    runs.append(run)
    task_event(run, "chief:0", "train_start")
    task_event(run, "evaluator:0", "container")
    chief = task_process(run, "chief:0")
    evaluator = task_process(run, "evaluator:0")
    assert {t.task: t.gpu for t in run.status().tasks} == {"chief:0": True, "evaluator:0": False}
    wait_for("a checkpoint to resume from", lambda: checkpoints(model_dir), RUN_TIMEOUT_S)

    def chief_step() -> int | None:
        run.advance()
        return (run.source.events.progress.get("chief:0") or {}).get("step")

    wait_for("the chief's step reported", chief_step, RUN_TIMEOUT_S)

    def chief_lost() -> dict[str, Any] | None:
        st = run.advance()
        assert not st.ended, (st.app.state, st.failure, st.app.diagnostics)
        app = skein_client.connect(run.app_id)
        lost = app.get_containers(services=["chief"], states=["FAILED"])
        return {"exit_message": lost[0].exit_message} if lost else None

    t0 = time.monotonic()
    with gpu_nm_outage():
        figure("nm-stop-sigterm-returned", time.monotonic() - t0)
        lost = wait_for("the chief's container reported lost", chief_lost, 180)
        figure("nm-stop-chief-lost", time.monotonic() - t0)
        t_restart = time.monotonic()
    print(f"the chief's container after the NM stop: {lost}")
    assert not alive(chief)

    def chief_resumed() -> dict[str, Any] | None:
        st = run.advance()
        assert not st.ended, (st.app.state, st.failure, st.app.diagnostics)
        records = run.source.events.restarts.get("chief:0", [])
        return records[-1] if records and "resumed_step" in records[-1] else None

    record = wait_for("the replacement chief resumed", chief_resumed, 300)
    figure("nm-restart-chief-resumed", time.monotonic() - t_restart)
    print(f"FIGURE restart {record}")
    assert record["cause"] == "node lost", record
    assert record["exit_status"] == -100, record
    assert record["resumed_step"] >= 100, record
    assert record["step"] > 0, "the step the lost chief had reached is kept"
    st = run.status()
    assert run.attempts == [run.app_id] and run.restarts == [], "no new application"
    chief_row = next(t for t in st.tasks if t.task == "chief:0")
    assert chief_row.restarts == 1 and chief_row.restart_cause == "node lost", chief_row
    assert alive(evaluator), "the evaluator was stopped"
    assert "evaluator:0" not in run.source.events.restarts
    run.cancel()

    # Recovered: both NodeManagers RUNNING with their labels, and the gpu one runs containers.
    box = sandbox.status()
    assert box["ready"] and all(d["alive"] for d in box["daemons"].values()), box
    nodes = sorted((_state(n.state), tuple(n.labels)) for n in skein_client.get_nodes())
    assert nodes == [("RUNNING", ()), ("RUNNING", ("gpu",))], nodes
    probe = skein.ApplicationSpec(
        name=unique("tfyarn-nm-probe"),
        queue="ml-gpu",
        services={
            "probe": skein.Service(
                resources=skein.Resources(128, 1), script="true", node_label="gpu"
            )
        },
        max_attempts=1,
    )
    report = apps.wait(apps.submit(probe), timeout=180)
    assert _state(report.final_status) == "SUCCEEDED", report.diagnostics


def _state(value: Any) -> str:
    return str(getattr(value, "name", value))
