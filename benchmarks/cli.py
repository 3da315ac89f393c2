"""The command: parse the flags, run the sections in order, write bench.md and bench.json."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tfyarn_sandbox.fixtures import session_sandbox

import benchmarks

from .bare import bare_skein, sandbox_start
from .compression import compression
from .core import Bench, Config, config
from .current_tf import current_tf
from .gpus import gpus
from .hdfs_clients import hdfs_clients
from .launches import launches
from .layers import layers
from .packing import packing
from .stats import render_markdown
from .strategies import strategies
from .tf_hdfs import tf_hdfs
from .tfyarn070 import tfyarn070
from .training import training, training_1gb, training_1gb_few, training_1gb_spaced
from .watching import watching


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


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    doc = benchmarks.__doc__ or ""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=doc.split("\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions per measurement (5)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every code path once, cheaply: smallest topology, short runs",
    )
    parser.add_argument("--out", type=Path, default=Path("build/bench"), help="output folder")
    parser.add_argument("--only", default="",
                        help="comma-separated sections: launches,training,packing,hdfs,"
                             "tf_hdfs,watching,bare,sandbox,tfyarn070,current_tf,layers,"
                             "training_1gb,training_1gb_few,training_1gb_spaced,strategies,"
                             "compression,gpus "
                             "(default: all)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be >= 1")
    return args


def sections(cfg: Config) -> list[tuple[str, Callable[[Bench], None], bool]]:
    """Each section: its ``--only`` name, what runs it, and whether this mode runs it."""
    return [
        ("bare", bare_skein, True),
        ("watching", watching, True),
        ("packing", packing, True),
        ("compression", compression, True),
        ("hdfs", hdfs_clients, True),
        ("tf_hdfs", tf_hdfs, True),
        ("sandbox", sandbox_start, cfg.sandbox_start),
        ("launches", launches, True),
        ("training", training, not cfg.smoke),
        ("training_1gb", training_1gb, not cfg.smoke),
        ("training_1gb_few", training_1gb_few, not cfg.smoke),
        ("training_1gb_spaced", training_1gb_spaced, not cfg.smoke),
        ("strategies", strategies, not cfg.smoke),
        ("tfyarn070", tfyarn070, cfg.tfyarn070),
        ("current_tf", current_tf, not cfg.smoke),
        ("layers", layers, not cfg.smoke),
        ("gpus", gpus, not cfg.smoke),
    ]


def run_sections(bench: Bench, only: set[str], started: float) -> None:
    for name, fn, enabled in sections(bench.cfg):
        if only and name not in only:
            continue
        if not enabled:
            msg = f"{name}: skipped in --smoke"
            bench.log(msg)
            bench.notes.append(msg)
            continue
        bench.log(f"== {name}")
        try:
            fn(bench)
        except Exception as exc:
            bench.failed(f"{name} failed: {type(exc).__name__}: {exc}")
        write_outputs(bench, started)  # partial results survive an interruption


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # The same sandbox the test suites' fixture gives: the one at TFYARN_SANDBOX_DIR, reused
    # when it runs, else started here (and stopped at the end), its environment exported.
    with session_sandbox():
        return measure(args)


def measure(args: argparse.Namespace) -> int:
    cfg = config(args.reps, args.smoke, args.out)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    started = time.time()
    bench = Bench(cfg)
    try:
        run_sections(bench, only, started)
    finally:
        bench.close()
    md, js = write_outputs(bench, started)
    print(md.read_text())
    bench.log(f"wrote {md} and {js} in {time.time() - started:.0f} s")
    if cfg.smoke and bench.failures:
        bench.log(f"--smoke: {len(bench.failures)} measurement(s) failed, see the notes")
        return 1
    return 0
