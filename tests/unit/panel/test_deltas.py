"""The loss histories sent as what changed (tfyarn_jupyter.panel.deltas): pure."""

from __future__ import annotations

from tfyarn_jupyter.core.history import History
from tfyarn_jupyter.panel.deltas import apply_delta, delta, split_histories


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
