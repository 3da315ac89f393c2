"""Launch comparisons, per topology: the floor, tfyarn warm and cold, and local training.

1. floor: a bare skein application, one service per task of the topology,
   each running ``<venv python> -c 'import tensorflow'``;
2. tfyarn warm launch (environment archive already on HDFS);
3. tfyarn cold launch (archive absent, phases timed);
6. training overhead: steps/s locally and as the chief of a run.

Variants are interleaved per repetition (floor warm cold local, ...).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import skein

from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.core.state import RunStatus
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.run import launch as runs
from tfyarn_jupyter.ship import packing

from .core import CANCER, PACKAGE, Bench, topologies
from .stats import interleave, latest, paired_ratios, since, step_rate
from .steps import bench_experiment, read_steps, ship_by_value


# -- 1. floor: bare skein, import tensorflow ---------------------------------------------------
def floor_spec(topology: Mapping[str, TaskSpec]) -> skein.ApplicationSpec:
    script = f"{shlex.quote(sys.executable)} -c 'import tensorflow'"
    services = {
        t: skein.Service(
            resources=skein.Resources(memory=s.memory, vcores=s.vcores),
            script=script,
            instances=s.instances,
            node_label=s.label.value,
        )
        for t, s in topology.items()
    }
    return skein.ApplicationSpec(
        name="tfyarn-bench-floor", queue="default", services=services, max_attempts=1
    )


def measure_floor(bench: Bench, topology: Mapping[str, TaskSpec]) -> dict:
    n = sum(s.instances for s in topology.values())
    t0 = time.time()
    app_id = bench.submit_app(floor_spec(topology))
    try:
        return bench.watch_skein_app(app_id, t0, n)
    finally:
        bench.kill(app_id)


# -- 2, 3. tfyarn launches ---------------------------------------------------------------------
@contextlib.contextmanager
def cold_env(bench: Bench) -> Iterator[dict[str, str]]:
    """An environment with no archive anywhere: a fresh content key, an empty local cache.

    The shared archive of this venv is left alone (other clients of the cluster
    may be localising it right now); instead the key gets a unique suffix, so
    ``ensure_env`` finds nothing on HDFS or in the local cache and packs,
    uploads and has YARN localise a never-seen archive, as on a first launch.
    """
    original = packing.env_key
    salt = uuid.uuid4().hex[:8]
    seen: dict[str, str] = {}

    def salted(prefix: Path | None = None) -> str:
        key = f"{original(prefix)}-cold{salt}"
        seen["key"] = key
        return key

    cache = bench.tmp / f"cache-{salt}"
    saved = os.environ.get("TFYARN_CACHE")
    os.environ["TFYARN_CACHE"] = str(cache)
    setattr(packing, "env_key", salted)  # noqa: B010 (a module attribute, restored below)
    try:
        yield seen
    finally:
        setattr(packing, "env_key", original)  # noqa: B010
        if saved is None:
            os.environ.pop("TFYARN_CACHE", None)
        else:
            os.environ["TFYARN_CACHE"] = saved
        shutil.rmtree(cache, ignore_errors=True)


def measure_cold_prepare(bench: Bench) -> dict:
    """--smoke's cold variant: ``ensure_env`` with no archive (pack + upload), no run, of a
    tiny venv (:meth:`.Bench.tiny_venv`): the code path, without packing 2 GB."""
    original = packing.venv_prefix
    setattr(packing, "venv_prefix", bench.tiny_venv)  # noqa: B010 (restored below)
    try:
        with cold_env(bench) as seen:
            t0 = time.perf_counter()
            report = packing.ensure_env()
            total = time.perf_counter() - t0
    finally:
        setattr(packing, "venv_prefix", original)  # noqa: B010
    bench.hdfs_delete(f"{filesystem.home()}/.tfyarn/envs/{seen['key']}.tar")
    phases = {f"env_{k}": v for k, v in report.times.items()}
    return {"launch_phases": {**phases, "total": total}, "chief_phases": {}}


def _submit(
    bench: Bench, topology: Mapping[str, TaskSpec], fn: Any, *, cold: bool
) -> tuple[runs.Run, str | None]:
    """Submit one run of ``fn``; the salted archive of a cold run, to delete after it."""
    remote = None
    env_ctx: contextlib.AbstractContextManager[dict[str, str]] = (
        cold_env(bench) if cold else contextlib.nullcontext({})
    )
    with env_ctx as seen:
        run = runs.submit(
            fn,
            topology,
            files={"cancer.py": str(CANCER)},
            name=f"tfyarn-bench-{'cold' if cold else 'warm'}",
        )
        if cold and "key" in seen:
            remote = f"{filesystem.home()}/.tfyarn/envs/{seen['key']}.tar"
            bench.hdfs_leftovers.append(remote)
    return run, remote


def _drive(run: runs.Run) -> tuple[RunStatus, float | None]:
    """Drive the run to its end (``advance``, as the panel does); when its first metrics showed."""
    first_metrics = None
    deadline = time.monotonic() + 900
    while True:
        st = run.advance()
        if st.metrics and first_metrics is None:
            first_metrics = time.time()
        if st.ended:
            return st, first_metrics
        if time.monotonic() > deadline:
            raise TimeoutError(f"{run.app_id} did not end within 900 s")
        time.sleep(0.25)


def measure_tfyarn(bench: Bench, topology: Mapping[str, TaskSpec], *, cold: bool) -> dict:
    ship_by_value()
    tag = uuid.uuid4().hex[:8]
    stats_prefix = str(bench.tmp / f"steps-{tag}")
    fn = functools.partial(
        bench_experiment, str(bench.tmp / f"model-{tag}"), bench.cfg.max_steps, stats_prefix
    )
    t0 = time.time()
    run, remote = _submit(bench, topology, fn, cold=cold)
    t_submitted = time.time()
    bench.runs.append(run)
    try:
        st, first_metrics = _drive(run)
    finally:
        if not run.source.ended:
            run.cancel()
        if remote:  # only this run used the salted archive
            bench.hdfs_delete(remote)
    ev = run.source.events
    chief = ev.task("chief:0")
    steps = read_steps(stats_prefix, "chief-0")
    finish = st.app.finish_time / 1000 if st.app.finish_time else time.time()
    moments = {
        "all_containers_running": latest([t.start_time / 1000 for t in st.tasks]),
        "all_tasks_running": latest(
            [ev.task(t.task).get("container", {}).get("t") for t in st.tasks]
        ),
        "train_start": chief.get("train_start", {}).get("t"),
        "first_step": steps.get("first_step"),
    }
    out: dict[str, Any] = {k: since(t0, v) for k, v in moments.items()}
    out.update(
        final=f"{st.app.state}/{st.app.final_status}",
        app_id=run.app_id,
        first_metrics_seen=since(t0, first_metrics),
        finished=finish - t0,
        submit_returned=t_submitted - t0,
        launch_phases=dict(run.phases),
        steps=steps.get("steps"),
        chief_steps_per_s=step_rate(steps.get("durations") or []),
    )
    chief_start = next((t.start_time / 1000 for t in st.tasks if t.task == "chief:0"), None)
    out["chief_phases"] = chief_phases(t_submitted, chief_start, chief, steps)
    return out


def chief_phases(
    t_submitted: float, chief_start: float | None, chief: Mapping[str, Any], steps: Mapping
) -> dict[str, float | None]:
    """Where the chief's time to its first step went (seconds per phase, ``None``: not seen)."""
    container = chief.get("container") or {}
    started = (chief.get("start") or {}).get("t")
    train_start = chief.get("train_start") or {}
    first_step = steps.get("first_step")
    return {
        "allocation (submit returned -> chief container RUNNING)": since(t_submitted, chief_start),
        "localisation + interpreter (container RUNNING -> task process up)": (
            since(chief_start, container.get("t")) if chief_start else None
        ),
        "import + build experiment (process up -> start)": (
            since(container.get("t", 0), started) if container else None
        ),
        "first step (train_start -> first step)": (
            since(train_start.get("t", 0), first_step) if train_start else None
        ),
    }


