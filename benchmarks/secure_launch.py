"""Launch figures on the secure sandbox against the default one, and NameNode failover recovery.

``TFYARN_SANDBOX_DIR=build/sandbox python -m benchmarks.secure_launch [--reps N]`` (both
sandboxes running: the default one at ``TFYARN_SANDBOX_DIR`` (else its default folder),
the ``--kerberos --ha --viewfs --hosts`` one at ``TFYARN_SECURE_SANDBOX_DIR`` (else
``build/secure-sandbox``)).

Per repetition, interleaved: a warm and a cold launch on each sandbox (the default
one as its user, the secure one as ``alice`` with her ticket), each in a fresh
process: the quickstart's shape (chief 1 GiB + evaluator), timed from ``submit``
to every task running as the panel sees it, then cancelled. Cold: an environment
key nobody has (salted), so the environment is packed and uploaded; the salted
archive is deleted afterwards. Then one failover on the secure sandbox: the
seconds until HDFS answers again (``tfyarn-sandbox failover``) and the client's
first HDFS call after it. Not asserted; printed and written to
``build/bench-secure.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CANCER = ROOT / "notebooks" / "cancer.py"
MARK = "@@bench-secure@@"


def launch_once(cold: bool) -> dict[str, Any]:
    """In the child: one launch as this process's identity; seconds to all tasks running."""
    sys.path.insert(0, str(CANCER.parent))
    import cancer

    from tfyarn_jupyter.core.spec import TaskSpec
    from tfyarn_jupyter.hadoop import filesystem, resourcemanager
    from tfyarn_jupyter.run import launch as runs
    from tfyarn_jupyter.ship import packing

    resourcemanager.get_client()  # the skein driver's JVM start is not the launch's
    specs = {"chief": TaskSpec("1G", 1), "evaluator": TaskSpec("1G", 1)}
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-bench-secure/{uuid.uuid4().hex}")
    fn = functools.partial(cancer.experiment, model_dir, max_steps=100)
    original, salt, seen = packing.env_key, uuid.uuid4().hex[:8], {}

    def salted(prefix: Path | None = None) -> str:
        seen["key"] = f"{original(prefix)}-cold{salt}"
        return seen["key"]

    if cold:
        os.environ["TFYARN_CACHE"] = f"/tmp/tfyarn-bench-secure-{salt}"
        packing.env_key = salted
    t0 = time.perf_counter()
    run = runs.submit(fn, specs, files={"cancer.py": str(CANCER)}, name="tfyarn-bench-secure")
    submitted = time.perf_counter() - t0
    packing.env_key = original
    try:
        deadline = time.monotonic() + 900
        while True:
            st = run.status()
            if len(st.tasks) == len(specs) and all(t.state == "running" for t in st.tasks):
                break
            if st.ended or time.monotonic() > deadline:
                raise RuntimeError(f"{run.app_id} never had every task running: {st.app.state}")
            time.sleep(0.25)
        all_running = time.perf_counter() - t0
    finally:
        run.cancel()
        if cold and "key" in seen:
            with contextlib.suppress(Exception):
                filesystem.delete(f"{filesystem.home()}/.tfyarn/envs/{seen['key']}.tar")
    return {"submit_returned": submitted, "all_running": all_running,
            "phases": {k: round(v, 3) for k, v in run.phases.items()}}  # fmt: skip


def first_hdfs_call() -> dict[str, Any]:
    """In the child: how long the first HDFS call takes (a failover just happened)."""
    from tfyarn_jupyter.hadoop import filesystem

    t0 = time.perf_counter()
    filesystem.exists(filesystem.home())
    return {"first_call": time.perf_counter() - t0}


def _env(secure: bool) -> dict[str, str]:
    from tfyarn_sandbox.sandbox import Sandbox, default_root

    if not secure:
        return {**os.environ, **Sandbox(default_root()).env()}
    box = Sandbox(Path(os.environ.get("TFYARN_SECURE_SANDBOX_DIR", ROOT / "build/secure-sandbox")))
    env = {**os.environ, **box.env("alice")}
    for name in box.unset_vars("alice"):
        env.pop(name, None)
    return env


def _child(secure: bool, mode: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.secure_launch", "--child", mode],
        env=_env(secure), cwd=ROOT, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{mode} on {'secure' if secure else 'default'}: {proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK) :])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--child", choices=["warm", "cold", "hdfs"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        out = first_hdfs_call() if args.child == "hdfs" else launch_once(args.child == "cold")
        print(MARK + json.dumps(out))
        return 0
    from tfyarn_sandbox.sandbox import Sandbox

    results: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.reps):
        for kind in ("warm", "cold"):
            for secure in (False, True):
                res = _child(secure, kind)
                results.setdefault(f"{'secure' if secure else 'default'}-{kind}", []).append(res)
                print(f"{'secure' if secure else 'default'} {kind}: {res}", flush=True)
    box = Sandbox(Path(os.environ.get("TFYARN_SECURE_SANDBOX_DIR", ROOT / "build/secure-sandbox")))
    old, new, seconds = box.failover()
    first = _child(True, "hdfs")["first_call"]
    med = {k: statistics.median(r["all_running"] for r in v) for k, v in results.items()}
    summary = {
        "warm_secure_over_default": med["secure-warm"] / med["default-warm"],
        "cold_secure_over_default": med["secure-cold"] / med["default-cold"],
        "median_all_running_s": med,
        "failover": {
            "from": old,
            "to": new,
            "hdfs_answers_after_s": seconds,
            "client_first_call_s": first,
        },
    }
    print(json.dumps(summary, indent=1))
    path = ROOT / "build" / "bench-secure.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"runs": results, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
