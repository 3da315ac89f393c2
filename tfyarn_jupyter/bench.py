"""Benchmarks on the sandbox: ``python -m tfyarn_jupyter.bench [--reps N] [--smoke] [--out DIR]``.

Needs the client environment of a running cluster (``eval "$(tfyarn-sandbox env)"``).
Writes ``bench.md`` (a markdown table) and ``bench.json`` (every value) to ``--out``.

Each comparison is measured in the same run, its variants interleaved
(A B A B ...), and reported as the median of N with min and max:

1. floor: a bare skein application, one service per task of the topology,
   each running ``<venv python> -c 'import tensorflow'``;
2. tfyarn warm launch (environment archive already on HDFS);
3. tfyarn cold launch (archive absent, phases timed), and the pack phase
   against plain ``tar -cf`` and venv-pack's defaults;
4. tf-yarn 0.7.0 from PyPI on the same experiment (full mode only);
5. watching cost: calls and milliseconds per poll for 1, 2, 8, 32 and 48 tasks;
6. training overhead: steps/s locally and as the chief of a run;

plus a bare skein application's submit -> RUNNING / FINISHED latency, the
latency from a container kill to ``StatusSource.poll`` showing it, and (full
mode only) a fresh sandbox's start time with the jars cached.

The top half of this module (statistics, interleaving, table rendering) is
pure; everything after ``# -- I/O`` talks to the cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CANCER = REPO / "notebooks" / "cancer.py"
TFYARN070_VENV = Path("/tmp/tfyarn-bench-venv-tfyarn070")
VENV_PACK_TARGET = Path("/tmp/tfyarn-bench-venv-pack")
ENDED = ("FINISHED", "FAILED", "KILLED")


# -- pure: statistics, interleaving, rendering ---------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Stats:
    median: float
    min: float
    max: float
    n: int


def summarize(values: Sequence[float | None]) -> Stats | None:
    """Median, min and max of the finite values; ``None`` when there are none."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return None
    return Stats(statistics.median(vals), min(vals), max(vals), len(vals))


def interleave(variants: Sequence[str], reps: int) -> list[tuple[int, str]]:
    """The measurement order: every variant once per repetition (A B A B ...)."""
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    if len(set(variants)) != len(variants):
        raise ValueError(f"variants must be distinct: {list(variants)}")
    return [(rep, v) for rep in range(reps) for v in variants]