# -- 6a. local training ------------------------------------------------------------------------
def measure_local(bench: Bench) -> dict:
    tag = uuid.uuid4().hex[:8]
    prefix = str(bench.tmp / f"steps-{tag}")
    code = (
        "import sys; sys.path[:0] = sys.argv[1:3]; "
        "from benchmarks.steps import local_train; "
        "local_train(sys.argv[3], int(sys.argv[4]), sys.argv[5])"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", code, str(CANCER.parent), str(PACKAGE.parent),
         str(bench.tmp / f"model-{tag}"), str(bench.cfg.max_steps), prefix],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    wall = time.time() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"local training failed: {proc.stderr[-2000:]}")
    steps = read_steps(prefix, "local-0")
    return {"wall": wall, "steps_per_s": step_rate(steps.get("durations") or [])}


# -- the section ---------------------------------------------------------------------------------
def _measure(bench: Bench, topo: Mapping[str, TaskSpec], variant: str) -> dict:
    if variant == "floor":
        return measure_floor(bench, topo)
    if variant == "local":
        return measure_local(bench)
    if variant == "cold" and bench.cfg.smoke:
        return measure_cold_prepare(bench)
    return measure_tfyarn(bench, topo, cold=variant == "cold")


def launches(bench: Bench) -> None:
    bench.log("warming the environment cache (ensure_env)")
    warm_report = packing.ensure_env()
    bench.details["warm_env"] = dataclasses.asdict(warm_report)
    for topo_name, topo in topologies(bench.cfg.smoke).items():
        variants = ["floor", "warm", "cold"]
        if topo_name == "chief+evaluator":
            variants.append("local")
        results: dict[str, list[dict | None]] = {v: [] for v in variants}
        for rep, variant in interleave(variants, bench.cfg.reps):
            bench.log(f"{topo_name}: rep {rep + 1}/{bench.cfg.reps} {variant}")
            res: dict | None
            try:
                res = _measure(bench, topo, variant)
                bench.log(f"  -> {json.dumps(res, default=str)[:600]}")
            except Exception as exc:
                bench.failed(f"{topo_name} {variant} rep {rep + 1} failed: {exc}")
                res = None
            results[variant].append(res)
        bench.details.setdefault("launches", {})[topo_name] = results
        launch_rows(bench, topo_name, results)


