"""The benchmarks' pure half: statistics, interleaving, ratios, the markdown table."""

from __future__ import annotations

import math

import pytest

from benchmarks.stats import (
    Row,
    Stats,
    calls_per_minute,
    fmt,
    interleave,
    latest,
    paired_ratios,
    render_markdown,
    since,
    skein_kv_race,
    step_rate,
    summarize,
    tfyarn070_rows,
)


def test_summarize_gives_median_min_max_and_count():
    assert summarize([3.0, 1.0, 2.0]) == Stats(median=2.0, min=1.0, max=3.0, n=3)


def test_summarize_takes_the_mean_of_the_two_middle_values_for_even_counts():
    assert summarize([4.0, 1.0, 2.0, 10.0]) == Stats(median=3.0, min=1.0, max=10.0, n=4)


def test_summarize_ignores_missing_and_non_finite_values():
    assert summarize([None, 5.0, math.nan, math.inf, 1.0]) == Stats(3.0, 1.0, 5.0, 2)


def test_summarize_of_nothing_is_none():
    assert summarize([]) is None
    assert summarize([None, math.nan]) is None


def test_interleave_alternates_variants_within_each_repetition():
    assert interleave(["A", "B"], 3) == [
        (0, "A"), (0, "B"), (1, "A"), (1, "B"), (2, "A"), (2, "B"),
    ]  # fmt: skip


def test_interleave_runs_each_variant_once_per_repetition():
    order = interleave(["floor", "warm", "cold"], 5)
    assert len(order) == 15
    for rep in range(5):
        assert [v for r, v in order if r == rep] == ["floor", "warm", "cold"]


def test_interleave_rejects_zero_repetitions_and_duplicate_variants():
    with pytest.raises(ValueError, match="reps"):
        interleave(["A"], 0)
    with pytest.raises(ValueError, match="distinct"):
        interleave(["A", "A"], 2)


def test_paired_ratios_skip_repetitions_missing_either_side():
    assert paired_ratios([2.0, None, 9.0, 4.0], [1.0, 3.0, 3.0, 0.0]) == [2.0, 3.0]


def test_calls_per_minute_counts_the_poll_time_in_the_cycle():
    # 3 calls per poll, 1 s interval + 0.5 s per poll: 40 polls a minute.
    assert calls_per_minute(3, 500, 1.0) == pytest.approx(120.0)
    assert calls_per_minute(3, 0, 1.0) == pytest.approx(180.0)


def test_step_rate_is_one_over_the_median_step_time():
    # One slow step (a checkpoint) does not move the rate.
    assert step_rate([0.01, 0.01, 0.01, 2.0, 0.01]) == pytest.approx(100.0)
    assert step_rate([]) is None


def test_latest_needs_every_moment():
    assert latest([3.0, 1.0, 2.0]) == 3.0
    assert latest([3.0, None]) is None
    assert latest([3.0, 0.0]) is None
    assert latest([]) is None


def test_since_is_relative_and_keeps_missing_moments_missing():
    assert since(10.0, 12.5) == 2.5
    assert since(10.0, None) is None


def test_fmt_uses_the_unit():
    assert fmt(1.234, "s") == "1.23 s"
    assert fmt(12.34, "ms") == "12.3 ms"
    assert fmt(2.5, "x") == "2.50x"
    assert fmt(1406.2, "steps/s") == "1406 steps/s"
    assert fmt(3.0, "calls") == "3.0 calls"


def test_render_markdown_has_one_line_per_row_with_median_min_max_n():
    rows = [
        Row("launch", "submit -> RUNNING", "s", [3.0, 1.0, 2.0], "note a"),
        Row("launch", "ratio", "x", [1.5]),
    ]
    md = render_markdown(rows)
    lines = md.strip().splitlines()
    assert lines[0] == "| Section | Measurement | Median | Min | Max | n | Notes |"
    assert lines[1].startswith("|---|")
    assert lines[2] == "| launch | submit -> RUNNING | 2.00 s | 1.00 s | 3.00 s | 3 | note a |"
    assert lines[3] == "| launch | ratio | 1.50x | 1.50x | 1.50x | 1 |  |"
    assert len(lines) == 4