def paired_ratios(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """``a[i] / b[i]`` for each repetition where both were measured (and ``b[i]`` > 0)."""
    return [x / y for x, y in zip(a, b, strict=False) if x is not None and y is not None and y > 0]


def calls_per_minute(calls_per_poll: float, poll_ms: float, interval_s: float) -> float:
    """Calls a panel makes per minute: it sleeps ``interval_s`` after each poll."""
    cycle = interval_s + poll_ms / 1000
    return calls_per_poll * 60 / cycle if cycle > 0 else math.inf


def step_rate(durations: Sequence[float]) -> float | None:
    """Steps per second from per-step durations: 1 / median (robust to checkpoint pauses)."""
    s = summarize(durations)
    return 1 / s.median if s and s.median > 0 else None


@dataclasses.dataclass
class Row:
    """One line of the table: a measurement and its values (one per repetition)."""

    section: str
    name: str
    unit: str
    values: list[float] = dataclasses.field(default_factory=list)
    note: str = ""

    @property
    def stats(self) -> Stats | None:
        return summarize(self.values)

    def to_dict(self) -> dict[str, Any]:
        s = self.stats
        return {
            "section": self.section,
            "name": self.name,
            "unit": self.unit,
            "values": list(self.values),
            "median": s.median if s else None,
            "min": s.min if s else None,
            "max": s.max if s else None,
            "n": s.n if s else 0,
            "note": self.note,
        }


def fmt(value: float, unit: str) -> str:
    """A value for the table, with as many digits as its unit deserves."""
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.1f} ms"
    if unit == "x":
        return f"{value:.2f}x"
    if unit in ("calls", "calls/min", "steps/s"):
        return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{value:g} {unit}".strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(rows: Sequence[Row], header: Sequence[str] = ()) -> str:
    """The benchmark table (median, min, max, n per measurement) after ``header`` lines."""
    out = [*header]
    if header:
        out.append("")
    out.append("| Section | Measurement | Median | Min | Max | n | Notes |")
    out.append("|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        s = r.stats
        if s is None:
            cells = ["—", "—", "—", "0"]
        else:
            cells = [fmt(s.median, r.unit), fmt(s.min, r.unit), fmt(s.max, r.unit), str(s.n)]
        out.append(
            "| " + " | ".join([_cell(r.section), _cell(r.name), *cells, _cell(r.note)]) + " |"
        )
    return "\n".join(out) + "\n"


def skein_kv_race(error: str) -> bool:
    """Whether a tf-yarn 0.7.0 run died of skein's application-master race on watched keys.

    tf-yarn's client watches keys while its tasks put them; skein's master can then fail
    a put ("sendHeaders has already been called" in its log), which the client sees as
    an ``ApplicationError`` from ``kv.py`` and answers by shutting the application down.
    That is skein's bug, not tf-yarn's launch path: the bench reruns such a run once.
    """
    return "skein/kv.py" in error and "skein.exceptions.ApplicationError" in error


def tfyarn070_rows(sec: str, res: Mapping[str, Sequence[dict | None]]) -> list[Row]:
    """The tf-yarn 0.7.0 comparison's rows: each moment for both tools, warm and cold
    where measured, their paired ratio (tfyarn / tf-yarn: below 1, tfyarn is faster),
    and the phases of both packers on a cold launch."""
    rows: list[Row] = []

    def row(name: str, unit: str, values: Sequence[float | None], note: str = "") -> None:
        rows.append(Row(sec, name, unit, [float(v) for v in values if v is not None], note))

    def col(variant: str, key: str) -> list[float | None]:
        return [r.get(key) if r else None for r in res.get(variant, [])]

    moments = [("all_containers_running", "submit -> all containers RUNNING"),
               ("first_step", "submit -> first training step"),
               ("finished", "submit -> run finished")]  # fmt: skip
    for temp in ("warm", "cold"):
        ours, theirs = f"tfyarn {temp}", f"tf-yarn 0.7.0 {temp}"
        if ours not in res or theirs not in res:
            continue
        for key, label in moments:
            row(f"{theirs}: {label}", "s", col(theirs, key))
            row(f"{ours}: {label}", "s", col(ours, key))
            row(f"{temp}: tfyarn / tf-yarn 0.7.0, {label.split('-> ')[1]}", "x",
                paired_ratios(col(ours, key), col(theirs, key)),
                "paired per repetition; below 1: tfyarn is faster")  # fmt: skip
    if "tfyarn cold" in res and "tf-yarn 0.7.0 cold" in res:
        for phase in ("pack", "upload"):
            row(f"tf-yarn 0.7.0 cold phase: {phase}", "s",
                [(r.get("phases") or {}).get(phase) if r else None
                 for r in res["tf-yarn 0.7.0 cold"]],
                "cluster-pack's pex build; WebHDFS upload")  # fmt: skip
            row(f"tfyarn cold phase: {phase}", "s",
                [(r.get("launch_phases") or {}).get(f"env_{phase}") if r else None
                 for r in res["tfyarn cold"]],
                "tar streamed to WebHDFS: pack until tar ends, upload the rest")  # fmt: skip
        sizes = [r["env_size"] for r in res["tf-yarn 0.7.0 cold"] if r and r.get("env_size")]
        if sizes:
            row("tf-yarn 0.7.0 environment (pex) size", "MiB", [sizes[0] / 2**20])
    return rows


def since(t0: float, t: float | None) -> float | None:
    return None if t is None or not t else t - t0


def latest(values: Sequence[float | None]) -> float | None:
    """The last of several moments, or ``None`` if any of them has not happened."""
    if not values or any(v is None or not v for v in values):
        return None
    return max(v for v in values if v is not None)


# -- container side: the benchmark's experiment --------------------------------------------------
def _task_name() -> str:
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = tf_config.get("task") or {}
    return f"{task.get('type', 'local')}-{task.get('index', 0)}"


def _step_hook(stats_prefix: str) -> Any:
    """A training hook that writes each step's time to ``<stats_prefix>.<task>.json``."""
    import tensorflow as tf

    class StepTimes(tf.estimator.SessionRunHook):
        def begin(self) -> None:
            self.ends: list[float] = []
            self.durations: list[float] = []
            self._before = 0.0

        def before_run(self, run_context: Any) -> None:
            self._before = time.time()

        def after_run(self, run_context: Any, run_values: Any) -> None:
            now = time.time()
            self.ends.append(now)
            self.durations.append(now - self._before)

        def end(self, session: Any) -> None:
            record = {
                "first_step": self.ends[0] if self.ends else None,
                "last_step": self.ends[-1] if self.ends else None,
                "steps": len(self.ends),
                "durations": self.durations,
            }
            Path(f"{stats_prefix}.{_task_name()}.json").write_text(json.dumps(record))

    return StepTimes()


def bench_experiment(model_dir: str, max_steps: int, stats_prefix: str) -> Any:
    """notebooks/cancer.py's experiment, with a hook timing each training step."""
    import cancer  # shipped with files={"cancer.py": ...}

    exp = cancer.experiment(model_dir, max_steps=max_steps)
    hooks = (*(exp.train_spec.hooks or ()), _step_hook(stats_prefix))
    return exp._replace(train_spec=exp.train_spec._replace(hooks=hooks))


def local_train(model_dir: str, max_steps: int, stats_prefix: str) -> None:
    """The same estimator run in this process (what ``python -m ... local`` does)."""
    import tensorflow as tf

    os.environ.pop("TF_CONFIG", None)
    exp = bench_experiment(model_dir, max_steps, stats_prefix)
    tf.estimator.train_and_evaluate(exp.estimator, exp.train_spec, exp.eval_spec)


# -- I/O ---------------------------------------------------------------------------------------
def require_cluster_env() -> None:
    if not os.environ.get("HADOOP_CONF_DIR"):
        raise SystemExit(
            "tfyarn_jupyter.bench: HADOOP_CONF_DIR is not set, so there is no cluster to "
            'measure. Start the sandbox and export its environment first: eval "$(tfyarn-sandbox '
            'env)" (with TFYARN_SANDBOX_DIR set as for `tfyarn-sandbox start`).'
        )


def _state(x: Any) -> str:
    return str(getattr(x, "name", x))


@dataclasses.dataclass
class Config:
    reps: int
    smoke: bool
    out: Path
    max_steps: int
    watch_sizes: tuple[int, ...]
    watch_polls: int
    bare_reps: int
    venv_pack_timeout_s: float
    tfyarn070: bool
    sandbox_start: bool


def config(reps: int, smoke: bool, out: Path) -> Config:
    if smoke:
        return Config(reps, True, out, 100, (2,), 5, 1, 30.0, True, False)
    return Config(reps, False, out, 300, (1, 2, 8, 32, 48), 20, 5, 900.0, True, True)


def topologies(smoke: bool) -> dict[str, dict[str, Any]]:
    from .spec import TaskSpec

    small = TaskSpec("1G", 1)
    out = {"chief+evaluator": {"chief": small, "evaluator": small}}
    if not smoke:
        out["chief+2 workers+ps+evaluator"] = {
            "chief": small,
            "worker": TaskSpec("1G", 1, instances=2),
            "ps": TaskSpec("512M", 1),
            "evaluator": small,
        }
    return out


class Bench:
    """Runs the measurements; everything it submits is killed in :meth:`close`."""

    def __init__(self, cfg: Config) -> None:
        from . import launch

        self.cfg = cfg
        self.client = launch.get_client()
        self.tmp = Path(tempfile.mkdtemp(prefix="tfyarn-bench-"))
        self.rows: list[Row] = []
        self.details: dict[str, Any] = {}
        self.notes: list[str] = []
        #: What failed: a --smoke run with any exits non-zero, so CI notices a rotten path.
        self.failures: list[str] = []
        self._apps: list[str] = []
        self._runs: list[Any] = []
        self._hdfs_leftovers: list[str] = []

    # -- bookkeeping ---------------------------------------------------------------------------
    def row(self, section: str, name: str, unit: str, values: Sequence[float | None] = (),
            note: str = "") -> Row:  # fmt: skip
        r = Row(section, name, unit, [float(v) for v in values if v is not None], note)
        self.rows.append(r)
        return r

    def log(self, msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def failed(self, msg: str) -> None:
        """Record a failed measurement: a note in the output, and a failure for the exit code."""
        self.log(f"  !! {msg}")
        self.notes.append(msg)
        self.failures.append(msg)

    def submit_app(self, spec: Any) -> str:
        app_id = self.client.submit(spec)
        self._apps.append(app_id)
        return app_id

    def kill(self, app_id: str) -> None:
        with contextlib.suppress(Exception):
            if _state(self.client.application_report(app_id).state) not in ENDED:
                self.client.kill_application(app_id)

    def close(self) -> None:
        for run in self._runs:
            with contextlib.suppress(Exception):
                if not run._poller.ended:
                    run.cancel()
        for app_id in self._apps:
            self.kill(app_id)
        for path in self._hdfs_leftovers:
            self._hdfs_delete(path)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _hdfs_delete(self, path: str) -> None:
        from . import filesystem

        with contextlib.suppress(Exception):
            filesystem.client().delete(filesystem.strip_scheme(path))

    # -- 1. floor: bare skein, import tensorflow ----------------------------------------------
    def floor_spec(self, topology: Mapping[str, Any]) -> Any:
        import skein

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

    def watch_skein_app(self, app_id: str, t0: float, n_tasks: int, timeout: float = 600) -> dict:
        """Poll a plain skein application to its end; moments relative to ``t0`` (seconds)."""
        deadline = time.monotonic() + timeout
        am = None
        starts: dict[str, float] = {}
        running_at = None
        while True:
            report = self.client.application_report(app_id)
            state = _state(report.state)
            if state == "RUNNING" and running_at is None:
                running_at = time.time()
            if state == "RUNNING":
                with contextlib.suppress(Exception):
                    am = am or self.client.connect(app_id, wait=False)
                    for c in am.get_containers(states=["RUNNING", "SUCCEEDED", "FAILED", "KILLED"]):
                        if c.start_time:
                            starts[c.id] = c.start_time.timestamp()
            if state in ENDED:
                break
            if time.monotonic() > deadline:
                self.kill(app_id)
                raise TimeoutError(f"{app_id} still {state} after {timeout}s")
            time.sleep(0.2)
        finish = report.finish_time.timestamp() if report.finish_time else time.time()
        return {
            "final": f"{state}/{_state(report.final_status)}",
            "app_running": since(t0, running_at),
            "all_running": since(t0, max(starts.values())) if len(starts) >= n_tasks else None,
            "done": finish - t0,
        }

    def measure_floor(self, topology: Mapping[str, Any]) -> dict:
        n = sum(s.instances for s in topology.values())
        t0 = time.time()
        app_id = self.submit_app(self.floor_spec(topology))
        try:
            return self.watch_skein_app(app_id, t0, n)
        finally:
            self.kill(app_id)

    # -- 2, 3. tfyarn launches -------------------------------------------------------------
    @contextlib.contextmanager
    def cold(self) -> Iterator[dict[str, str]]:
        """An environment with no archive anywhere: a fresh content key, an empty local cache.

        The shared archive of this venv is left alone (other clients of the cluster
        may be localising it right now); instead the key gets a unique suffix, so
        ``ensure_env`` finds nothing on HDFS or in the local cache and packs,
        uploads and has YARN localise a never-seen archive, as on a first launch.
        """
        from . import packing

        original = packing.env_key
        salt = uuid.uuid4().hex[:8]
        seen: dict[str, str] = {}

        def salted(prefix: Path | None = None) -> str:
            key = f"{original(prefix)}-cold{salt}"
            seen["key"] = key
            return key

        cache = self.tmp / f"cache-{salt}"
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

    def measure_cold_prepare(self) -> dict:
        """--smoke's cold variant: ``ensure_env`` with no archive (pack + upload), no run."""
        from . import filesystem, packing

        with self.cold() as seen:
            t0 = time.perf_counter()
            report = packing.ensure_env()
            total = time.perf_counter() - t0
        self._hdfs_delete(f"{filesystem.home()}/.tfyarn/envs/{seen['key']}.tar")
        phases = {f"env_{k}": v for k, v in report.times.items()}
        return {"launch_phases": {**phases, "total": total}, "chief_phases": {}}

    def measure_tfyarn(self, topology: Mapping[str, Any], *, cold: bool) -> dict:
        from . import filesystem
        from .launch import events_snapshot, submit

        tag = uuid.uuid4().hex[:8]
        model_dir = self.tmp / f"model-{tag}"
        stats_prefix = str(self.tmp / f"steps-{tag}")
        fn = functools.partial(bench_experiment, str(model_dir), self.cfg.max_steps, stats_prefix)
        remote = None
        t0 = time.time()
        env_ctx: contextlib.AbstractContextManager[dict[str, str]] = (
            self.cold() if cold else contextlib.nullcontext({})
        )
        with env_ctx as seen:
            run = submit(
                fn,
                topology,
                files={"cancer.py": str(CANCER)},
                name=f"tfyarn-bench-{'cold' if cold else 'warm'}",
            )
            if cold and "key" in seen:
                remote = f"{filesystem.home()}/.tfyarn/envs/{seen['key']}.tar"
                self._hdfs_leftovers.append(remote)
        t_submitted = time.time()
        self._runs.append(run)
        first_metrics = None
        try:
            deadline = time.monotonic() + 900
            while True:
                st = run.status()
                if st.metrics and first_metrics is None:
                    first_metrics = time.time()
                if st.ended:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{run.app_id} did not end within 900 s")
                time.sleep(0.25)
        finally:
            if not run._poller.ended:
                run.cancel()
            if remote:  # only this run used the salted archive
                self._hdfs_delete(remote)
        ev = events_snapshot(run)
        chief = ev.task("chief:0")
        steps = self._read_steps(stats_prefix, "chief-0")
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
        out["chief_phases"] = {
            "allocation (submit returned -> chief container RUNNING)": since(
                t_submitted, chief_start
            ),
            "localisation + interpreter (container RUNNING -> task process up)": since(
                chief_start or 0, chief.get("container", {}).get("t")
            )
            if chief_start
            else None,
            "import + build experiment (process up -> start)": since(
                chief.get("container", {}).get("t", 0), chief.get("start", {}).get("t")
            )
            if chief.get("container")
            else None,
            "first step (train_start -> first step)": since(
                chief.get("train_start", {}).get("t", 0), steps.get("first_step")
            )
            if chief.get("train_start")
            else None,
        }
        return out

    def _read_steps(self, prefix: str, task: str) -> dict[str, Any]:
        path = Path(f"{prefix}.{task}.json")
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return {}

    # -- 6a. local training ----------------------------------------------------------------
    def measure_local(self) -> dict:
        tag = uuid.uuid4().hex[:8]
        prefix = str(self.tmp / f"steps-{tag}")
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from tfyarn_jupyter.bench import local_train; "
            "local_train(sys.argv[2], int(sys.argv[3]), sys.argv[4])"
        )
        env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
        t0 = time.time()
        proc = subprocess.run(
            [sys.executable, "-c", code, str(CANCER.parent), str(self.tmp / f"model-{tag}"),
             str(self.cfg.max_steps), prefix],
            capture_output=True, text=True, env=env, timeout=900,
        )  # fmt: skip
        wall = time.time() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"local training failed: {proc.stderr[-2000:]}")
        steps = self._read_steps(prefix, "local-0")
        return {"wall": wall, "steps_per_s": step_rate(steps.get("durations") or [])}

    # -- launch comparisons (1, 2, 3, 6) ----------------------------------------------------
    def launches(self) -> None:
        from . import packing

        self.log("warming the environment cache (ensure_env)")
        warm_report = packing.ensure_env()
        self.details["warm_env"] = dataclasses.asdict(warm_report)
        for topo_name, topo in topologies(self.cfg.smoke).items():
            variants = ["floor", "warm", "cold"]
            if topo_name == "chief+evaluator":
                variants.append("local")
            results: dict[str, list[dict | None]] = {v: [] for v in variants}
            for rep, variant in interleave(variants, self.cfg.reps):
                self.log(f"{topo_name}: rep {rep + 1}/{self.cfg.reps} {variant}")
                try:
                    if variant == "floor":
                        res = self.measure_floor(topo)
                    elif variant == "local":
                        res = self.measure_local()
                    elif variant == "cold" and self.cfg.smoke:
                        res = self.measure_cold_prepare()
                    else:
                        res = self.measure_tfyarn(topo, cold=variant == "cold")
                    self.log(f"  -> {json.dumps(res, default=str)[:600]}")
                except Exception as exc:
                    self.failed(f"{topo_name} {variant} rep {rep + 1} failed: {exc}")
                    res = None
                results[variant].append(res)
            self.details.setdefault("launches", {})[topo_name] = results
            self._launch_rows(topo_name, results)

    def _launch_rows(self, topo: str, results: Mapping[str, Sequence[dict | None]]) -> None:
        def col(variant: str, key: str) -> list[float | None]:
            return [r.get(key) if r else None for r in results.get(variant, [])]

        sec = f"launch: {topo}"
        fl_run, fl_done = col("floor", "all_running"), col("floor", "done")
        self.row(sec, "floor (bare skein, import tensorflow): submit -> all containers RUNNING",
                 "s", fl_run)  # fmt: skip
        self.row(sec, "floor: submit -> all done", "s", fl_done)
        for v in ("warm", "cold"):
            if v == "cold" and self.cfg.smoke:
                continue  # --smoke's cold variant packs and uploads only: phases below
            self.row(sec, f"tfyarn {v}: submit -> all containers RUNNING", "s",
                     col(v, "all_containers_running"), "skein container start times")  # fmt: skip
            self.row(sec, f"tfyarn {v}: submit -> all tasks running (panel)", "s",
                     col(v, "all_tasks_running"), "each task's `container` event")  # fmt: skip
            self.row(sec, f"tfyarn {v}: submit -> first training step", "s",
                     col(v, "first_step"), "chief's step hook")  # fmt: skip
            self.row(sec, f"tfyarn {v}: submit -> first metrics on the panel", "s",
                     col(v, "first_metrics_seen"), "polled every 0.25 s")  # fmt: skip
            self.row(sec, f"tfyarn {v}: submit -> run finished", "s", col(v, "finished"),
                     f"max_steps={self.cfg.max_steps}")  # fmt: skip
            self.row(sec, f"tfyarn {v} / floor: all running", "x",
                     paired_ratios(col(v, "all_containers_running"), fl_run),
                     "paired per repetition")  # fmt: skip
            self.row(sec, f"tfyarn {v} / floor: done", "x",
                     paired_ratios(col(v, "finished"), fl_done), "includes training")  # fmt: skip
        cold = [r for r in results.get("cold", []) if r]
        phase_names = ["env_key", "env_check", "env_pack", "env_upload", "validate", "client",
                       "queue_check", "load_check_wait", "submit", "total"]  # fmt: skip
        if self.cfg.smoke:  # its cold variant stops after the upload: no later phases
            phase_names = [p for p in phase_names if any(p in r["launch_phases"] for r in cold)]
        for p in phase_names:
            self.row(sec, f"tfyarn cold phase: {p}", "s",
                     [r["launch_phases"].get(p) for r in cold], "Run.phases")  # fmt: skip
        for p in cold[0]["chief_phases"] if cold else {}:
            self.row(sec, f"tfyarn cold phase: {p}", "s", [r["chief_phases"][p] for r in cold])
        warm = [r for r in results.get("warm", []) if r]
        for p in ("env_key", "env_check", "total"):
            self.row(sec, f"tfyarn warm phase: {p}", "s",
                     [r["launch_phases"].get(p) for r in warm], "Run.phases")  # fmt: skip
        if "local" in results:
            loc = col("local", "steps_per_s")
            chief = col("warm", "chief_steps_per_s")
            sec6 = "training overhead"
            self.row(sec6, "local process: steps/s", "steps/s", loc,
                     "1 / median step time, train_and_evaluate")  # fmt: skip
            self.row(sec6, f"tfyarn chief ({topo}): steps/s", "steps/s", chief,
                     "1 / median step time, warm runs")  # fmt: skip
            self.row(sec6, "tfyarn chief / local", "x", paired_ratios(chief, loc),
                     "paired per repetition")  # fmt: skip

    # -- 3b. the pack phase against tar and venv-pack ---------------------------------------
    def _venv_pack_path(self) -> tuple[str | None, str]:
        """A PYTHONPATH entry holding venv_pack, or None and why not."""
        try:
            import venv_pack  # noqa: F401

            return "", "venv-pack from the venv"
        except ImportError:
            pass
        if (VENV_PACK_TARGET / "venv_pack").is_dir():
            return str(VENV_PACK_TARGET), f"venv-pack installed in {VENV_PACK_TARGET}"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--target", str(VENV_PACK_TARGET), "venv-pack"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if proc.returncode != 0:
            return None, f"venv-pack could not be installed: {proc.stderr.strip()[-300:]}"
        return str(VENV_PACK_TARGET), f"venv-pack installed in {VENV_PACK_TARGET} (pip --target)"

    def packing(self) -> None:
        from . import packing

        if self.cfg.smoke:  # the code path on a tiny venv; the real ones take minutes
            prefix = self.tmp / "tiny-venv"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)],
                           check=True, capture_output=True)  # fmt: skip
            self._packing(prefix, "a tiny venv (--smoke)")
            return
        self._packing(packing.venv_prefix(), "this venv")
        # venv-pack refuses a venv with an editable install, as this one is; tf-yarn's
        # venv (TensorFlow, no editable install) gives its defaults a venv they accept.
        self._tfyarn070_env()
        self._packing(TFYARN070_VENV, "tf-yarn 0.7.0's venv")

    def _packing(self, prefix: Path, what: str) -> None:
        from . import packing

        size = sum(
            f.stat().st_size for f in prefix.rglob("*") if f.is_file() and not f.is_symlink()
        )
        self.details.setdefault("venv_bytes", {})[what] = size
        vp_path, vp_note = self._venv_pack_path()
        variants = ["tfyarn pack (tar, its excludes)", "tar -cf (I/O floor)", "venv-pack defaults"]
        res: dict[str, list[float | None]] = {v: [] for v in variants}
        skip_vp = ""
        for rep, variant in interleave(variants, self.cfg.reps):
            dest = self.tmp / f"pack-{rep}.out"
            t0 = time.perf_counter()
            value: float | None = None
            try:
                if variant.startswith("tfyarn"):
                    packing.pack(prefix, dest)
                    value = time.perf_counter() - t0
                elif variant.startswith("tar"):
                    subprocess.run(["tar", "-cf", str(dest), "-C", str(prefix), "."], check=True,
                                   capture_output=True)  # fmt: skip
                    value = time.perf_counter() - t0
                elif vp_path is None:
                    skip_vp = vp_note
                elif skip_vp:
                    pass
                else:
                    code = (
                        "import sys, venv_pack; "
                        "venv_pack.pack(prefix=sys.argv[1], output=sys.argv[2])"
                    )
                    env = dict(os.environ, PYTHONPATH=vp_path) if vp_path else None
                    proc = subprocess.run(
                        [sys.executable, "-c", code, str(prefix), str(dest) + ".tar.gz"],
                        capture_output=True, text=True, env=env,
                        timeout=self.cfg.venv_pack_timeout_s,
                    )  # fmt: skip
                    if proc.returncode != 0:
                        skip_vp = f"venv-pack failed: {proc.stderr.strip()[-300:]}"
                    else:
                        value = time.perf_counter() - t0
            except subprocess.TimeoutExpired:
                skip_vp = f"skipped: took over {self.cfg.venv_pack_timeout_s:.0f} s"
            finally:
                for f in self.tmp.glob(f"pack-{rep}.out*"):
                    f.unlink(missing_ok=True)
            self.log(f"pack rep {rep + 1} {variant}: {value}")
            res[variant].append(value)
        sec = f"pack: {what} ({size / 2**20:.0f} MiB)"
        self.row(sec, variants[0], "s", res[variants[0]], "packing.pack")
        self.row(sec, variants[1], "s", res[variants[1]], "page cache warm")
        self.row(sec, variants[2], "s", res[variants[2]], skip_vp or f"{vp_note}; .tar.gz")
        self.row(sec, "tfyarn pack / tar -cf", "x",
                 paired_ratios(res[variants[0]], res[variants[1]]))  # fmt: skip

    # -- 5 + issue 4: watching cost, kill -> panel latency ----------------------------------
    def sleeper(self, n: int) -> tuple[Any, dict[str, Any]]:
        import skein

        from .spec import TaskSpec

        def svc(instances: int) -> Any:
            return skein.Service(resources=skein.Resources(memory=128, vcores=1),
                                 script="sleep 900", instances=instances,
                                 allow_failures=True)  # fmt: skip

        services = {"chief": svc(1)}
        specs: dict[str, Any] = {"chief": TaskSpec(128, 1)}
        if n > 1:
            services["worker"] = svc(n - 1)
            specs["worker"] = TaskSpec(128, 1, n - 1)
        spec = skein.ApplicationSpec(name=f"tfyarn-bench-watch-{n}", queue="default",
                                     services=services, max_attempts=1)  # fmt: skip
        return spec, specs

    def _fill_events(self, am: Any, tasks: Sequence[str]) -> None:
        """The key-value store a real run of this size would have: 4 events per task, 5 metrics."""
        import skein

        from . import events

        ops = []
        for t in tasks:
            for kind in ("container", "init", "start", "train_start"):
                value = events.encode({"host": "sandbox", "address": "h:1"})
                ops.append(skein.kv.put(events.task_key(t, kind), value))
        for step in range(0, 500, 100):
            value = events.encode({"step": step, "accuracy": 0.9, "loss": 0.1})
            ops.append(skein.kv.put(events.metrics_key(step), value))
        am.kv.transaction(on_success=ops)

    def watching(self) -> None:
        from .poller import StatusSource
        from .spec import task_names

        interval = 1.0  # the panel's Poller interval (widget.RunPanel default)
        sec = "watching cost"
        for n in self.cfg.watch_sizes:
            spec, specs = self.sleeper(n)
            app_id = self.submit_app(spec)
            try:
                am = self.client.connect(app_id)
                self._fill_events(am, task_names(specs))
                deadline = time.monotonic() + 120
                while True:
                    running = len(am.get_containers(states=["RUNNING"]))
                    if running >= min(n, 2) or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
                source = StatusSource(self.client, app_id, specs)
                source.poll()  # the first poll also reads the node labels
                calls, ms = [], []
                for _ in range(self.cfg.watch_polls):
                    c0, t0 = source.calls, time.perf_counter()
                    source.poll()
                    ms.append((time.perf_counter() - t0) * 1000)
                    calls.append(source.calls - c0)
                running = len(am.get_containers(states=["RUNNING"]))
                note = f"{running} of {n} containers running (the rest requested)"
                self.row(sec, f"{n} tasks: calls per poll", "calls", calls, note)
                self.row(sec, f"{n} tasks: ms per poll", "ms", ms, note)
                s_calls, s_ms = summarize(calls), summarize(ms)
                if s_calls and s_ms:
                    self.row(sec, f"{n} tasks: RM/AM calls per minute a panel adds", "calls/min",
                             [calls_per_minute(s_calls.median, s_ms.median, interval)],
                             f"Poller interval {interval:g} s + median poll time")  # fmt: skip
                if n == max(self.cfg.watch_sizes):
                    self._kill_latency(am, source, specs)
            finally:
                self.kill(app_id)

    def _kill_latency(self, am: Any, source: Any, specs: Mapping[str, Any]) -> None:
        """kill_container() -> StatusSource.poll() shows the task killed (polling back to back)."""
        workers = specs["worker"].instances if "worker" in specs else 0
        running = {f"{c.service_name}:{c.instance}" for c in am.get_containers(states=["RUNNING"])}
        targets = [f"worker:{i}" for i in range(workers) if f"worker:{i}" in running]
        targets = targets[: self.cfg.reps]
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
        self.row("panel latency", "container killed -> StatusSource.poll shows it", "s", values,
                 "back-to-back polls; the panel adds up to its 1 s interval")  # fmt: skip

    # -- issue 2: bare skein latency, sandbox start ----------------------------------------
    def bare_skein(self) -> None:
        import skein

        spec = skein.ApplicationSpec(
            name="tfyarn-bench-bare", queue="default", max_attempts=1,
            services={"noop": skein.Service(resources=skein.Resources(128, 1), script="true")},
        )  # fmt: skip
        running, finished = [], []
        for rep in range(self.cfg.bare_reps):
            t0 = time.time()
            app_id = self.submit_app(spec)
            try:
                r = self.watch_skein_app(app_id, t0, 1, timeout=300)
            finally:
                self.kill(app_id)
            self.log(f"bare skein rep {rep + 1}: {r}")
            running.append(r["app_running"])
            finished.append(r["done"])
        sec = "skein (bare application)"
        self.row(sec, "submit -> application RUNNING", "s", running, "polled every 0.2 s")
        self.row(sec, "submit -> FINISHED", "s", finished, "service runs `true`")

    def sandbox_start(self) -> None:
        from .sandbox import Sandbox

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
        self.row("sandbox", "start (jars cached) -> ready", "s", [value] if value else [], note)

    # -- 4. tf-yarn 0.7.0 ------------------------------------------------------------------
    def tfyarn070(self) -> None:
        sec = "tf-yarn 0.7.0 (PyPI)"
        try:
            self._tfyarn070(sec, topologies(False)["chief+evaluator"])
        except Exception as exc:
            why = f"could not run: {type(exc).__name__}: {str(exc)[-400:]}"
            self.row(sec, "chief+evaluator: submit -> run finished", "s", [], why)
            self.failed(f"tf-yarn 0.7.0 {why}")

    def _tfyarn070_env(self) -> dict[str, str]:
        """tf-yarn 0.7.0 in a venv of its own, with this venv's TensorFlow and scikit-learn.

        Returns the environment its driver runs in (the venv activated: its packer
        calls ``pex`` from ``PATH``). pyarrow is held below 22, whose wheels refuse
        NumPy 1.x, which TensorFlow 2.15 needs.
        """
        from importlib.metadata import version

        py = TFYARN070_VENV / "bin" / "python"
        pins = [f"{d}=={version(d)}" for d in ("tensorflow-cpu", "scikit-learn", "numpy")]
        marker = TFYARN070_VENV / ".tfyarn-bench"
        wanted = " ".join(["tf-yarn==0.7.0", "pyarrow<22", *pins])
        if not marker.exists() or marker.read_text() != wanted:
            from . import packing

            shutil.rmtree(TFYARN070_VENV, ignore_errors=True)
            base = packing.base_interpreter(packing.venv_prefix())
            subprocess.run([base, "-m", "venv", str(TFYARN070_VENV)], check=True,
                           capture_output=True)  # fmt: skip
            proc = subprocess.run(
                [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 *wanted.split()],
                capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"pip install {wanted} failed: {proc.stderr[-400:]}")
            marker.write_text(wanted)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CONFIG")}
        env["VIRTUAL_ENV"] = str(TFYARN070_VENV)
        env["PATH"] = f"{TFYARN070_VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        return env

    def _tfyarn070(self, sec: str, topology: Mapping[str, Any]) -> None:
        from . import filesystem, packing

        self.log("tf-yarn 0.7.0: its venv, then both environments on HDFS (warm-up)")
        packing.ensure_env()  # "tfyarn warm" means this venv's archive is on HDFS
        env = self._tfyarn070_env()
        warm_path = f"{filesystem.home()}/.tfyarn/bench/tfyarn070-warm.pex"
        self.notes.append(
            "tf-yarn 0.7.0 packs with its own packer (cluster-pack: a pex resolved from the "
            "venv's requirements, pex's download cache warm), uploaded through fsspec's "
            "WebHDFS: its default hdfs:// upload needs libhdfs.so, which nothing here provides"
        )
        warmup = self._tfyarn070_run(env, topology, warm_path, cold=False)
        self.details["tfyarn070_warmup"] = warmup
        self._hdfs_leftovers += [warm_path, warm_path.replace(".pex", ".json")]
        variants = ["tf-yarn 0.7.0 warm", "tfyarn warm"]
        if not self.cfg.smoke:  # --smoke: the warm-up above already packed tf-yarn's env
            variants += ["tf-yarn 0.7.0 cold", "tfyarn cold"]
        res: dict[str, list[dict | None]] = {v: [] for v in variants}
        for rep, variant in interleave(variants, self.cfg.reps):
            self.log(f"tf-yarn comparison rep {rep + 1} {variant}")
            out: dict | None = None
            cold = variant.endswith("cold")
            try:
                if variant.startswith("tfyarn"):
                    out = self.measure_tfyarn(topology, cold=cold)
                else:
                    path = warm_path
                    if cold:
                        path = f"{filesystem.home()}/.tfyarn/bench/tfyarn070-{uuid.uuid4().hex}.pex"
                    out = self._tfyarn070_run(env, topology, path, cold=cold)
                    if not str(out.get("final", "")).endswith("SUCCEEDED") and skein_kv_race(
                        str(out.get("error", ""))
                    ):
                        self.notes.append(
                            f"{variant} rep {rep + 1}: skein's master failed a key-value put "
                            f"of tf-yarn's (its watch race, {out.get('app_id')}); run again"
                        )
                        self.log(f"  !! {self.notes[-1]}")
                        out = self._tfyarn070_run(env, topology, path, cold=cold)
                if out and not str(out.get("final", "")).endswith("SUCCEEDED"):
                    raise RuntimeError(f"ended {out.get('final')}: {out.get('error', '')}")
            except Exception as exc:
                self.failed(f"{variant} rep {rep + 1} failed: {str(exc)[-400:]}")
                out = None
            self.log(f"  -> {json.dumps(out, default=str)[:400]}")
            res[variant].append(out)
        self.details["tfyarn070"] = res
        self.rows += tfyarn070_rows(sec, res)

    def _tfyarn070_run(
        self, env: Mapping[str, str], topology: Mapping[str, Any], env_path: str, *, cold: bool
    ) -> dict:
        """One tf-yarn run through its driver; moments relative to the driver's start."""
        tag = uuid.uuid4().hex[:8]
        pex_root = self.tmp / f"pex-root-070-{tag}"
        cfg = {
            "env_path": env_path,
            "cold": cold,
            "name": f"tfyarn-bench-tfyarn070-{tag}",
            "specs": {
                t: {"memory": s.memory, "vcores": s.vcores, "instances": s.instances}
                for t, s in topology.items()
            },
            "cancer": str(CANCER),
            "model_dir": str(self.tmp / f"model-070-{tag}"),
            "max_steps": self.cfg.max_steps,
            "stats": str(self.tmp / f"steps-070-{tag}"),
            "pex_root": str(pex_root),
        }
        try:
            proc = subprocess.run(
                [str(TFYARN070_VENV / "bin" / "python"), str(TFYARN070_DRIVER), json.dumps(cfg)],
                capture_output=True, text=True, timeout=1800, cwd=self.tmp, env=dict(env),
            )  # fmt: skip
        finally:
            shutil.rmtree(pex_root, ignore_errors=True)  # the containers' unzipped pex
            if cold:
                for p in (env_path, env_path.replace(".pex", ".json")):
                    self._hdfs_delete(p)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("TFYARN070 ")), None)
        if line is None:
            raise RuntimeError(f"tf-yarn 0.7.0 driver failed: {proc.stderr[-600:]}")
        raw = json.loads(line[len("TFYARN070 ") :])
        if raw.get("app_id"):
            self._apps.append(raw["app_id"])
        if raw.get("note") and raw["note"] not in self.notes:
            self.notes.append(raw["note"])
        t0 = raw["t0"]
        steps = raw.get("steps") or {}
        out = {
            "final": raw.get("final"),
            "error": raw.get("error"),
            "app_id": raw.get("app_id"),
            "phases": raw.get("phases", {}),
            "env_size": raw.get("env_size"),
            "all_containers_running": since(t0, raw.get("all_containers_running")),
            "first_step": since(t0, steps.get("first_step")),
            "finished": since(t0, raw.get("finished")),
            "chief_steps_per_s": step_rate(steps.get("durations") or []),
        }
        if raw.get("watch_error"):
            out["watch_error"] = raw["watch_error"]
        return out


