"""A task's timeline (tfyarn_jupyter.core.timeline): its phases from its events, in order."""

from __future__ import annotations

from tfyarn_jupyter.core.timeline import PHASES, seconds_from_start, task_phases


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