def test_render_markdown_shows_a_row_without_values_with_its_reason():
    md = render_markdown([Row("tf-yarn 0.7.0", "run", "s", [], "could not run: no libhdfs")])
    assert "| tf-yarn 0.7.0 | run | — | — | — | 0 | could not run: no libhdfs |" in md


def test_render_markdown_escapes_pipes_and_newlines_in_cells():
    md = render_markdown([Row("s", "a|b", "s", [1.0], "line1\nline2 | x")])
    row = md.strip().splitlines()[-1]
    assert "a\\|b" in row
    assert "line1 line2 \\| x" in row
    assert row.count(" | ") == 6  # seven cells, none split by the content


def test_render_markdown_puts_header_lines_before_the_table():
    md = render_markdown([Row("s", "m", "s", [1.0])], header=["# Title", "text"])
    assert md.startswith("# Title\ntext\n\n| Section |")


def test_row_to_dict_carries_values_and_their_statistics():
    d = Row("s", "m", "ms", [5.0, 1.0, 3.0], "n").to_dict()
    assert d == {
        "section": "s", "name": "m", "unit": "ms", "values": [5.0, 1.0, 3.0],
        "median": 3.0, "min": 1.0, "max": 5.0, "n": 3, "note": "n",
    }  # fmt: skip


def _run(running: float, first: float, finished: float, **extra) -> dict:
    return {"all_containers_running": running, "first_step": first, "finished": finished, **extra}


def test_tfyarn070_rows_pair_each_moment_and_divide_ours_by_theirs():
    res: dict[str, list[dict | None]] = {
        "tf-yarn 0.7.0 warm": [_run(10, 20, 40), _run(12, 24, 48)],
        "tfyarn warm": [_run(5, 10, 20), None],  # the second repetition failed
    }
    rows = {r.name: r for r in tfyarn070_rows("sec", res)}
    assert rows["tf-yarn 0.7.0 warm: submit -> first training step"].values == [20.0, 24.0]
    assert rows["tfyarn warm: submit -> first training step"].values == [10.0]
    # Only the complete pair counts, and the ratio is tfyarn / tf-yarn.
    assert rows["warm: tfyarn / tf-yarn 0.7.0, first training step"].values == [0.5]
    assert rows["warm: tfyarn / tf-yarn 0.7.0, all containers RUNNING"].values == [0.5]
    assert not any(name.startswith("cold") for name in rows)  # not measured: no rows


def test_tfyarn070_rows_show_both_packers_phases_and_the_pex_size_on_cold_runs():
    res: dict[str, list[dict | None]] = {
        "tf-yarn 0.7.0 cold": [_run(100, 120, 130, phases={"pack": 80, "upload": 25},
                                    env_size=3 * 2**29)],
        "tfyarn cold": [_run(20, 30, 40, launch_phases={"env_pack": 5, "env_upload": 1})],
    }  # fmt: skip
    rows = {r.name: r for r in tfyarn070_rows("sec", res)}
    assert rows["tf-yarn 0.7.0 cold phase: pack"].values == [80.0]
    assert rows["tfyarn cold phase: pack"].values == [5.0]
    assert rows["tfyarn cold phase: upload"].values == [1.0]
    assert rows["cold: tfyarn / tf-yarn 0.7.0, run finished"].values == [40 / 130]
    assert rows["tf-yarn 0.7.0 environment (pex) size"].values == [1536.0]


#: The end of a tf-yarn 0.7.0 driver's error when skein's master failed a put (CI, 2026-12-03).
KV_RACE = """  File "/tmp/venv/lib/python3.11/site-packages/skein/kv.py", line 597, in _apply_op
    resp = self._client._call(op._rpc, req, timeout=timeout)
  File "/tmp/venv/lib/python3.11/site-packages/skein/core.py", line 290, in _call
    raise self._server_error(exc.details())
skein.exceptions.ApplicationError
"""


def test_skein_kv_race_is_told_apart_from_other_tf_yarn_failures():
    assert skein_kv_race(KV_RACE)
    assert not skein_kv_race("")
    assert not skein_kv_race("skein.exceptions.ApplicationError: no such service")
    assert not skein_kv_race('File ".../skein/kv.py", line 1\nTimeoutError')