#: Runs in tf-yarn 0.7.0's venv (see its docstring).
TFYARN070_DRIVER = Path(__file__).with_name("bench_tfyarn070.py")


def write_outputs(bench: Bench, started: float) -> tuple[Path, Path]:
    cfg = bench.cfg
    cfg.out.mkdir(parents=True, exist_ok=True)
    header = [
        f"# tfyarn_jupyter benchmarks ({'smoke' if cfg.smoke else 'full'}, reps={cfg.reps})",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on the sandbox "
        f"({os.environ.get('TFYARN_SANDBOX_DIR', '?')}), {os.cpu_count()} CPUs; variants "
        "interleaved per repetition; median, min, max of n. Containers: 1 GiB / 1 vcore "
        "(ps 512 MiB). Other clients may have been using the cluster at the same time.",
        *(f"- {n}" for n in bench.notes),
    ]
    md = cfg.out / "bench.md"
    md.write_text(render_markdown(bench.rows, header))
    js = cfg.out / "bench.json"
    js.write_text(json.dumps({
        "config": {k: str(v) if isinstance(v, Path) else v
                   for k, v in dataclasses.asdict(cfg).items()},
        "wall_s": time.time() - started,
        "rows": [r.to_dict() for r in bench.rows],
        "notes": bench.notes,
        "details": bench.details,
    }, indent=1, default=str))  # fmt: skip
    return md, js


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tfyarn_jupyter.bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--reps", type=int, default=5, help="repetitions per measurement (5)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every code path once, cheaply: smallest topology, short runs",
    )
    parser.add_argument("--out", type=Path, default=Path("build/bench"), help="output folder")
    parser.add_argument("--only", default="",
                        help="comma-separated sections: launches,packing,watching,bare,"
                             "sandbox,tfyarn070 (default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be >= 1")
    require_cluster_env()
    cfg = config(args.reps, args.smoke, args.out)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    started = time.time()
    bench = Bench(cfg)
    sections: list[tuple[str, Callable[[], None], bool]] = [
        ("bare", bench.bare_skein, True),
        ("watching", bench.watching, True),
        ("packing", bench.packing, True),
        ("sandbox", bench.sandbox_start, cfg.sandbox_start),
        ("launches", bench.launches, True),
        ("tfyarn070", bench.tfyarn070, cfg.tfyarn070),
    ]
    try:
        for name, fn, enabled in sections:
            if only and name not in only:
                continue
            if not enabled:
                msg = f"{name}: skipped in --smoke"
                bench.log(msg)
                bench.notes.append(msg)
                continue
            bench.log(f"== {name}")
            try:
                fn()
            except Exception as exc:
                bench.failed(f"{name} failed: {type(exc).__name__}: {exc}")
            write_outputs(bench, started)  # partial results survive an interruption
    finally:
        bench.close()
    md, js = write_outputs(bench, started)
    print(md.read_text())
    bench.log(f"wrote {md} and {js} in {time.time() - started:.0f} s")
    if cfg.smoke and bench.failures:
        bench.log(f"--smoke: {len(bench.failures)} measurement(s) failed, see the notes")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
