"""3b. The pack phase: tfyarn's ``packing.pack`` against plain ``tar -cf`` and venv-pack.

Full mode packs this venv, then tf-yarn 0.7.0's (venv-pack refuses a venv
with an editable install, as this one is; tf-yarn's has none); --smoke packs
a tiny venv, to run the code path in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tfyarn_jupyter.ship import packing as env_packing

from .core import Bench
from .stats import interleave, paired_ratios
from .tfyarn070 import ensure_venv

VARIANTS = ["tfyarn pack (tar, its excludes)", "tar -cf (I/O floor)", "venv-pack defaults"]


def packing(bench: Bench) -> None:
    if bench.cfg.smoke:  # the code path on a tiny venv; the real ones take minutes
        _packing(bench, bench.tiny_venv(), "a tiny venv (--smoke)")
        return
    _packing(bench, env_packing.venv_prefix(), "this venv")
    # venv-pack refuses a venv with an editable install, as this one is; tf-yarn's
    # venv (TensorFlow, no editable install) gives its defaults a venv they accept.
    venv, _ = ensure_venv(bench)
    _packing(bench, venv, "tf-yarn 0.7.0's venv")


def venv_pack_path(bench: Bench) -> tuple[str | None, str]:
    """A PYTHONPATH entry holding venv_pack, or None and why not."""
    try:
        import venv_pack  # noqa: F401

        return "", "venv-pack from the venv"
    except ImportError:
        pass
    target = bench.cfg.cache / "venv-pack"
    if (target / "venv_pack").is_dir():
        return str(target), f"venv-pack installed in {target}"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--target", str(target), "venv-pack"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if proc.returncode != 0:
        return None, f"venv-pack could not be installed: {proc.stderr.strip()[-300:]}"
    return str(target), f"venv-pack installed in {target} (pip --target)"


def _venv_pack(bench: Bench, prefix: Path, dest: Path, vp_path: str) -> tuple[bool, str]:
    """venv-pack's defaults (a .tar.gz) in a fresh interpreter: done, or why not."""
    code = "import sys, venv_pack; venv_pack.pack(prefix=sys.argv[1], output=sys.argv[2])"
    env = dict(os.environ, PYTHONPATH=vp_path) if vp_path else None
    proc = subprocess.run(
        [sys.executable, "-c", code, str(prefix), str(dest) + ".tar.gz"],
        capture_output=True, text=True, env=env, timeout=bench.cfg.venv_pack_timeout_s,
    )  # fmt: skip
    if proc.returncode != 0:
        return False, f"venv-pack failed: {proc.stderr.strip()[-300:]}"
    return True, ""


def _pack_once(
    bench: Bench, prefix: Path, dest: Path, variant: str, vp: tuple[str | None, str], skip: str
) -> tuple[float | None, str]:
    """One timed pack of ``variant``; the reason venv-pack is skipped from now on, if any."""
    vp_path, vp_note = vp
    t0 = time.perf_counter()
    try:
        if variant.startswith("tfyarn"):
            env_packing.pack(prefix, dest)
            return time.perf_counter() - t0, skip
        if variant.startswith("tar"):
            subprocess.run(["tar", "-cf", str(dest), "-C", str(prefix), "."], check=True,
                           capture_output=True)  # fmt: skip
            return time.perf_counter() - t0, skip
        if vp_path is None:
            return None, vp_note
        if skip:
            return None, skip
        ok, why = _venv_pack(bench, prefix, dest, vp_path)
        return (time.perf_counter() - t0 if ok else None), why
    except subprocess.TimeoutExpired:
        return None, f"skipped: took over {bench.cfg.venv_pack_timeout_s:.0f} s"
    finally:
        for f in bench.tmp.glob(f"{dest.name}*"):
            f.unlink(missing_ok=True)


def _packing(bench: Bench, prefix: Path, what: str) -> None:
    size = sum(f.stat().st_size for f in prefix.rglob("*") if f.is_file() and not f.is_symlink())
    bench.details.setdefault("venv_bytes", {})[what] = size
    vp = venv_pack_path(bench)
    res: dict[str, list[float | None]] = {v: [] for v in VARIANTS}
    skip_vp = ""
    for rep, variant in interleave(VARIANTS, bench.cfg.reps):
        value, skip_vp = _pack_once(bench, prefix, bench.tmp / f"pack-{rep}.out", variant, vp,
                                    skip_vp)  # fmt: skip
        bench.log(f"pack rep {rep + 1} {variant}: {value}")
        res[variant].append(value)
    sec = f"pack: {what} ({size / 2**20:.0f} MiB)"
    bench.row(sec, VARIANTS[0], "s", res[VARIANTS[0]], "packing.pack")
    bench.row(sec, VARIANTS[1], "s", res[VARIANTS[1]], "page cache warm")
    bench.row(sec, VARIANTS[2], "s", res[VARIANTS[2]], skip_vp or f"{vp[1]}; .tar.gz")
    bench.row(sec, "tfyarn pack / tar -cf", "x", paired_ratios(res[VARIANTS[0]], res[VARIANTS[1]]))
