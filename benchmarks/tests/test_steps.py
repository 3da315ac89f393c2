"""The container side's code: step records, and shipping it to containers without ``benchmarks``."""

from __future__ import annotations

import functools
import json

from benchmarks import steps


def test_task_name_comes_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"task": {"type": "worker", "index": 1}}))
    assert steps.task_name() == "worker-1"
    monkeypatch.delenv("TF_CONFIG")
    assert steps.task_name() == "local-0"


def test_read_steps_reads_what_the_hook_wrote_and_nothing_when_it_did_not(tmp_path):
    record = {"first_step": 1.0, "last_step": 2.0, "steps": 2, "durations": [0.1, 0.2]}
    (tmp_path / "steps.chief-0.json").write_text(json.dumps(record))
    assert steps.read_steps(str(tmp_path / "steps"), "chief-0") == record
    assert steps.read_steps(str(tmp_path / "steps"), "worker-0") == {}
    (tmp_path / "steps.worker-0.json").write_text("{truncated")
    assert steps.read_steps(str(tmp_path / "steps"), "worker-0") == {}


def test_the_experiment_ships_by_value_to_an_interpreter_without_benchmarks(load_elsewhere):
    steps.ship_by_value()
    fn = functools.partial(steps.bench_experiment, "/model", 100, "/stats")
    loaded = load_elsewhere(fn)
    assert loaded.startswith("functools.partial(<function bench_experiment at ")
    assert loaded.endswith(">, '/model', 100, '/stats')")
