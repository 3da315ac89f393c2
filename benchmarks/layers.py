"""Layered environments (issue 14) beside today's single tar: submit -> every task running.

Each launch runs ``layers_driver.py`` from a hard-linked copy of this venv, so a
package can be installed between launches without touching the venv itself.
Interleaved per repetition:

1. *layers, one package changed*: a fresh version of a small probe package installed;
2. *layers, warm*: the same environment again (every layer on HDFS and on the node);
3. *layers, cold*: a fresh shared-cache folder and node cache, so every layer is
   packed, uploaded, localised and unpacked; the same with ``layer_codec="zstd"``; and
   the same as before the big layers were split, each layer whole and a node unpacking
   one at a time (``part_size=0``, ``TFYARN_UNPACK_JOBS=1``);
4. *tar, one package changed* and 5. *tar, warm*: today's path (``layers=False``).

The figures: one-changed / warm (aim <= 1.2) and cold / (warm + 2 x ``tar -cf`` of
the venv) (aim <= 1.0), with the bytes uploaded; localised bytes per node equal
the uploaded ones (each new file is localised once per node).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

from tfyarn_jupyter.hadoop import filesystem

from .core import CANCER, PACKAGE, Bench

DRIVER = PACKAGE / "layers_driver.py"
SECTION = "layers (issue 14)"


def tar_seconds(prefix: str) -> float:
    """``tar -cf`` of the venv, through a pipe (GNU tar skips reading for /dev/null)."""
    t0 = time.perf_counter()
    subprocess.run(f"tar -cf - -C {prefix} . | cat >/dev/null", shell=True, check=True)
    return time.perf_counter() - t0


def probe_wheel(bench: Bench, version: int) -> Path:
    """A small pure-Python wheel whose content changes with ``version``."""
    src = bench.tmp / f"probe-{version}"
    (src / "layer_probe").mkdir(parents=True)
    (src / "layer_probe" / "__init__.py").write_text(f"VERSION = {version}\n")
    (src / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"
        [project]
        name = "tfyarn-layer-probe"
        version = "0.{version}"
        [tool.hatch.build.targets.wheel]
        packages = ["layer_probe"]
        """))  # fmt: skip
    out = bench.tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(out), str(src)], check=True)  # fmt: skip
    return next(out.glob(f"tfyarn_layer_probe-0.{version}-*.whl"))


def launch(bench: Bench, python: Path, name: str, **args: Any) -> dict:
    result = bench.tmp / f"{uuid.uuid4().hex}.json"
    model_dir = str(bench.tmp / uuid.uuid4().hex)
    given = {"name": f"tfyarn-bench-{name}", "result": str(result), "model_dir": model_dir,
             "notebooks": str(CANCER.parent), **args}  # fmt: skip
    proc = subprocess.run([str(python), str(DRIVER), json.dumps(given)], capture_output=True,
                          text=True, timeout=1200)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{name} launch failed: {proc.stderr[-2000:]}")
    return json.loads(result.read_text())


def cold_launch(bench: Bench, python: Path, name: str, whole: bool = False, **options: Any) -> dict:
    """A launch with nothing cached: a fresh shared layer cache on HDFS and a fresh node
    cache (both removed after), so every layer is packed, uploaded, localised, unpacked;
    ``whole``: no layer split, and a node unpacks one layer at a time."""
    salt = uuid.uuid4().hex[:8]
    shared = f"/tmp/tfyarn-bench-layers-{salt}"
    filesystem.client().makedirs(shared, permission="755")
    node_cache = f"/tmp/tfyarn-bench-nodecache-{salt}"
    try:
        given = {"layers": True, "shared_layer_cache": shared, **options}
        env = {"TFYARN_ENV_CACHE": node_cache, **({"TFYARN_UNPACK_JOBS": "1"} if whole else {})}
        extra = {"part_size": 0} if whole else {}
        return launch(bench, python, name, env=env, options=given, **extra)
    finally:
        subprocess.run(["rm", "-rf", node_cache], check=False)
        filesystem.delete(shared, recursive=True)


