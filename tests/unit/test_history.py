"""Each task's progress as the panel gets it: the loss history kept across polls, resources."""

from __future__ import annotations

import itertools

from tfyarn_jupyter.history import (
    HISTORY_POINTS,
    History,
    Series,
    add_point,
    apply_delta,
    delta,
    progress_view,
    split_histories,
)
from tfyarn_jupyter.spec import TaskSpec

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


def test_history_observes_polls_and_is_seeded_from_a_saved_status():
    h = History(limit=4)
    for step, loss in ((1, 0.9), (1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5)):
        h.observe({"chief:0": {"step": step, "loss": loss}, "ps:0": {"rss_bytes": 1}})
    assert h.points["chief:0"][-1] == [5, 0.5] and len(h.points["chief:0"]) <= 4
    assert h.points["ps:0"] == []
    seeded = History()
    seeded.seed({"chief:0": {"history": [[1, 0.9], [5, 0.5]]}, "ps:0": {}})
    assert seeded.points == {"chief:0": [[1, 0.9], [5, 0.5]], "ps:0": []}


def test_delta_sends_the_new_points_a_replaced_last_point_and_whole_series_when_halved():
    old = {"chief:0": [[1, 0.9], [2, 0.8]], "worker:0": [[1, 1.0]]}
    assert delta(old, old) == {}
    grown = {**old, "chief:0": [[1, 0.9], [2, 0.8], [3, 0.7]]}
    assert delta(old, grown) == {"chief:0": {"from": 2, "points": [[3, 0.7]]}}
    replaced = {**old, "chief:0": [[1, 0.9], [4, 0.6]]}
    assert delta(old, replaced) == {"chief:0": {"from": 1, "points": [[4, 0.6]]}}
    halved = {**old, "chief:0": [[2, 0.8], [4, 0.6]]}
    assert delta(old, halved) == {"chief:0": {"from": 0, "points": [[2, 0.8], [4, 0.6]]}}
    new_task = {**old, "worker:1": [[1, 2.0]]}
    assert delta(old, new_task) == {"worker:1": {"from": 0, "points": [[1, 2.0]]}}
    assert delta(old, {"chief:0": old["chief:0"]}) == {"worker:0": {"from": 0, "points": []}}


def test_applying_each_delta_in_turn_rebuilds_every_series_and_twice_changes_nothing():
    history, sent, seen = History(limit=8), {}, {}
    for step in range(1, 60):
        history.observe({"chief:0": {"step": step, "loss": 1 / step},
                         "worker:0": {"step": step // 2, "loss": 2 / step}})  # fmt: skip
        if step == 30:
            history.observe({"chief:0": {"step": 10, "loss": 0.5}})  # a restart: series cut
        current = {t: [list(p) for p in pts] for t, pts in history.points.items()}
        change = delta(sent, current)
        apply_delta(seen, change)
        assert seen == current, step
        assert apply_delta(seen, change) == current  # the same change again: no harm
        sent = current


def test_a_delta_past_a_series_end_is_skipped_until_a_whole_series_comes():
    seen = {"chief:0": [[1, 0.9]]}
    apply_delta(seen, {"chief:0": {"from": 3, "points": [[4, 0.6]]}})
    assert seen == {"chief:0": [[1, 0.9]]}
    apply_delta(seen, {"chief:0": {"from": 0, "points": [[1, 0.9], [4, 0.6]]}})
    assert seen == {"chief:0": [[1, 0.9], [4, 0.6]]}


def test_split_histories_leaves_the_figures_and_takes_each_history_apart():
    progress = {"chief:0": {"step": 3, "loss": 0.5, "history": [[1, 0.9], [3, 0.5]]},
                "ps:0": {"rss_bytes": 10}}  # fmt: skip
    figures, histories = split_histories(progress)
    assert figures == {"chief:0": {"step": 3, "loss": 0.5}, "ps:0": {"rss_bytes": 10}}
    assert histories == {"chief:0": [[1, 0.9], [3, 0.5]]}
    assert "history" in progress["chief:0"]  # the status is not changed
