"""State derivation (tfyarn_jupyter.core.state): pure, from fabricated reports and events."""

from __future__ import annotations

import pytest

from tfyarn_jupyter.core.spec import NodeLabel, TaskSpec
from tfyarn_jupyter.core.state import (
    AppInfo,
    ContainerInfo,
    Failure,
    RunStatus,
    changes,
    derive,
    first_failure,
    is_secret,
    pending_reasons,
    redact_env,
)
from tfyarn_jupyter.protocol import events

CHIEF_EVAL = {"chief": TaskSpec(1024, 1), "evaluator": TaskSpec(1024, 1)}
NODE_CPU = "cpu-node:8042"
NODE_GPU = "gpu-node:8042"
LABELS = {NODE_CPU: [], NODE_GPU: ["gpu"]}


def app(state: str = "RUNNING", final: str = "UNDEFINED", **kw) -> AppInfo:
    kw.setdefault("queue", "default")
    return AppInfo(app_id="application_1_0001", state=state, final_status=final, **kw)


def container(task: str, state: str, start: float = 1000.0, node: str = NODE_CPU, **kw):
    return ContainerInfo(
        task=task,
        state=state,
        container_id=f"container_{task.replace(':', '_')}_{int(start)}",
        node_http=node,
        start_time=start,
        **kw,
    )


def evs(**by_key) -> events.Events:
    """``evs(**{"task/chief:0/container": {...}})``: a store snapshot, parsed."""
    kv = {}
    for key, payload in by_key.items():
        payload = dict(payload)
        t = payload.pop("t", 100.0)
        kv[key] = events.encode(payload, t=t)
    return events.parse(kv)


def state_of(st, task: str) -> str:
    return next(t.state for t in st.tasks if t.task == task)


# -- requested / allocated / running ------------------------------------------------
@pytest.mark.parametrize("skein_state", ["WAITING", "REQUESTED"])
def test_task_without_a_yarn_container_yet_is_requested(skein_state):
    st = derive(app(), CHIEF_EVAL, [container("chief:0", skein_state)], evs(), LABELS)
    assert state_of(st, "chief:0") == "requested"


def test_task_absent_from_the_container_list_is_requested():
    st = derive(app(), CHIEF_EVAL, [container("chief:0", "RUNNING")], evs(), LABELS)
    assert state_of(st, "evaluator:0") == "requested"
    assert [t.task for t in st.tasks] == ["chief:0", "evaluator:0"]


def test_running_container_without_container_event_is_allocated():
    st = derive(app(), CHIEF_EVAL, [container("chief:0", "RUNNING")], evs(), LABELS)
    assert state_of(st, "chief:0") == "allocated"


def test_running_container_with_container_event_is_running():
    st = derive(
        app(),
        CHIEF_EVAL,
        [container("chief:0", "RUNNING")],
        evs(**{"task/chief:0/container": {"host": "h", "attempt": 0}}),
        LABELS,
    )
    assert state_of(st, "chief:0") == "running"
    # The event of one task does not promote another.
    st = derive(
        app(),
        CHIEF_EVAL,
        [container("chief:0", "RUNNING"), container("evaluator:0", "RUNNING")],
        evs(**{"task/chief:0/container": {"host": "h"}}),
        LABELS,
    )
    assert state_of(st, "evaluator:0") == "allocated"


# -- ended applications ----------------------------------------------------------------
def test_succeeded_app_with_clean_stop_events_marks_tasks_succeeded():
    # The last view of the containers may still say RUNNING: the stop events win.
    ev = evs(
        **{
            "task/chief:0/stop": {"traceback": "", "exit_code": 0},
            "task/evaluator:0/stop": {"traceback": "", "exit_code": 0},
        }
    )
    st = derive(
        app("FINISHED", "SUCCEEDED"),
        CHIEF_EVAL,
        [container("chief:0", "RUNNING"), container("evaluator:0", "RUNNING")],
        ev,
        LABELS,
    )
    assert [t.state for t in st.tasks] == ["succeeded", "succeeded"]
    assert st.ended and st.succeeded
    assert st.failure is None


def test_succeeded_container_state_is_succeeded():
    st = derive(app(), CHIEF_EVAL, [container("chief:0", "SUCCEEDED")], evs(), LABELS)
    assert state_of(st, "chief:0") == "succeeded"