def one_rep(bench: Bench, python: Path, rep: int) -> dict[str, dict]:
    """One repetition of every variant, in the order of the module's docstring."""
    out: dict[str, dict] = {}
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
           "--disable-pip-version-check", "--force-reinstall"]  # fmt: skip
    subprocess.run([*pip, str(probe_wheel(bench, 2 * rep + 1))], check=True)
    out["layers one changed"] = launch(bench, python, "layers-one", options={"layers": True})
    out["layers warm"] = launch(bench, python, "layers-warm", options={"layers": True})
    # The cold launches in the reverse order every other repetition: each leaves 2 GB on
    # the disk to write back, which the next one pays for.
    colds: list[tuple[str, dict[str, Any]]] = [
        ("layers cold", {}),
        ("layers cold, zstd", {"layer_codec": "zstd"}),
        ("layers cold, whole layers", {"whole": True}),
    ]
    for variant, options in colds[:: -1 if rep % 2 else 1]:
        name = variant.replace(",", "").replace(" ", "-")
        out[variant] = cold_launch(bench, python, name, **options)
    subprocess.run([*pip, str(probe_wheel(bench, 2 * rep + 2))], check=True)
    out["tar one changed"] = launch(bench, python, "tar-one", options={"layers": False})
    out["tar warm"] = launch(bench, python, "tar-warm", options={"layers": False})
    return out


def layers(bench: Bench) -> None:
    venv = bench.tmp / "venv"
    subprocess.run(["cp", "-al", sys.prefix, str(venv)], check=True)
    python = venv / "bin" / "python"
    reps = min(bench.cfg.reps, 3)
    tar_s = [tar_seconds(sys.prefix) for _ in range(reps)]
    launch(bench, python, "layers-first", options={"layers": True})  # fill the caches
    results = [one_rep(bench, python, rep) for rep in range(reps)]
    bench.details["layers"] = results
    col = lambda v, k: [r[v][k] for r in results]  # noqa: E731
    for variant in results[0]:
        bench.row(SECTION, f"{variant}: submit -> all running", "s", col(variant, "all_running"))
        bench.row(SECTION, f"{variant}: MB uploaded (= localised per node)", "MB",
                  [b / 1e6 for b in col(variant, "bytes_uploaded")])  # fmt: skip
    bench.row(SECTION, "tar -cf of the venv", "s", tar_s)
    ratios = [r["layers one changed"]["all_running"] / r["layers warm"]["all_running"]
              for r in results]  # fmt: skip
    bench.row(SECTION, "layers one changed / layers warm (aim <= 1.2)", "x", ratios)
    cold = [r["layers cold"]["all_running"] / (r["layers warm"]["all_running"] + 2 * t)
            for r, t in zip(results, tar_s, strict=True)]  # fmt: skip
    bench.row(SECTION, "layers cold / (warm + 2 x tar -cf) (aim <= 1.0)", "x", cold)
    zstd = [r["layers cold, zstd"]["all_running"] / (r["layers warm"]["all_running"] + 2 * t)
            for r, t in zip(results, tar_s, strict=True)]  # fmt: skip
    bench.row(SECTION, "layers cold, zstd / (warm + 2 x tar -cf)", "x", zstd)
    for variant in ("layers cold", "layers cold, whole layers"):
        slowest = [max(r[variant]["allocated_to_running"].values()) for r in results]
        bench.row(SECTION, f"{variant}: allocated -> process up, the slower task (localise, "
                  "unpack, interpreter)", "s", slowest)  # fmt: skip
    split = [r["layers cold"]["all_running"] / r["layers cold, whole layers"]["all_running"]
             for r in results]  # fmt: skip
    bench.row(SECTION, "layers cold: split and unpacked in parallel / whole, one at a time",
              "x", split)  # fmt: skip
    moved = [r["layers cold, zstd"]["bytes_uploaded"] / r["layers cold"]["bytes_uploaded"]
             for r in results]  # fmt: skip
    bench.row(SECTION, "bytes uploaded and localised per node: zstd / plain (aim <= 0.5)", "x",
              moved)  # fmt: skip
    bench.notes.append("layers: venv-pack and tf-yarn 0.7.0's pex are in the launches and "
                       "tfyarn070 sections, not repeated here")  # fmt: skip
