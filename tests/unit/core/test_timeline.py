"""A task's timeline (tfyarn_jupyter.core.timeline): its phases from its events, in order."""

from __future__ import annotations

from tfyarn_jupyter.core.timeline import (
    PHASES,
    containers_by_task,
    restart_fields,
    restarts,
    seconds_from_start,
    task_phases,
)


def test_phases_come_in_their_order_in_ms_with_training_start_from_its_own_event():
    ev = {
        "phases": {"first_step": 110.0, "interpreter": 100.5, "tensorflow": 103.0,
                   "cluster": 104.0, "bogus": "x"},
        "train_start": {"t": 108.0},
    }  # fmt: skip
    got = task_phases(ev)
    assert list(got) == ["interpreter", "cluster", "tensorflow", "train_start", "first_step"]
    assert got["interpreter"] == 100_500.0 and got["first_step"] == 110_000.0
    assert set(got) <= set(PHASES)


def test_a_task_that_reported_nothing_has_no_phases():
    assert task_phases({}) == {} and task_phases({"phases": None}) == {}


def test_seconds_from_the_containers_start_leave_out_what_came_before_it():
    phases = {"interpreter": 101_000.0, "tensorflow": 104_250.0, "first_step": 99_000.0}
    assert seconds_from_start(phases, 100_000.0) == {"interpreter": 1.0, "tensorflow": 4.25}
    assert seconds_from_start(phases, 0.0) == {}


# -- restarts inside the application --------------------------------------------------------
def c(state: str, start: float, end: float = 0.0, instance: int = 0, msg: str = ""):
    from tfyarn_jupyter.core.state import ContainerInfo

    return ContainerInfo("worker:1", state, f"c{instance}", "n:8042", start, end, msg, instance)


def test_restarts_follow_skeins_instances_and_fill_what_records_leave_out():
    containers = [
        c("RUNNING", 30_000.0, instance=5),
        c("FAILED", 1000.0, 9000.0, 1, "Container preempted by scheduler"),
        c("KILLED", 12_000.0, 20_000.0, 3, "Container released on a *lost* node"),
    ]
    records = [{"n": 2, "cause": "node lost", "step": 900, "resumed_step": 800, "t": 21.0}]
    got = restarts(containers, records)
    assert [(r["n"], r["cause"], r["steps_lost"]) for r in got] == [
        (1, "preempted", None), (2, "node lost", 100)]  # fmt: skip
    assert [(r["lost_start"], r["lost_at"], r["restarted_at"]) for r in got] == [
        (1000.0, 9000.0, 12_000.0), (12_000.0, 20_000.0, 30_000.0)]  # fmt: skip
    fields = restart_fields(containers, records)
    assert (fields["restarts"], fields["restart_cause"], fields["steps_lost"]) == (
        2,
        "node lost",
        100,
    )


def test_a_record_ahead_of_the_container_list_still_counts_with_its_own_time():
    got = restarts([c("RUNNING", 1000.0)], [{"n": 1, "cause": "failed", "step": 5, "t": 8.0}])
    assert got[0]["lost_at"] == 8000.0 and got[0]["restarted_at"] == 0.0
    assert got[0]["steps_lost"] is None


def test_a_task_never_restarted_has_none():
    assert restart_fields([c("RUNNING", 1000.0)], []) == {
        "restarts": 0, "restart_cause": "", "steps_lost": None, "restart_log": []}  # fmt: skip
    assert restarts([], []) == []


def test_a_replacement_not_placed_yet_sorts_last_among_the_same_instances():
    waiting, lost = c("REQUESTED", 0.0), c("FAILED", 1000.0, 2000.0)
    assert containers_by_task([waiting, lost])["worker:1"] == [lost, waiting]