def test_killed_app_marks_unfinished_tasks_killed():
    st = derive(
        app("KILLED", "KILLED"),
        CHIEF_EVAL,
        [container("chief:0", "RUNNING")],
        evs(**{"task/chief:0/container": {}}),
        LABELS,
    )
    assert state_of(st, "chief:0") == "killed"
    assert state_of(st, "evaluator:0") == "killed"  # never got a container
    assert not st.succeeded
    assert st.pending == []


def test_killed_container_is_killed():
    st = derive(app(), CHIEF_EVAL, [container("chief:0", "KILLED")], evs(), LABELS)
    assert state_of(st, "chief:0") == "killed"


def test_failed_task_carries_its_traceback():
    tb = "Traceback (most recent call last):\n  ...\nRuntimeError: boom\n"
    st = derive(
        app("FINISHED", "FAILED"),
        CHIEF_EVAL,
        [container("chief:0", "FAILED"), container("evaluator:0", "KILLED")],
        evs(**{"task/chief:0/stop": {"traceback": tb, "exit_code": 1}}),
        LABELS,
    )
    assert state_of(st, "chief:0") == "failed"
    assert st.failure == Failure("chief:0", tb)
    assert not st.succeeded


def test_stop_with_traceback_is_failed_even_when_container_succeeded():
    tb = "Traceback ...\nValueError: bad input\n"
    ev = evs(**{"task/evaluator:0/stop": {"traceback": tb}})
    st = derive(
        app(),
        CHIEF_EVAL,
        [container("chief:0", "RUNNING"), container("evaluator:0", "SUCCEEDED")],
        ev,
        LABELS,
    )
    assert state_of(st, "evaluator:0") == "failed"
    # ... and under a SUCCEEDED application too.
    st = derive(app("FINISHED", "SUCCEEDED"), CHIEF_EVAL, [], ev, LABELS)
    assert state_of(st, "evaluator:0") == "failed"


# -- restarts, nodes ---------------------------------------------------------------------
def test_latest_container_of_a_restarted_task_wins():
    old = container("chief:0", "FAILED", start=1000.0, exit_message="oom")
    new = container("chief:0", "RUNNING", start=5000.0)
    ev = evs(**{"task/chief:0/container": {}})
    for order in ([old, new], [new, old]):
        st = derive(app(), CHIEF_EVAL, order, ev, LABELS)
        chief = st.tasks[0]
        assert chief.state == "running"
        assert chief.container_id == new.container_id
        assert chief.start_time == 5000.0
        assert chief.exit_message == ""


def test_gpu_flag_comes_from_the_node_labels():
    st = derive(
        app(queue="ml-gpu"),
        {"chief": TaskSpec(1024, 1, label=NodeLabel.GPU), "evaluator": TaskSpec(1024, 1)},
        [
            container("chief:0", "RUNNING", node=NODE_GPU),
            container("evaluator:0", "RUNNING", node=NODE_CPU),
        ],
        evs(),
        LABELS,
    )
    chief, evaluator = st.tasks
    assert (chief.gpu, chief.node) == (True, NODE_GPU)
    assert (evaluator.gpu, evaluator.node) == (False, NODE_CPU)
    # A node not (yet) in the label map is not a gpu node.
    st = derive(app(), CHIEF_EVAL, [container("chief:0", "RUNNING", node="x:1")], evs(), LABELS)
    assert st.tasks[0].gpu is False


# -- pending -----------------------------------------------------------------------------
@pytest.mark.parametrize("state", ["NEW", "SUBMITTED", "ACCEPTED"])
def test_pending_before_the_master_runs_names_the_queue(state):
    st = derive(app(state, queue="ml-gpu"), CHIEF_EVAL, [], evs(), LABELS)
    assert len(st.pending) == 1
    assert state.lower() in st.pending[0]
    assert "ml-gpu" in st.pending[0]