def launch_rows(bench: Bench, topo: str, results: Mapping[str, Sequence[dict | None]]) -> None:
    """The section's table: each moment per variant, its ratio to the floor, the phases."""

    def col(variant: str, key: str) -> list[float | None]:
        return [r.get(key) if r else None for r in results.get(variant, [])]

    sec = f"launch: {topo}"
    fl_run, fl_done = col("floor", "all_running"), col("floor", "done")
    bench.row(sec, "floor (bare skein, import tensorflow): submit -> all containers RUNNING",
              "s", fl_run)  # fmt: skip
    bench.row(sec, "floor: submit -> all done", "s", fl_done)
    for v in ("warm", "cold"):
        if v == "cold" and bench.cfg.smoke:
            continue  # --smoke's cold variant packs and uploads only: phases below
        bench.row(sec, f"tfyarn {v}: submit -> all containers RUNNING", "s",
                  col(v, "all_containers_running"), "skein container start times")  # fmt: skip
        bench.row(sec, f"tfyarn {v}: submit -> all tasks running (panel)", "s",
                  col(v, "all_tasks_running"), "each task's `container` event")  # fmt: skip
        bench.row(sec, f"tfyarn {v}: submit -> first training step", "s",
                  col(v, "first_step"), "chief's step hook")  # fmt: skip
        bench.row(sec, f"tfyarn {v}: submit -> first metrics on the panel", "s",
                  col(v, "first_metrics_seen"), "polled every 0.25 s")  # fmt: skip
        bench.row(sec, f"tfyarn {v}: submit -> run finished", "s", col(v, "finished"),
                  f"max_steps={bench.cfg.max_steps}")  # fmt: skip
        bench.row(sec, f"tfyarn {v} / floor: all running", "x",
                  paired_ratios(col(v, "all_containers_running"), fl_run),
                  "paired per repetition")  # fmt: skip
        bench.row(sec, f"tfyarn {v} / floor: done", "x",
                  paired_ratios(col(v, "finished"), fl_done), "includes training")  # fmt: skip
    _phase_rows(bench, sec, results)
    if "local" in results:
        loc, chief = col("local", "steps_per_s"), col("warm", "chief_steps_per_s")
        sec6 = "training overhead"
        bench.row(sec6, "local process: steps/s", "steps/s", loc,
                  "1 / median step time, train_and_evaluate")  # fmt: skip
        bench.row(sec6, f"tfyarn chief ({topo}): steps/s", "steps/s", chief,
                  "1 / median step time, warm runs")  # fmt: skip
        bench.row(sec6, "tfyarn chief / local", "x", paired_ratios(chief, loc),
                  "paired per repetition")  # fmt: skip


def _phase_rows(bench: Bench, sec: str, results: Mapping[str, Sequence[dict | None]]) -> None:
    cold = [r for r in results.get("cold", []) if r]
    phase_names = ["env_key", "env_check", "env_pack", "env_upload", "validate", "client",
                   "queue_check", "load_check_wait", "submit", "total"]  # fmt: skip
    if bench.cfg.smoke:  # its cold variant stops after the upload: no later phases
        phase_names = [p for p in phase_names if any(p in r["launch_phases"] for r in cold)]
    for p in phase_names:
        bench.row(sec, f"tfyarn cold phase: {p}", "s",
                  [r["launch_phases"].get(p) for r in cold], "Run.phases")  # fmt: skip
    for p in cold[0]["chief_phases"] if cold else {}:
        bench.row(sec, f"tfyarn cold phase: {p}", "s", [r["chief_phases"][p] for r in cold])
    warm = [r for r in results.get("warm", []) if r]
    for p in ("env_key", "env_check", "total"):
        bench.row(sec, f"tfyarn warm phase: {p}", "s",
                  [r["launch_phases"].get(p) for r in warm], "Run.phases")  # fmt: skip
