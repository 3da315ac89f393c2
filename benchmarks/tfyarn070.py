"""4. criteo/tf-yarn 0.7.0 (PyPI) on the same experiment, its runs interleaved with ours.

tf-yarn runs in a venv of its own (kept in the output folder's cache),
through :mod:`benchmarks.tfyarn070_driver`, which that venv's interpreter
runs as a module: it sees the ``benchmarks`` package (for the shared step
hook) and nothing of ``tfyarn_jupyter``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.ship import packing

from . import launches
from .core import CANCER, PACKAGE, Bench, topologies
from .stats import interleave, since, skein_kv_race, step_rate, tfyarn070_rows
from .tfyarn070_driver import PREFIX

SECTION = "tf-yarn 0.7.0 (PyPI)"


def tfyarn070(bench: Bench) -> None:
    try:
        _compare(bench, topologies(False)["chief+evaluator"])
    except Exception as exc:
        why = f"could not run: {type(exc).__name__}: {str(exc)[-400:]}"
        bench.row(SECTION, "chief+evaluator: submit -> run finished", "s", [], why)
        bench.failed(f"tf-yarn 0.7.0 {why}")


def ensure_venv(bench: Bench) -> tuple[Path, dict[str, str]]:
    """tf-yarn 0.7.0 in a venv of its own, with this venv's TensorFlow and scikit-learn.

    Returns the venv and the environment its driver runs in (the venv activated:
    its packer calls ``pex`` from ``PATH``). pyarrow is held below 22, whose wheels
    refuse NumPy 1.x, which TensorFlow 2.15 needs.
    """
    venv = bench.cfg.cache / "venv-tfyarn070"
    py = venv / "bin" / "python"
    pins = [f"{d}=={version(d)}" for d in ("tensorflow-cpu", "scikit-learn", "numpy")]
    marker = venv / ".tfyarn-bench"
    wanted = " ".join(["tf-yarn==0.7.0", "pyarrow<22", *pins])
    if not marker.exists() or marker.read_text() != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        base = packing.base_interpreter(packing.venv_prefix())
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
        proc = subprocess.run(
            [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             *wanted.split()],
            capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"pip install {wanted} failed: {proc.stderr[-400:]}")
        marker.write_text(wanted)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CONFIG")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(_driver_path(bench))
    return venv, env


def _driver_path(bench: Bench) -> Path:
    """A ``PYTHONPATH`` entry holding only the ``benchmarks`` package (a link to it)."""
    entry = bench.tmp / "driver-path"
    entry.mkdir(exist_ok=True)
    link = entry / PACKAGE.name
    if not link.exists():
        link.symlink_to(PACKAGE, target_is_directory=True)
    return entry


def _compare(bench: Bench, topology: Mapping[str, Any]) -> None:
    bench.log("tf-yarn 0.7.0: its venv, then both environments on HDFS (warm-up)")
    packing.ensure_env()  # "tfyarn warm" means this venv's archive is on HDFS
    venv, env = ensure_venv(bench)
    warm_path = f"{filesystem.home()}/.tfyarn/bench/tfyarn070-warm.pex"
    bench.notes.append(
        "tf-yarn 0.7.0 packs with its own packer (cluster-pack: a pex resolved from the "
        "venv's requirements, pex's download cache warm), uploaded through fsspec's "
        "WebHDFS: its default hdfs:// upload needs libhdfs.so, which nothing here provides"
    )
    warmup = run_driver(bench, venv, env, topology, warm_path, cold=False)
    bench.details["tfyarn070_warmup"] = warmup
    bench.hdfs_leftovers += [warm_path, warm_path.replace(".pex", ".json")]
    variants = ["tf-yarn 0.7.0 warm", "tfyarn warm"]
    if not bench.cfg.smoke:  # --smoke: the warm-up above already packed tf-yarn's env
        variants += ["tf-yarn 0.7.0 cold", "tfyarn cold"]
    res: dict[str, list[dict | None]] = {v: [] for v in variants}
    for rep, variant in interleave(variants, bench.cfg.reps):
        bench.log(f"tf-yarn comparison rep {rep + 1} {variant}")
        out: dict | None = None
        try:
            out = _measure(bench, venv, env, topology, variant, rep, warm_path)
            if out and not str(out.get("final", "")).endswith("SUCCEEDED"):
                raise RuntimeError(f"ended {out.get('final')}: {out.get('error', '')}")
        except Exception as exc:
            bench.failed(f"{variant} rep {rep + 1} failed: {str(exc)[-400:]}")
            out = None
        bench.log(f"  -> {json.dumps(out, default=str)[:400]}")
        res[variant].append(out)
    bench.details["tfyarn070"] = res
    bench.rows += tfyarn070_rows(SECTION, res)


def _measure(
    bench: Bench, venv: Path, env: Mapping[str, str], topology: Mapping[str, Any],
    variant: str, rep: int, warm_path: str,
) -> dict:  # fmt: skip
    """One repetition of ``variant``: ours through tfyarn, theirs through the driver."""
    cold = variant.endswith("cold")
    if variant.startswith("tfyarn"):
        return launches.measure_tfyarn(bench, topology, cold=cold)
    path = warm_path
    if cold:
        path = f"{filesystem.home()}/.tfyarn/bench/tfyarn070-{uuid.uuid4().hex}.pex"
    out = run_driver(bench, venv, env, topology, path, cold=cold)
    if not str(out.get("final", "")).endswith("SUCCEEDED") and skein_kv_race(
        str(out.get("error", ""))
    ):
        bench.notes.append(
            f"{variant} rep {rep + 1}: skein's master failed a key-value put "
            f"of tf-yarn's (its watch race, {out.get('app_id')}); run again"
        )
        bench.log(f"  !! {bench.notes[-1]}")
        out = run_driver(bench, venv, env, topology, path, cold=cold)
    return out


def run_driver(
    bench: Bench, venv: Path, env: Mapping[str, str], topology: Mapping[str, Any],
    env_path: str, *, cold: bool,
) -> dict:  # fmt: skip
    """One tf-yarn run through its driver; moments relative to the driver's start."""
    tag = uuid.uuid4().hex[:8]
    pex_root = bench.tmp / f"pex-root-070-{tag}"
    cfg = {
        "env_path": env_path,
        "cold": cold,
        "name": f"tfyarn-bench-tfyarn070-{tag}",
        "specs": {
            t: {"memory": s.memory, "vcores": s.vcores, "instances": s.instances}
            for t, s in topology.items()
        },
        "cancer": str(CANCER),
        "model_dir": str(bench.tmp / f"model-070-{tag}"),
        "max_steps": bench.cfg.max_steps,
        "stats": str(bench.tmp / f"steps-070-{tag}"),
        "pex_root": str(pex_root),
    }
    try:
        proc = subprocess.run(
            [str(venv / "bin" / "python"), "-m", f"{PACKAGE.name}.tfyarn070_driver",
             json.dumps(cfg)],
            capture_output=True, text=True, timeout=1800, cwd=bench.tmp, env=dict(env),
        )  # fmt: skip
    finally:
        shutil.rmtree(pex_root, ignore_errors=True)  # the containers' unzipped pex
        if cold:
            for p in (env_path, env_path.replace(".pex", ".json")):
                bench.hdfs_delete(p)
    line = next((x for x in proc.stdout.splitlines() if x.startswith(PREFIX)), None)
    if line is None:
        raise RuntimeError(f"tf-yarn 0.7.0 driver failed: {proc.stderr[-600:]}")
    return _driver_result(bench, json.loads(line[len(PREFIX) :]))


def _driver_result(bench: Bench, raw: dict[str, Any]) -> dict:
    """The driver's report as the comparison's moments (seconds since its start)."""
    if raw.get("app_id"):
        bench.apps.append(raw["app_id"])
    if raw.get("note") and raw["note"] not in bench.notes:
        bench.notes.append(raw["note"])
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
