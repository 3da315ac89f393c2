"""Each task's progress as the panel gets it: the loss history kept across polls, resources."""

from __future__ import annotations

import itertools

from tfyarn_jupyter.core.history import HISTORY_POINTS, Series, add_point, progress_view
from tfyarn_jupyter.core.spec import TaskSpec

SPECS = {"chief": TaskSpec(2048, 1), "evaluator": TaskSpec(1024, 1)}


def test_points_grow_skip_a_repeated_step_and_ignore_a_missing_loss():
    pts: list[list[float]] = []
    add_point(pts, 10, 0.9)
    add_point(pts, 10, 0.8)  # the same report read by the next poll
    add_point(pts, 20, None)
    add_point(pts, None, 0.5)
    add_point(pts, 30, 0.7)
    assert pts == [[10, 0.9], [30, 0.7]]


def test_a_step_back_drops_the_points_after_it():
    pts = [[10, 0.9], [20, 0.8], [30, 0.7]]
    add_point(pts, 15, 0.85)  # restarted from the checkpoint at step 15
    assert pts == [[10, 0.9], [15, 0.85]]


def test_a_full_history_is_halved_and_keeps_its_first_and_latest_points():
    series = Series()
    pts = series.points
    for step in range(1, 5001):
        series.add(step, 1.0 / step, limit=HISTORY_POINTS)
        assert len(pts) <= HISTORY_POINTS
        assert pts[-1][0] == step  # the curve always ends at the latest step
    assert pts[0] == [1, 1.0]
    assert pts[-1] == [5000, 1.0 / 5000]
    steps = [p[0] for p in pts]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert len(pts) > HISTORY_POINTS // 2  # halved, not emptied
    gaps = {b - a for a, b in itertools.pairwise(steps)}
    assert series.stride == 16 and max(gaps) <= 2 * series.stride, gaps
    early = sum(1 for s in steps if s <= 2500)
    assert 0.6 < early / (len(steps) - early) < 1.6  # spread over the run, not the recent end


def test_progress_view_fills_every_key_the_panel_reads_and_defaults_the_memory_limit():
    reported = {
        "chief:0": {"step": 40, "max_steps": 100, "steps_per_s": 2.5, "loss": 0.3,
                    "t": 5.0, "rss_bytes": 300 << 20, "cpu_percent": 80.0, "accuracy": 0.9},
        "evaluator:0": {"t": 6.0, "rss_bytes": 200 << 20, "memory_limit_bytes": 512 << 20},
    }  # fmt: skip
    view = progress_view(reported, {"chief:0": [[20, 0.5], [40, 0.3]]}, SPECS)
    chief, evaluator = view["chief:0"], view["evaluator:0"]
    assert chief["history"] == [[20, 0.5], [40, 0.3]]
    assert chief["max_steps"] == 100 and chief["accuracy"] == 0.9
    assert chief["memory_limit_bytes"] == 2048 << 20  # no cgroup limit read: YARN's request
    assert evaluator["memory_limit_bytes"] == 512 << 20  # the container's own wins
    assert evaluator["step"] is None and evaluator["loss"] is None
    assert evaluator["cpu_percent"] is None and evaluator["history"] == []
    assert "gpu" not in evaluator  # only where nvidia-smi reported
