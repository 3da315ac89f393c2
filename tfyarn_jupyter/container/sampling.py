"""Container side: what a task's processes use (memory, CPU, GPU), for its progress key.

A :class:`Sampler` measures the task's whole process tree (the task and
anything it started: data loaders, ``nvidia-smi`` aside) with psutil: resident
memory (RSS) summed, and CPU as the share of one core used since the previous
sample (200 = two cores busy). The container's memory limit comes from its
cgroup when YARN enforces one; the client falls back to the task's requested
memory otherwise (:mod:`tfyarn_jupyter.core.memory` turns the figures into levels).
GPU figures come from ``nvidia-smi``, only where it exists.
Nothing here may fail a task: what cannot be read is left out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A cgroup "limit" this large means none (cgroup v1 writes 2**63 rounded to pages).
_NO_LIMIT = 1 << 60


class Sampler:
    """Samples one process tree; each call's CPU share is since the previous call."""

    def __init__(self, pid: int | None = None, clock: Callable[[], float] = time.monotonic):
        import psutil

        self._psutil = psutil
        self.process = psutil.Process(pid or os.getpid())
        self._clock = clock
        self._last: tuple[float, float] | None = None
        self.memory_limit_bytes = cgroup_memory_limit()
        self.has_gpu = shutil.which("nvidia-smi") is not None

    def _tree(self) -> list[Any]:
        try:
            return [self.process, *self.process.children(recursive=True)]
        except self._psutil.Error:
            return [self.process]

    def sample(self) -> dict[str, Any]:
        """``rss_bytes``, ``cpu_percent`` (None at first), ``memory_limit_bytes``, ``gpu``."""
        rss = 0
        cpu = 0.0
        for p in self._tree():
            try:
                with p.oneshot():
                    rss += p.memory_info().rss
                    t = p.cpu_times()
                    cpu += t.user + t.system
                    if p.pid == self.process.pid:  # children it already waited for
                        cpu += t.children_user + t.children_system
            except self._psutil.Error:  # it ended between listing and reading
                continue
        now = self._clock()
        percent = None
        if self._last is not None and now > self._last[1]:
            percent = round(max(0.0, (cpu - self._last[0]) / (now - self._last[1]) * 100), 1)
        self._last = (cpu, now)
        out: dict[str, Any] = {
            "rss_bytes": rss,
            "cpu_percent": percent,
            "memory_limit_bytes": self.memory_limit_bytes,
        }
        if self.has_gpu:
            gpus = nvidia_smi()
            if gpus is not None:
                out["gpu"] = gpus
        return out


def cgroup_memory_limit(root: Path = Path("/sys/fs/cgroup"),
                        proc_cgroup: Path = Path("/proc/self/cgroup")) -> int | None:  # fmt: skip
    """The memory limit of this process's cgroup (v2 or v1), None when there is none."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if controllers == "":  # cgroup v2: one unified hierarchy
            candidates.append(root / rel / "memory.max")
        elif "memory" in controllers.split(","):
            candidates.append(root / "memory" / rel / "memory.limit_in_bytes")
    for file in candidates:
        try:
            text = file.read_text().strip()
        except OSError:
            continue
        if text.isdecimal() and int(text) < _NO_LIMIT:
            return int(text)
    return None


def parse_nvidia_smi(text: str, visible: str | None = None) -> list[dict[str, Any]]:
    """``nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total`` CSV, as
    the panel's figures (memory in bytes), only the GPUs ``CUDA_VISIBLE_DEVICES`` names."""
    keep = None
    if visible is not None and all(v.strip().isdecimal() for v in visible.split(",") if v):
        keep = {int(v) for v in visible.split(",") if v.strip()}
    out = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not all(p.replace(".", "", 1).isdecimal() for p in parts):
            continue  # "[N/A]" or a header
        index, util, used, total = parts
        if keep is not None and int(index) not in keep:
            continue
        out.append({"util": float(util), "mem_used": int(float(used)) << 20,
                    "mem_total": int(float(total)) << 20})  # fmt: skip
    return out


def nvidia_smi() -> list[dict[str, Any]] | None:
    """The visible GPUs' utilisation and memory, None when ``nvidia-smi`` cannot say."""
    query = "index,utilization.gpu,memory.used,memory.total"
    try:
        res = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=5, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_nvidia_smi(res.stdout, os.environ.get("CUDA_VISIBLE_DEVICES"))
