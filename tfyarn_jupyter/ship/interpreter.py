"""The venv's base interpreter, shipped as a layer where the nodes do not have it.

A venv does not carry its interpreter: ``bin/python`` is a link to the base
installation named in ``pyvenv.cfg``. Where the worker nodes lack that
installation (a notebook on an edge node or JupyterHub with its own Python),
the base prefix (the binary, the standard library, ``libpython``) is shipped
as one more layer, and the container points the venv at it
(:mod:`tfyarn_jupyter.ship.layered_launch` writes the assembly).

``ship_interpreter="auto"`` (the default) ships a self-contained prefix (pyenv,
python-build-standalone, conda, a source build under /opt): one whose
standard library and ``libpython`` live under it. A system Python under
``/usr`` is not shipped: the nodes' package manager provides it, and its
shared libraries are spread over the system's own folders.
``ship_interpreter=True`` insists and fails clearly where that cannot work.

Left out of the layer, measured on CPython 3.11 (745 MB prefix): its own
site-packages (465 MB, the venv has its own), the test suite (123 MB), and the
GUI/dev parts (idlelib, tkinter, turtledemo, ensurepip, lib2to3, headers).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tfyarn_jupyter.ship.layers import INTERPRETER, Layer, LayerError, digest

_LEFT_OUT = ("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")
#: Shared libraries every Linux node has (glibc's); any other one outside the prefix is reported.
_SYSTEM_LIBS = re.compile(r"^(linux-vdso|libc|libm|libdl|libpthread|librt|libutil|ld-linux)\b")


def base_prefix(venv: Path) -> Path:
    """The base installation of the venv at ``venv`` (from ``pyvenv.cfg``'s ``home``)."""
    cfg = venv / "pyvenv.cfg"
    try:
        lines = cfg.read_text().splitlines()
    except OSError as exc:
        raise LayerError(
            f"{cfg} cannot be read ({exc}): is {venv} a virtual environment?"
        ) from None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(os.path.realpath(value.strip())).parent
    raise LayerError(f"{cfg} names no home: recreate the venv with python -m venv")


def stdlib_rel(prefix: Path) -> str:
    """``lib/pythonX.Y`` of the running version, relative to the prefix."""
    return f"lib/python{sys.version_info[0]}.{sys.version_info[1]}"


def is_self_contained(prefix: Path) -> bool:
    """The standard library lives under the prefix, which is not the system's ``/usr``."""
    return str(prefix) not in ("/usr", "/") and (prefix / stdlib_rel(prefix) / "os.py").exists()


def should_ship(ship: bool | str, prefix: Path) -> bool:
    """Resolve ``ship_interpreter`` ("auto", True, False) for the base ``prefix``."""
    if ship == "auto":
        return is_self_contained(prefix)
    if ship is True and not is_self_contained(prefix):
        raise LayerError(
            f"ship_interpreter=True, but the venv's base interpreter is the system Python at "
            f"{prefix}, whose standard library and shared libraries are spread over the "
            "system's folders and cannot be shipped as one prefix. Either install the same "
            "Python on every node and pass ship_interpreter=False, or create the venv from a "
            "self-contained Python (pyenv, python-build-standalone, conda) and launch again"
        )
    if ship not in (True, False):
        raise LayerError(f"ship_interpreter must be 'auto', True or False, got {ship!r}")
    return bool(ship)


def parse_ldd(out: str, prefix: Path) -> dict[str, list[str]]:
    """``ldd FILE...`` output -> {library: [the files that load it]}, for the libraries
    found outside ``prefix`` (or not found at all), glibc's aside.

    ``ldd`` heads each file's block with ``FILE:`` when given several; a library
    line is ``name => path (address)``, or ``name => not found``.
    """
    needs: dict[str, list[str]] = {}
    current = ""
    for line in out.splitlines():
        if not line.startswith(("\t", " ")) and line.endswith(":"):
            current = line[:-1]
            continue
        name, arrow, where = line.strip().partition(" => ")
        path = where.split(" (")[0].strip()
        if not arrow or _SYSTEM_LIBS.match(name) or path.startswith(f"{prefix}/"):
            continue
        key = name if path != "not found" else f"{name} (not found)"
        needs.setdefault(key, [])
        if current and current not in needs[key]:
            needs[key].append(current)
    return needs


def module_name(path: str) -> str:
    """``.../lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so`` -> ``_ssl``; the binary
    ``.../bin/python3.11`` keeps its name (assemble.sh names them the same way)."""
    return re.sub(r"\.(cpython|abi3|so).*", "", Path(path).name)


def system_libraries(prefix: Path) -> dict[str, list[str]]:
    """The shared libraries the interpreter and its standard extension modules load
    from the system rather than from ``prefix`` (glibc's aside): what every node must
    provide for a shipped interpreter, mapped to the modules that need each
    (``python3.11`` for the binary itself). Empty where ``ldd`` is missing. ``_tkinter``
    is not looked at: tkinter is left out of the layer.
    """
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    binary = prefix / "bin" / f"python{version}"
    dynload = prefix / stdlib_rel(prefix) / "lib-dynload"
    files = [binary, *sorted(prefix.glob("lib/libpython*.so*")), *sorted(dynload.glob("*.so"))]
    files = [f for f in files if f.exists() and module_name(str(f)) != "_tkinter"]
    if not files:
        return {}
    try:
        out = subprocess.run(
            ["ldd", *map(str, files)], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return {}
    if len(files) == 1:
        out = f"{files[0]}:\n{out}"
    return {
        lib: sorted({module_name(f) for f in users})
        for lib, users in sorted(parse_ldd(out, prefix).items())
    }


def interpreter_files(prefix: Path) -> list[str]:
    """The prefix's files a venv runs on, relative: binaries, libpython, the stdlib."""
    stdlib = stdlib_rel(prefix)
    left_out = {f"{stdlib}/{d}" for d in _LEFT_OUT}
    files = []
    for top in ("bin", "lib"):
        for dirpath, dirnames, filenames in os.walk(prefix / top):
            rel = Path(dirpath).relative_to(prefix).as_posix()
            dirnames[:] = sorted(d for d in dirnames if f"{rel}/{d}" not in left_out)
            files += [f"{rel}/{f}" for f in sorted(filenames)]
    return [f for f in files if not f.startswith("lib/pkgconfig")]


def interpreter_layer(prefix: Path) -> Layer:
    """The base prefix as a layer, keyed by its files' paths, sizes and times.

    Hashing 100 MB of standard library at every launch would cost seconds; the
    files of an installed interpreter change only when it is reinstalled,
    which changes their times.
    """
    files = interpreter_files(prefix)
    entries, size = [f"{prefix}"], 0
    for rel in files:
        st = os.lstat(prefix / rel)
        entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
        size += st.st_size
    return Layer(
        name="python" + ".".join(map(str, sys.version_info[:2])),
        kind=INTERPRETER,
        key=digest(sorted(entries)),
        root=prefix,
        files=tuple(files),
        size=size,
        shareable=True,
    )
