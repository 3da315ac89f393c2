"""Layer compression (issue 23): what each codec costs and saves on a cold launch.

Layers ship as uncompressed tars today. Compressing them trades the client's compression
time and each node's decompression time for fewer bytes uploaded and localised. This
section measures that trade on the venv's own layers (``ship.layered_launch``'s plan:
what a cold launch ships), with no cluster:

- each layer tarred once (``tar_layer``, as a launch does), then, per codec, compressed
  (the client's side), and decompressed and unpacked into a scratch folder (a node's
  side), against unpacking the plain tar;
- the break-even bandwidth: below it a cold launch is faster compressed. The bytes cross
  the network twice (the upload to HDFS, then each node's localisation), so compressing
  pays when ``2 x (bytes saved) / bandwidth`` exceeds ``compression + (decompressing
  and unpacking - unpacking the plain tar)``.

``--smoke`` measures a tiny venv's layers, to run the code path in seconds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from tfyarn_jupyter.ship import layered_launch

from .core import Bench

SECTION = "layer compression (cold launch)"
#: (name, compress argv, decompress argv): each reads stdin and writes stdout.
CODECS = (
    ("gzip -1", ["gzip", "-1", "-c"], ["gzip", "-dc"]),
    ("zstd -1, 2 threads", ["zstd", "-1", "-T2", "-q", "-c"], ["zstd", "-dc", "-q"]),
    ("zstd -3, 2 threads", ["zstd", "-3", "-T2", "-q", "-c"], ["zstd", "-dc", "-q"]),
)


def _timed(argv: list[str], src: Path, dest: Path) -> float:
    t0 = time.perf_counter()
    with src.open("rb") as fin, dest.open("wb") as fout:
        subprocess.run(argv, stdin=fin, stdout=fout, check=True)
    return time.perf_counter() - t0


def _unpack(archive: Path, scratch: Path, decoder: list[str] | None) -> float:
    """Seconds to (decompress and) unpack ``archive`` into an empty ``scratch``, as a node
    does; the folder is emptied again after."""
    scratch.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with archive.open("rb") as fin:
        if decoder is None:
            subprocess.run(["tar", "-xf", "-", "-C", str(scratch)], stdin=fin, check=True)
        else:
            dec = subprocess.Popen(decoder, stdin=fin, stdout=subprocess.PIPE)
            subprocess.run(["tar", "-xf", "-", "-C", str(scratch)], stdin=dec.stdout, check=True)
            assert dec.stdout is not None
            dec.stdout.close()
            if dec.wait() != 0:
                raise RuntimeError(f"{decoder[0]} failed on {archive}")
    took = time.perf_counter() - t0
    shutil.rmtree(scratch)
    return took


def measure(prefix: Path, work: Path) -> dict[str, dict[str, float]]:
    """Per variant (``tar`` and each codec): bytes, client seconds, node seconds, over all
    of the venv's layers at ``prefix``; ``work`` holds the archives (removed after)."""
    plan, _interp, _base = layered_launch.plan_environment(prefix, None, False)
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict[str, float]] = {"tar": {"bytes": 0, "client_s": 0.0, "node_s": 0.0}}
    for name, _c, _d in CODECS:
        out[name] = {"bytes": 0, "client_s": 0.0, "node_s": 0.0}
    try:
        for i, layer in enumerate(plan.layers):
            raw = work / f"{i}.tar"
            t0 = time.perf_counter()
            with raw.open("wb") as f:
                for chunk in layered_launch.tar_layer(layer):
                    f.write(chunk)
            out["tar"]["client_s"] += time.perf_counter() - t0
            out["tar"]["bytes"] += raw.stat().st_size
            out["tar"]["node_s"] += _unpack(raw, work / "x", None)
            for name, compress, decompress in CODECS:
                packed = work / f"{i}.packed"
                out[name]["client_s"] += _timed(compress, raw, packed)
                out[name]["bytes"] += packed.stat().st_size
                out[name]["node_s"] += _unpack(packed, work / "x", decompress)
                packed.unlink()
            raw.unlink()
        for name, _c, _d in CODECS:
            out[name]["client_s"] += out["tar"]["client_s"]  # tar, then the codec
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def break_even_mb_s(plain: dict[str, float], codec: dict[str, float]) -> float:
    """The network bandwidth (MB/s) below which the codec makes a cold launch faster."""
    saved = 2 * (plain["bytes"] - codec["bytes"]) / 1e6
    extra = (codec["client_s"] - plain["client_s"]) + (codec["node_s"] - plain["node_s"])
    return float("inf") if extra <= 0 else saved / extra


def compression(bench: Bench) -> None:
    """Bytes, client and node seconds per codec on the venv's layers, and the break-even."""
    if bench.cfg.smoke:  # the code path on a tiny venv; the real one takes minutes
        prefix = bench.tiny_venv()
        what = "a tiny venv (--smoke)"
    else:
        prefix, what = Path(sys.prefix), "this venv's layers"
    missing = [c[1][0] for c in CODECS if shutil.which(c[1][0]) is None]
    if missing:
        bench.failed(f"compression: {', '.join(sorted(set(missing)))} not on this machine")
        return
    got: dict[str, dict[str, list[float]]] = {}
    for rep in range(bench.cfg.reps):
        figures = measure(prefix, bench.tmp / "compression")
        for name, f in figures.items():
            row = got.setdefault(name, {})
            row.setdefault("MB", []).append(f["bytes"] / 1e6)
            row.setdefault("client s", []).append(f["client_s"])
            row.setdefault("node s", []).append(f["node_s"])
            if name != "tar":
                row.setdefault("MB/s", []).append(break_even_mb_s(figures["tar"], f))
        bench.log(f"compression rep {rep + 1}: " + "; ".join(
            f"{n} {f['bytes'] / 1e6:.0f} MB, client {f['client_s']:.1f} s, "
            f"node {f['node_s']:.1f} s" for n, f in figures.items()))  # fmt: skip
    for name, row in got.items():
        bench.row(SECTION, f"{name}: bytes shipped", "MB", row["MB"], what)
        bench.row(SECTION, f"{name}: client (tar + compress)", "s", row["client s"], what)
        bench.row(SECTION, f"{name}: node (decompress + unpack)", "s", row["node s"], what)
        if "MB/s" in row:
            bench.row(SECTION, f"{name}: pays below this bandwidth", "MB/s", row["MB/s"],
                      "2 x bytes saved / (client + node seconds added)")  # fmt: skip
