"""Issue 2's floors: a bare skein application's latency, and a fresh sandbox's start time."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from pathlib import Path

import skein
from tfyarn_sandbox.sandbox import Sandbox

from .core import Bench


def bare_skein(bench: Bench) -> None:
    spec = skein.ApplicationSpec(
        name="tfyarn-bench-bare", queue="default", max_attempts=1,
        services={"noop": skein.Service(resources=skein.Resources(128, 1), script="true")},
    )  # fmt: skip
    running, finished = [], []
    for rep in range(bench.cfg.bare_reps):
        t0 = time.time()
        app_id = bench.submit_app(spec)
        try:
            r = bench.watch_skein_app(app_id, t0, 1, timeout=300)
        finally:
            bench.kill(app_id)
        bench.log(f"bare skein rep {rep + 1}: {r}")
        running.append(r["app_running"])
        finished.append(r["done"])
    sec = "skein (bare application)"
    bench.row(sec, "submit -> application RUNNING", "s", running, "polled every 0.2 s")
    bench.row(sec, "submit -> FINISHED", "s", finished, "service runs `true`")


def sandbox_start(bench: Bench) -> None:
    root = Path(tempfile.mkdtemp(prefix="tfyarn-bench-sandbox-"))
    box = Sandbox(root)
    t0 = time.perf_counter()
    value = None
    note = "fresh Sandbox(tmp).start(), Hadoop jars cached; formats HDFS"
    try:
        box.start()
        value = time.perf_counter() - t0
    except Exception as exc:
        note = f"failed: {exc}"
    finally:
        with contextlib.suppress(Exception):
            box.stop()
        shutil.rmtree(root, ignore_errors=True)
    bench.row("sandbox", "start (jars cached) -> ready", "s", [value] if value else [], note)
