"""5. Watching cost (calls and milliseconds per poll), and kill -> panel latency (issue 4).

For each size, an application of ``sleep`` containers whose key-value store
holds what a real run of that size would; then ``StatusSource`` polls it back
to back, its skein client wrapped in a :class:`Counting` proxy that tallies
the calls to the ResourceManager and the application master (the design
says :data:`tfyarn_jupyter.run.polling.CALLS_PER_POLL`; this measures it).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

import skein

from tfyarn_jupyter.core.spec import TaskSpec, task_names
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.run.polling import StatusSource

from .core import Bench
from .stats import calls_per_minute, summarize

T = TypeVar("T")
#: The panel's poll interval (its poller sleeps this long after each poll).
INTERVAL_S = 1.0


@dataclasses.dataclass
class Tally:
    calls: int = 0


class Counting:
    """A skein client, or what it hands out, with each call to YARN counted in ``tally``.

    ``connect`` only finds the application master (and a status source does
    it once): it is not counted, but what it returns is wrapped, and so is an
    application client's ``kv`` store, so that the master's calls count too.
    """

    def __init__(self, target: Any, tally: Tally) -> None:
        self._target = target
        self._tally = tally

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name == "kv":
            return Counting(attr, self._tally)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            if name == "connect":
                return Counting(attr(*args, **kwargs), self._tally)
            self._tally.calls += 1
            return attr(*args, **kwargs)

        return call


def counting(target: T, tally: Tally) -> T:
    """``target`` behind a :class:`Counting` proxy, typed as ``target`` for its users."""
    return cast(T, Counting(target, tally))


def sleeper(n: int) -> tuple[skein.ApplicationSpec, dict[str, TaskSpec]]:
    """An application of ``n`` sleeping tasks (a chief and workers) and its topology."""

    def svc(instances: int) -> skein.Service:
        return skein.Service(resources=skein.Resources(memory=128, vcores=1),
                             script="sleep 900", instances=instances,
                             allow_failures=True)  # fmt: skip

    services = {"chief": svc(1)}
    specs: dict[str, TaskSpec] = {"chief": TaskSpec(128, 1)}
    if n > 1:
        services["worker"] = svc(n - 1)
        specs["worker"] = TaskSpec(128, 1, n - 1)
    spec = skein.ApplicationSpec(name=f"tfyarn-bench-watch-{n}", queue="default",
                                 services=services, max_attempts=1)  # fmt: skip
    return spec, specs


def fill_events(am: Any, tasks: Sequence[str]) -> None:
    """The key-value store a real run of this size would have: 4 events per task, 5 metrics."""
    ops = []
    for t in tasks:
        for kind in ("container", "init", "start", "train_start"):
            value = events.encode({"host": "sandbox", "address": "h:1"})
            ops.append(skein.kv.put(events.task_key(t, kind), value))
    for step in range(0, 500, 100):
        value = events.encode({"step": step, "accuracy": 0.9, "loss": 0.1})
        ops.append(skein.kv.put(events.metrics_key(step), value))
    am.kv.transaction(on_success=ops)


def _wait_running(am: Any, n: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        running = len(am.get_containers(states=["RUNNING"]))
        if running >= min(n, 2) or time.monotonic() > deadline:
            return
        time.sleep(0.5)


def watching(bench: Bench) -> None:
    for n in bench.cfg.watch_sizes:
        spec, specs = sleeper(n)
        app_id = bench.submit_app(spec)
        try:
            am = bench.client.connect(app_id)
            fill_events(am, task_names(specs))
            _wait_running(am, n)
            _watch(bench, am, app_id, n, specs)
        finally:
            bench.kill(app_id)


def _watch(bench: Bench, am: Any, app_id: str, n: int, specs: Mapping[str, TaskSpec]) -> None:
    """Poll back to back as the run's driver step does (poll, acknowledge); rows per size."""
    sec = "watching cost"
    tally = Tally()
    source = StatusSource(counting(bench.client, tally), app_id, specs)
    source.poll()  # the first poll also reads the node labels
    calls, ms = [], []
    for _ in range(bench.cfg.watch_polls):
        c0, t0 = tally.calls, time.perf_counter()
        source.poll()
        source.acknowledge()
        ms.append((time.perf_counter() - t0) * 1000)
        calls.append(tally.calls - c0)
    running = len(am.get_containers(states=["RUNNING"]))
    note = f"{running} of {n} containers running (the rest requested)"
    bench.row(sec, f"{n} tasks: calls per poll", "calls", calls, note)
    bench.row(sec, f"{n} tasks: ms per poll", "ms", ms, note)
    s_calls, s_ms = summarize(calls), summarize(ms)
    if s_calls and s_ms:
        bench.row(sec, f"{n} tasks: RM/AM calls per minute a panel adds", "calls/min",
                  [calls_per_minute(s_calls.median, s_ms.median, INTERVAL_S)],
                  f"Poller interval {INTERVAL_S:g} s + median poll time")  # fmt: skip
    if n == max(bench.cfg.watch_sizes):
        kill_latency(bench, am, source, specs)


def kill_latency(bench: Bench, am: Any, source: StatusSource, specs: Mapping[str, Any]) -> None:
    """kill_container() -> StatusSource.poll() shows the task killed (polling back to back)."""
    workers = specs["worker"].instances if "worker" in specs else 0
    running = {f"{c.service_name}:{c.instance}" for c in am.get_containers(states=["RUNNING"])}
    targets = [f"worker:{i}" for i in range(workers) if f"worker:{i}" in running]
    targets = targets[: bench.cfg.reps]
    values = []
    for task in targets:
        t0 = time.perf_counter()
        source.kill_task(task)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = source.poll()
            if any(t.task == task and t.state == "killed" for t in st.tasks):
                values.append(time.perf_counter() - t0)
                break
    bench.row("panel latency", "container killed -> StatusSource.poll shows it", "s", values,
              "back-to-back polls; the panel adds up to its 1 s interval")  # fmt: skip
