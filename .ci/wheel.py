"""Build the library's wheel and fail if it carries any of the sandbox.

A user's ``pip install tfyarn_jupyter`` gets the library and its front end only: no
``tfyarn_sandbox`` module, no ``sandbox_*`` leftovers, no Maven ``pom.xml``, and no
dependency the sandbox alone needs (``hdfs``, WebHDFS).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SANDBOX_ONLY_DEPENDENCIES = ("hdfs",)


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", out, str(ROOT)],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(out).glob("tfyarn_jupyter-*.whl")
        names = zipfile.ZipFile(wheel).namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line.split(":", 1)[1].strip().split(";")[0]
            for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    bad = [n for n in names if "sandbox" in n or n.endswith("pom.xml")]
    bad += [f"dependency {r}" for r in requires if r.split(">")[0].split("=")[0].strip()
            in SANDBOX_ONLY_DEPENDENCIES]  # fmt: skip
    if "tfyarn_jupyter/panel/static/widget.js" not in names:
        bad.append("no tfyarn_jupyter/panel/static/widget.js (the panel's front end)")
    for b in bad:
        print(f"wheel {wheel.name}: {b}", file=sys.stderr)
    print(f"wheel {wheel.name}: {len(names)} files, no sandbox code, no pom.xml")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
