"""The command without a cluster: it holds the sandbox fixture; its sections and where it caches."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from benchmarks import cli
from benchmarks.cli import sections
from benchmarks.core import config

CHECKOUT = Path(__file__).resolve().parents[2]


def test_the_bench_measures_inside_the_sandbox_fixture_and_leaves_it_after(monkeypatch):
    """``python -m benchmarks`` holds the same sandbox as the test suites' fixture (started
    or reused, its environment exported) while it measures, and releases it afterwards."""
    seen: list[str] = []

    @contextlib.contextmanager
    def fake_sandbox():
        seen.append("sandbox up")
        os.environ["HADOOP_CONF_DIR"] = "/sandbox/conf"
        yield object()
        seen.append("sandbox released")

    def fake_measure(args):
        seen.append(f"measured with {os.environ.get('HADOOP_CONF_DIR')} reps={args.reps}")
        return 0

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setattr(cli, "session_sandbox", fake_sandbox)
    monkeypatch.setattr(cli, "measure", fake_measure)
    assert cli.main(["--smoke", "--reps", "1"]) == 0
    assert seen == ["sandbox up", "measured with /sandbox/conf reps=1", "sandbox released"]


def test_sections_run_in_order_and_smoke_skips_the_sandbox_start_baselines_and_keras_runs():
    smoke = {name: enabled for name, _, enabled in sections(config(1, True, Path("out")))}
    assert list(smoke) == [
        "bare",
        "watching",
        "packing",
        "compression",
        "hdfs",
        "tf_hdfs",
        "sandbox",
        "launches",
        "training",
        "training_1gb",
        "training_1gb_few",
        "training_1gb_spaced",
        "strategies",
        "tfyarn070",
        "current_tf",
        "layers",
        "gpus",
    ]
    skipped = ["sandbox", "training", "training_1gb", "training_1gb_few", "training_1gb_spaced"]
    skipped += ["strategies"]
    skipped += ["tfyarn070", "current_tf"]
    skipped += ["layers", "gpus"]
    assert [name for name, enabled in smoke.items() if not enabled] == skipped
    assert all(enabled for _, _, enabled in sections(config(5, False, Path("out"))))


def test_caches_outlive_the_output_folder_in_the_tfyarn_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TFYARN_CACHE", str(tmp_path / "cache"))
    cfg = config(1, True, tmp_path / "bench")
    assert cfg.cache == tmp_path / "cache" / "bench"
    assert "cache" not in config(1, True, tmp_path).__dict__  # not in bench.json's config