def test_pending_counts_allocated_instances_and_names_the_label():
    specs = {
        "chief": TaskSpec(2048, 2, label=NodeLabel.GPU),
        "worker": TaskSpec(1024, 1, instances=3),
        "ps": TaskSpec(512, 1),
    }
    st = derive(
        app(queue="ml-gpu"),
        specs,
        [
            container("chief:0", "REQUESTED"),
            container("worker:0", "RUNNING"),
            container("worker:1", "REQUESTED"),
            container("ps:0", "RUNNING"),
        ],
        evs(),
        LABELS,
    )
    assert st.pending == [
        "chief: 0 of 1 allocated; waiting for free 'gpu' capacity on queue ml-gpu "
        "(2048 MiB, 2 vcores each)",
        "worker: 1 of 3 allocated; waiting for free capacity on queue ml-gpu "
        "(1024 MiB, 1 vcores each)",
    ]


def test_nothing_pending_when_all_allocated_or_ended():
    cs = [container("chief:0", "RUNNING"), container("evaluator:0", "RUNNING")]
    assert derive(app(), CHIEF_EVAL, cs, evs(), LABELS).pending == []
    assert pending_reasons(app("FAILED", "FAILED"), CHIEF_EVAL, []) == []


# -- first failure -----------------------------------------------------------------------
def test_first_failure_is_the_earliest_stop_with_a_traceback():
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2), "ps": TaskSpec(1024, 1)}
    ev = evs(
        **{
            "task/chief:0/stop": {"traceback": "chief failed second", "t": 20.0},
            "task/worker:1/stop": {"traceback": "worker:1 failed first", "t": 10.0},
            "task/worker:0/stop": {"traceback": "", "t": 5.0},  # a clean stop is no failure
        }
    )
    st = derive(app("FINISHED", "FAILED"), specs, [], ev, LABELS)
    assert st.failure == Failure("worker:1", "worker:1 failed first")


def test_failed_container_without_stop_event_uses_finish_time_and_exit_message():
    # worker:0's container died (no stop event) at t=8 s, before chief's traceback at 9 s.
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1), "ps": TaskSpec(1024, 1)}
    dead = container(
        "worker:0", "FAILED", exit_message="Container killed: memory", finish_time=8000.0
    )
    ev = evs(**{"task/chief:0/stop": {"traceback": "peer went away", "t": 9.0}})
    st = derive(app(), specs, [dead, container("chief:0", "SUCCEEDED")], ev, LABELS)
    assert st.failure == Failure("worker:0", "Container killed: memory")


def test_failed_app_without_task_failure_reports_diagnostics():
    a = app("FAILED", "FAILED", diagnostics="AM container exited with code 1")
    assert first_failure([], evs(), a) == Failure("", "AM container exited with code 1")
    assert first_failure([], evs(), app("FINISHED", "SUCCEEDED")) is None


# -- summary -----------------------------------------------------------------------------
def test_summary_only_once_ended():
    assert derive(app(), CHIEF_EVAL, [], evs(), LABELS).summary() is None


def test_summary_of_a_finished_run_says_each_tasks_state_duration_node_and_gpus():
    ev = evs(
        **{
            "task/chief:0/stop": {"traceback": ""},
            "task/evaluator:0/stop": {"traceback": ""},
            "metrics/000000000100": {"step": 100, "accuracy": 0.8},
            "metrics/000000000200": {"step": 200, "accuracy": 0.9},
        }
    )
    cs = [
        container("chief:0", "SUCCEEDED", start=1000.0, node=NODE_GPU, finish_time=31000.0),
        container("evaluator:0", "SUCCEEDED", start=2000.0, finish_time=12500.0),
    ]
    st = derive(
        app("FINISHED", "SUCCEEDED", start_time=0.5e3, finish_time=40.5e3),
        {"chief": TaskSpec(1024, 1, label="gpu", gpus=1), "evaluator": TaskSpec(1024, 1)},
        cs,
        ev,
        LABELS,
    )
    assert st.summary() == {
        "final_status": "SUCCEEDED",
        "duration_s": 40.0,
        "tasks": {
            "chief:0": {"state": "succeeded", "duration_s": 30.0, "node": NODE_GPU, "gpus": 1},
            "evaluator:0": {"state": "succeeded", "duration_s": 10.5, "node": NODE_CPU, "gpus": 0},
        },
        "metrics": {"step": 200, "accuracy": 0.9, "t": 100.0},
    }
    assert [m["step"] for m in st.metrics] == [100, 200]
    assert st.to_dict()["summary"] == st.summary()


