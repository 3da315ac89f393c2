"""The command without a cluster: it refuses to start; its sections and where it caches."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchmarks.cli import sections
from benchmarks.core import config

CHECKOUT = Path(__file__).resolve().parents[2]


def test_bench_refuses_without_hadoop_conf_dir():
    env = {k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--reps", "1"],
        capture_output=True, text=True, env=env, timeout=120, cwd=CHECKOUT,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "HADOOP_CONF_DIR is not set" in proc.stderr


def test_sections_run_in_order_and_smoke_skips_the_sandbox_start_baselines_and_keras_runs():
    smoke = {name: enabled for name, _, enabled in sections(config(1, True, Path("out")))}
    assert list(smoke) == [
        "bare",
        "watching",
        "packing",
        "hdfs",
        "sandbox",
        "launches",
        "tfyarn070",
        "current_tf",
        "layers",
    ]
    skipped = ["sandbox", "tfyarn070", "current_tf", "layers"]
    assert [name for name, enabled in smoke.items() if not enabled] == skipped
    assert all(enabled for _, _, enabled in sections(config(5, False, Path("out"))))


def test_caches_outlive_the_output_folder_in_the_tfyarn_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TFYARN_CACHE", str(tmp_path / "cache"))
    cfg = config(1, True, tmp_path / "bench")
    assert cfg.cache == tmp_path / "cache" / "bench"
    assert "cache" not in config(1, True, tmp_path).__dict__  # not in bench.json's config
