"""CPU seconds by kind of process while a command runs: where a run's CPU goes.

``python -m benchmarks.cpu_by_process [--interval S] -- COMMAND ...`` runs COMMAND and
reads every process's user + system time (psutil) every S seconds (0.3).
When COMMAND ends it prints the CPU-seconds each kind of process used meanwhile: the
tasks, the application masters, skein's driver, each Hadoop daemon, COMMAND and what it
started, and the rest. The CI's lanes are bound by the two cores, so this says what a
test's run costs them (docs/performance.md: what one run costs the two cores).

A process counts from its first reading (or from 0 if it started after the first
sampling) to its last, so one that ends between two readings loses at most S seconds
of its time, and one that lives less than S may go unseen.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

import psutil

#: ``(a part of the command line, the kind)``, the first that matches names the process.
KINDS = (
    ("-m tfyarn_jupyter.container", "task"),
    ("skein.ApplicationMaster", "application master"),
    ("skein.Driver", "skein driver"),
    ("resourcemanager.ResourceManager", "ResourceManager"),
    ("nodemanager.NodeManager", "NodeManager"),
    ("namenode.NameNode", "NameNode"),
    ("datanode.DataNode", "DataNode"),
)
COMMAND = "the command"
OTHER = "other"


def kind_of(cmdline: str, in_command: bool) -> str:
    """The kind of a process from its command line; ``in_command``: COMMAND started it."""
    for part, kind in KINDS:
        if part in cmdline:
            return kind
    return COMMAND if in_command else OTHER


def descends_from(pid: int, root: int, parents: Mapping[int, int]) -> bool:
    """Whether ``pid`` is ``root`` or a descendant of it, by the parents seen."""
    seen = set()
    while pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        pid = parents.get(pid, 0)
    return False


def usage(
    first: Mapping[int, float], last: Mapping[int, float], kinds: Mapping[int, str]
) -> dict[str, float]:
    """CPU-seconds per kind: each process's last reading less its reading at the start
    (none: it started since)."""
    out: defaultdict[str, float] = defaultdict(float)
    for pid, seconds in last.items():
        out[kinds.get(pid, OTHER)] += max(0.0, seconds - first.get(pid, 0.0))
    return dict(out)


def table(totals: Mapping[str, float], wall_s: float) -> str:
    """The report: kinds by CPU-seconds, largest first, and the sum."""
    ranked = sorted(totals.items(), key=lambda item: -item[1])
    lines = [f"{seconds:8.2f}  {kind}" for kind, seconds in ranked]
    lines.append(f"{sum(totals.values()):8.2f}  CPU-s in all, in {wall_s:.1f} s")
    return "\n".join(lines)


class Sampler:
    """Readings of every process in ``/proc``: the first and the latest of each."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.parents: dict[int, int] = {}
        self.kinds: dict[int, str] = {}

    def read(self) -> dict[int, float]:
        now: dict[int, float] = {}
        for proc in psutil.process_iter(["ppid", "cmdline", "cpu_times"]):
            info = proc.info  # a field is None when the process ended while being read
            if info["ppid"] is None or info["cpu_times"] is None:
                continue
            self.parents[proc.pid] = info["ppid"]
            now[proc.pid] = info["cpu_times"].user + info["cpu_times"].system
            if proc.pid not in self.kinds:
                cmdline = " ".join(info["cmdline"] or ())
                in_command = descends_from(proc.pid, self.root, self.parents)
                self.kinds[proc.pid] = kind_of(cmdline, in_command)
        return now

    def start(self) -> None:
        self.first = self.read()
        self.last = dict(self.first)

    def sample(self) -> None:
        self.last.update(self.read())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.cpu_by_process", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between readings")
    parser.add_argument("command", nargs="+", help="the command to run (after --)")
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error("--interval must be > 0")
    started = time.monotonic()
    proc = subprocess.Popen(args.command)
    sampler = Sampler(proc.pid)
    sampler.start()
    try:
        while proc.poll() is None:
            time.sleep(args.interval)
            sampler.sample()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    print(table(usage(sampler.first, sampler.last, sampler.kinds), time.monotonic() - started))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