def test_summary_of_a_killed_run_says_killed():
    st = derive(app("KILLED", "KILLED"), CHIEF_EVAL, [], evs(), LABELS)
    assert st.summary()["final_status"] == "KILLED"
    # YARN may report KILLED/FAILED or KILLED/UNDEFINED; the panel says KILLED.
    st = derive(app("KILLED", "UNDEFINED"), CHIEF_EVAL, [], evs(), LABELS)
    assert st.summary()["final_status"] == "KILLED"


# -- secrets -----------------------------------------------------------------------------
def test_redact_env_masks_secret_looking_names():
    env = {
        "AWS_SECRET_ACCESS_KEY": "abc",
        "GITHUB_TOKEN": "t0k",
        "db_password": "hunter2",
        "API_KEY": "k",
        "HADOOP_CONF_DIR": "/etc/hadoop/conf",
        "PATH": "/usr/bin",
    }
    assert redact_env(env) == {
        "AWS_SECRET_ACCESS_KEY": "***",
        "GITHUB_TOKEN": "***",
        "db_password": "***",
        "API_KEY": "***",
        "HADOOP_CONF_DIR": "/etc/hadoop/conf",
        "PATH": "/usr/bin",
    }
    assert env["GITHUB_TOKEN"] == "t0k"  # the input is not changed
    assert is_secret("HOME") is False
    assert is_secret("HADOOP_USER_NAME") is False


def test_changes_name_the_new_states_evaluations_and_the_end_once():
    from tfyarn_jupyter.core.state import Failure, RunStatus, TaskState, changes

    def snap(state, final, task_state, metrics, failure=None):
        a = AppInfo("application_1_0001", state=state, final_status=final,
                    tracking_url="http://rm/proxy/x")  # fmt: skip
        return RunStatus(a, [TaskState("chief:0", "chief", 0, task_state, "n1:8042")], [],
                         metrics, failure)  # fmt: skip

    running = snap("RUNNING", "UNDEFINED", "running", [])
    assert changes(None, running) == [
        "application_1_0001 RUNNING: http://rm/proxy/x",
        "application_1_0001 chief:0 running on n1:8042",
    ]
    evaluated = snap("RUNNING", "UNDEFINED", "running", [{"step": 100, "loss": 0.25}])
    assert changes(running, evaluated) == ["application_1_0001 evaluation at step 100: loss=0.25"]
    assert changes(evaluated, evaluated) == []
    failed = snap("FINISHED", "FAILED", "failed", evaluated.metrics, Failure("chief:0", "tb"))
    assert changes(evaluated, failed)[-1] == "application_1_0001 ended FAILED (chief:0 failed)"
    assert changes(failed, failed) == []


# -- timeline and durations -------------------------------------------------------------------
def test_each_task_has_its_timeline_from_yarn_and_its_own_events():
    a = app(start_time=900_000.0)
    cs = [container("chief:0", "RUNNING", start=1_000_000.0)]
    st = derive(a, CHIEF_EVAL, cs, evs(**{"task/chief:0/container": {"t": 1_004.5}}), LABELS)
    chief, evaluator = st.tasks
    assert (chief.requested_time, chief.allocated_time) == (900_000.0, 1_000_000.0)
    assert (chief.running_time, chief.end_time) == (1_004_500.0, 0.0)
    assert chief.duration_s == 0.0  # still running: no end yet
    assert (chief.memory_mb, chief.vcores) == (1024, 1)
    assert (evaluator.requested_time, evaluator.allocated_time, evaluator.end_time) == (
        900_000.0, 0.0, 0.0)  # fmt: skip


