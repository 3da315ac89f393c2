"""What a task's processes use: its process tree measured with psutil, its cgroup's limit, GPUs."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from tfyarn_jupyter.container import sampling as resources
from tfyarn_jupyter.container.sampling import Sampler


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


# ``nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total
# --format=csv,noheader,nounits``, in the form it prints (MiB; "[N/A]" or
# "[Not Supported]" where a figure is not known). No GPU machine was at hand:
# these follow NVIDIA's documented output, not a capture.
EIGHT_A100 = "".join(
    f"{i}, {u}, {m}, 40960\n"
    for i, (u, m) in enumerate(
        [(97, 30518), (95, 30502), (0, 4), (0, 4), (100, 39001), (12, 2048), (0, 4), (0, 4)]
    )
)
ONE_T4 = "0, 41, 6143, 15360\n"
MIG_OR_GEFORCE = "0, [Not Supported], 1234, 8192\n1, 5, 300, 8192\n"


def test_several_gpus_give_one_figure_each_and_cuda_visible_devices_selects():
    gpus = resources.parse_nvidia_smi(EIGHT_A100)
    assert len(gpus) == 8
    assert gpus[0] == {"util": 97.0, "mem_used": 30518 << 20, "mem_total": 40960 << 20}
    assert [g["util"] for g in resources.parse_nvidia_smi(EIGHT_A100, "4,5")] == [100.0, 12.0]
    assert resources.parse_nvidia_smi(EIGHT_A100, "") == []  # CUDA sees none: neither do we


def test_one_gpu_gives_one_figure():
    assert resources.parse_nvidia_smi(ONE_T4) == [
        {"util": 41.0, "mem_used": 6143 << 20, "mem_total": 15360 << 20}
    ]
    assert resources.parse_nvidia_smi(ONE_T4, "0") == resources.parse_nvidia_smi(ONE_T4)
    assert resources.parse_nvidia_smi(ONE_T4, "1") == []


def test_a_gpu_whose_utilisation_is_not_supported_is_left_out():
    assert resources.parse_nvidia_smi(MIG_OR_GEFORCE) == [
        {"util": 5.0, "mem_used": 300 << 20, "mem_total": 8192 << 20}
    ]


def test_a_missing_nvidia_smi_gives_no_gpu_figures(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi there
    assert resources.nvidia_smi() is None
    sampler = Sampler()
    assert sampler.has_gpu is False
    assert "gpu" not in sampler.sample()


def test_a_failing_nvidia_smi_gives_no_gpu_figures(monkeypatch, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate "
                    "with the NVIDIA driver.'\nexit 9\n")  # fmt: skip
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resources.nvidia_smi() is None
    sampler = Sampler()
    assert sampler.has_gpu is True
    assert "gpu" not in sampler.sample()


def test_a_working_nvidia_smi_is_read_through_the_sampler(monkeypatch, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\nprintf '{ONE_T4}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert Sampler().sample()["gpu"] == resources.parse_nvidia_smi(ONE_T4)
