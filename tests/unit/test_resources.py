"""What a task's processes use: its process tree measured with psutil, its cgroup's limit, GPUs."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from tfyarn_jupyter import resources
from tfyarn_jupyter.resources import Sampler


def test_the_sampler_sums_the_process_tree_and_measures_cpu_between_samples():
    child = subprocess.Popen(
        [sys.executable, "-c", "x = bytearray(64 << 20)\nimport time\nwhile True: pass"]
    )
    try:
        time.sleep(1.0)  # the child allocated its 64 MiB and spins
        sampler = Sampler()
        kid = psutil.Process(child.pid)
        first = sampler.sample()
        kid0, own0 = sum(kid.cpu_times()[:2]), sum(sampler.process.cpu_times()[:2])
        t0 = time.monotonic()
        assert first["rss_bytes"] >= sampler.process.memory_info().rss + (60 << 20)
        assert first["cpu_percent"] is None  # no interval yet
        time.sleep(1.0)
        kid1, own1 = sum(kid.cpu_times()[:2]), sum(sampler.process.cpu_times()[:2])
        second = sampler.sample()
        expected = (kid1 - kid0 + own1 - own0) / (time.monotonic() - t0) * 100
        assert second["cpu_percent"] > 5.0  # the spinning child (on a busy machine, a share)
        assert abs(second["cpu_percent"] - expected) < max(10.0, expected * 0.3), expected
        assert set(second) >= {"rss_bytes", "cpu_percent", "memory_limit_bytes"}
    finally:
        child.kill()
        child.wait()


def test_cgroup_v2_limit_and_its_absence(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("0::/yarn/container_1\n")
    limit = tmp_path / "root" / "yarn" / "container_1" / "memory.max"
    limit.parent.mkdir(parents=True)
    limit.write_text("1073741824\n")
    assert resources.cgroup_memory_limit(tmp_path / "root", proc) == 1 << 30
    limit.write_text("max\n")
    assert resources.cgroup_memory_limit(tmp_path / "root", proc) is None
    assert resources.cgroup_memory_limit(tmp_path / "root", tmp_path / "none") is None


def test_cgroup_v1_limit_and_its_unlimited_value(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("5:cpu,cpuacct:/c\n4:memory:/hadoop-yarn/container_2\n")
    limit = tmp_path / "memory" / "hadoop-yarn" / "container_2" / "memory.limit_in_bytes"
    limit.parent.mkdir(parents=True)
    limit.write_text("2147483648")
    assert resources.cgroup_memory_limit(tmp_path, proc) == 2 << 30
    limit.write_text("9223372036854771712")  # v1's "no limit"
    assert resources.cgroup_memory_limit(tmp_path, proc) is None


def test_nvidia_smi_figures_in_bytes_for_the_visible_gpus_only():
    text = "0, 35, 1024, 16384\n1, 90, 8000, 16384\n2, [N/A], [N/A], 16384\n"
    assert resources.parse_nvidia_smi(text) == [
        {"util": 35.0, "mem_used": 1024 << 20, "mem_total": 16384 << 20},
        {"util": 90.0, "mem_used": 8000 << 20, "mem_total": 16384 << 20},
    ]
    assert [g["util"] for g in resources.parse_nvidia_smi(text, "1")] == [90.0]
    assert len(resources.parse_nvidia_smi(text, "GPU-uuid-a")) == 2  # UUIDs: no filtering
    assert resources.parse_nvidia_smi("") == []


def test_memory_levels_from_80_and_90_percent_of_the_limit():
    gib = 1 << 30
    assert resources.memory_level(0.79 * gib, gib) == "ok"
    assert resources.memory_level(0.8 * gib, gib) == "high"
    assert resources.memory_level(0.9 * gib, gib) == "critical"
    assert resources.memory_level(None, gib) == resources.memory_level(gib, None) == ""
    assert resources.memory_level(gib, 0) == ""


def test_levels_against_the_reported_limit_else_the_request_and_the_warnings():
    progress = {
        "chief:0": {"step": 5, "rss_bytes": 900 << 20, "memory_limit_bytes": 2 << 30},
        "worker:0": {"rss_bytes": 950 << 20},  # no cgroup limit: its 1 GiB request
        "evaluator:0": {"rss_bytes": 850 << 20},
        "ps:0": {"step": 1},  # no resources reported: no level
    }
    memory_mb = {"chief:0": 1024, "worker:0": 1024, "evaluator:0": 1024}
    out = resources.with_memory_levels(progress, memory_mb)
    assert {t: p.get("memory_level") for t, p in out.items()} == {
        "chief:0": "ok", "worker:0": "critical", "evaluator:0": "high", "ps:0": None,
    }  # fmt: skip
    assert out["chief:0"]["step"] == 5 and "memory_level" not in progress["chief:0"]
    assert resources.memory_warnings({"progress": out}) == {
        "worker:0": "critical", "evaluator:0": "high",
    }  # fmt: skip


def test_the_status_carries_the_levels_and_the_run_logs_critical_once_per_task(caplog):
    from tfyarn_jupyter.run import Run
    from tfyarn_jupyter.state import AppInfo, RunStatus, TaskState

    tasks = [TaskState("chief:0", "chief", 0, "running", memory_mb=512)]
    st = RunStatus(AppInfo("application_1_0001"), tasks, [], [], None,
                   progress={"chief:0": {"rss_bytes": 470 << 20}})  # fmt: skip
    assert st.to_dict()["progress"]["chief:0"]["memory_level"] == "critical"
    assert resources.memory_warnings(st) == {"chief:0": "critical"}
    assert RunStatus.from_dict(st.to_dict()).to_dict() == st.to_dict()
    run = Run.__new__(Run)  # only the log's memory of which tasks it warned about
    run._memory_warned = set()
    with caplog.at_level("WARNING", logger="tfyarn_jupyter"):
        run._warn_memory(st)
        run._warn_memory(st)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "application_1_0001 chief:0 uses 470 MiB, over 90% of its memory limit: "
        "YARN kills it past it"
    ]