def test_durations_come_from_the_stop_events_once_the_master_is_gone():
    """The issue's case: after the application master shut down, skein's finish times are 0,
    but each task's own stop event says when it ended; the evaluator's included."""
    a = app("FINISHED", "SUCCEEDED", start_time=900_000.0, finish_time=1_060_000.0)
    cs = [container("chief:0", "RUNNING", start=1_000_000.0),
          container("evaluator:0", "RUNNING", start=1_001_000.0)]  # fmt: skip
    ev = evs(**{
        "task/chief:0/container": {"t": 1_002.0}, "task/chief:0/stop": {"t": 1_042.5},
        "task/evaluator:0/container": {"t": 1_003.0},
        "task/evaluator:0/stop": {"t": 1_050.0},
    })  # fmt: skip
    st = derive(a, CHIEF_EVAL, cs, ev, LABELS)
    assert [(t.state, t.end_time, t.duration_s) for t in st.tasks] == [
        ("succeeded", 1_042_500.0, 42.5),
        ("succeeded", 1_050_000.0, 49.0),
    ]
    summary = st.summary()
    assert summary is not None
    assert {t: d["duration_s"] for t, d in summary["tasks"].items()} == {
        "chief:0": 42.5, "evaluator:0": 49.0}  # fmt: skip
    assert [t["duration_s"] for t in st.to_dict()["tasks"]] == [42.5, 49.0]


def test_yarns_finish_time_wins_and_a_task_killed_with_its_run_ends_with_it():
    a = app("KILLED", "KILLED", start_time=900_000.0, finish_time=1_070_000.0)
    cs = [container("chief:0", "KILLED", start=1_000_000.0, finish_time=1_030_000.0),
          container("evaluator:0", "RUNNING", start=1_001_000.0)]  # fmt: skip
    ev = evs(**{"task/chief:0/stop": {"t": 1_020.0}})
    st = derive(a, CHIEF_EVAL, cs, ev, LABELS)
    assert [(t.end_time, t.duration_s) for t in st.tasks] == [
        (1_030_000.0, 30.0),  # YARN's finish time, not the earlier stop event
        (1_070_000.0, 69.0),  # no end of its own: the run's end
    ]


def test_a_saved_status_round_trips_with_its_timeline_and_derived_durations():
    a = app("FINISHED", "SUCCEEDED", start_time=900_000.0, finish_time=1_060_000.0)
    ev = evs(**{"task/chief:0/container": {"t": 1_000.0}, "task/chief:0/stop": {"t": 1_030.0}})
    st = derive(a, CHIEF_EVAL, [], ev, LABELS)
    d = st.to_dict()
    assert d["tasks"][0]["duration_s"] == 30.0  # begins at its process's start
    back = RunStatus.from_dict(d)
    assert back.tasks == st.tasks and back.to_dict() == d
    old = {**d, "tasks": [{"task": "chief:0", "type": "chief", "index": 0}]}  # an older log
    assert RunStatus.from_dict(old).tasks[0].duration_s == 0.0


# -- what waits, and why ----------------------------------------------------------------------
def test_capacity_is_shown_only_while_tasks_wait():
    why = "chief:0 waiting for 1024 MiB/1 vcores in the unlabelled partition: queue 'q' is full"
    waiting = derive(app(), CHIEF_EVAL, [], evs(), LABELS, capacity=why)
    assert waiting.capacity == {"message": why}
    assert waiting.to_dict()["capacity"] == {"message": why}
    cs = [container("chief:0", "RUNNING"), container("evaluator:0", "RUNNING")]
    placed = derive(app(), CHIEF_EVAL, cs, evs(), LABELS, capacity=why)
    assert placed.capacity is None and "capacity" not in placed.to_dict()
    ended = derive(app("KILLED", "KILLED"), CHIEF_EVAL, [], evs(), LABELS, capacity=why)
    assert ended.capacity is None


def test_changes_say_once_why_tasks_wait():
    why = "worker:1 waiting for 2048 MiB/1 vcores in partition 'gpu': queue 'ml-gpu' is full"
    first = derive(app(), CHIEF_EVAL, [], evs(), LABELS, capacity=why)
    assert f"application_1_0001 waiting: {why}" in changes(None, first)
    again = derive(app(), CHIEF_EVAL, [], evs(), LABELS, capacity=why)
    assert not [line for line in changes(first, again) if "waiting" in line]


def test_progress_carries_the_history_kept_across_polls():
    ev = evs(**{"progress/chief:0": {"step": 30, "loss": 0.4, "steps_per_s": 5.0}})
    st = derive(app(), CHIEF_EVAL, [], ev, LABELS, history={"chief:0": [[10, 0.6], [30, 0.4]]})
    chief = st.to_dict()["progress"]["chief:0"]
    assert chief["history"] == [[10, 0.6], [30, 0.4]]
    assert chief["step"] == 30 and chief["max_steps"] is None
    assert chief["memory_limit_bytes"] == 1024 << 20


