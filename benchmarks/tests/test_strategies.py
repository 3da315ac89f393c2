"""The per-strategy section's arithmetic, without a cluster."""

from __future__ import annotations

import pytest

from benchmarks.strategies import TOPOLOGIES, mean_step_ms


def test_the_mean_step_leaves_out_the_first_which_traces():
    side = {"first_step_s": 0.9, "steps_s": 3.99, "steps": 134}
    assert mean_step_ms(side) == pytest.approx(30.0)


def test_one_counted_step_is_its_own_mean_rather_than_a_division_by_zero():
    assert mean_step_ms({"steps_s": 0.05, "steps": 1}) == pytest.approx(50.0)


def test_each_topology_names_the_tasks_its_strategy_needs():
    assert [sorted(specs) for specs in TOPOLOGIES.values()] == [
        ["chief"],
        ["chief", "worker"],
        ["chief", "ps", "worker"],
    ]