# -- restarts inside the application (issue 25) ---------------------------------------------
WORKERS = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, instances=2)}
PREEMPTED = "Container preempted by scheduler"


def restarted_worker(**records) -> RunStatus:
    """worker:1 lost to preemption at 9 s and running again from 12 s; ``records`` its
    ``restarts/worker:1/<n>`` payloads by ``n``."""
    lost = container("worker:1", "FAILED", start=1000.0, finish_time=9000.0,
                     exit_message=PREEMPTED, instance=1)  # fmt: skip
    new = container("worker:1", "RUNNING", start=12_000.0, instance=3)
    ev = evs(**{events.restart_key("worker:1", int(n[1:])): r for n, r in records.items()})
    return derive(app(), WORKERS, [new, lost, container("chief:0", "RUNNING")], ev, LABELS)


def worker(st: RunStatus, task: str = "worker:1"):
    return next(t for t in st.tasks if t.task == task)


def test_a_restarted_task_has_its_attempt_cause_and_steps_lost_from_its_record():
    st = restarted_worker(n1={"cause": "preempted", "exit_status": -102, "step": 1200,
                              "resumed_step": 1000, "t": 10.0})  # fmt: skip
    w = worker(st)
    assert (w.state, w.container_id, w.start_time) == (
        "allocated",
        "container_worker_1_12000",
        12e3,
    )
    assert (w.restarts, w.restart_cause, w.steps_lost) == (1, "preempted", 200)
    (r,) = w.restart_log
    assert (
        r["n"] == 1 and r["exit_status"] == -102 and (r["step"], r["resumed_step"]) == (1200, 1000)
    )
    assert (r["lost_start"], r["lost_at"], r["restarted_at"]) == (1000.0, 9000.0, 12_000.0)
    never = worker(st, "worker:0")
    assert (never.restarts, never.restart_cause, never.steps_lost, never.restart_log) == (
        0, "", None, [])  # fmt: skip


def test_without_a_record_the_lost_container_says_why_and_the_steps_lost_are_unknown():
    w = worker(restarted_worker())  # an evaluator restarted by skein's master, say
    assert (w.restarts, w.restart_cause, w.steps_lost) == (1, "preempted", None)
    assert w.restart_log[0]["step"] is None


def test_a_record_not_resumed_yet_says_its_cause_and_no_steps_lost():
    w = worker(restarted_worker(n1={"cause": "peer restarted", "step": 500}))
    assert (w.restarts, w.restart_cause, w.steps_lost) == (1, "peer restarted", None)


def test_steps_lost_add_up_over_the_restarts_and_the_latest_cause_is_shown():
    st = restarted_worker(n1={"cause": "preempted", "step": 300, "resumed_step": 200},
                          n2={"cause": "node lost", "step": 900, "resumed_step": 850})  # fmt: skip
    w = worker(st)  # the second restart's container is not listed yet: its record counts
    assert (w.restarts, w.restart_cause, w.steps_lost) == (2, "node lost", 150)
    assert [r["n"] for r in w.restart_log] == [1, 2]


def test_a_replacement_not_placed_yet_is_the_tasks_latest_container():
    lost = container("worker:1", "FAILED", start=1000.0, finish_time=9000.0,
                     exit_message="Container released on a *lost* node", instance=1)  # fmt: skip
    waiting = ContainerInfo("worker:1", "REQUESTED", instance=3)
    st = derive(app(), WORKERS, [waiting, lost], events.Events(), LABELS)
    w = worker(st)
    assert (w.state, w.restarts, w.restart_cause) == ("requested", 1, "node lost")
    assert w.restart_log[0]["restarted_at"] == 0.0


def test_restarts_round_trip_through_a_saved_status():
    st = restarted_worker(n1={"cause": "preempted", "step": 1200, "resumed_step": 1000})
    d = st.to_dict()
    assert d["tasks"][2]["restarts"] == 1 and d["tasks"][2]["steps_lost"] == 200
    back = RunStatus.from_dict(d)
    assert back.tasks == st.tasks and back.to_dict() == d
    old = {**d, "tasks": [{"task": "worker:1", "type": "worker", "index": 1}]}  # an older log
    assert RunStatus.from_dict(old).tasks[0].restarts == 0
