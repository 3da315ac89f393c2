"""Shipping the notebook's Python environment to the containers, once.

The current venv is archived and uploaded to HDFS under a content key of the
environment, so a second launch with the same environment neither packs nor
uploads; YARN then keeps the archive localised on each NodeManager (it is
referenced with PRIVATE visibility). Editable installs and the notebook's own
modules travel beside it as a small zip on ``PYTHONPATH``, and ``pip_packages``
as an overlay archive, so the user's venv is never changed.

The archive format was picked by measurement on a 1.34 GB TensorFlow venv:
a plain ``tar`` of the venv takes about 1 s, venv-pack's uncompressed tar 5 s,
its default ``.tar.gz`` 24 s. Since the interpreter must sit at the same path
on every node anyway (a venv does not carry it), nothing needs rewriting, and
the default packer is ``tar``; ``packer="venv-pack"`` gives venv-pack's
relocatable archive instead. tar's output goes to HDFS as it is written (one
chunked WebHDFS request), so packing and uploading overlap and no local copy of
the archive is written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import skein

from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol.contract import ENV_TAR

_SKIP_DIRS = {
    "__pycache__", ".git", ".hg", ".venv", "venv", "node_modules", ".ipynb_checkpoints",
    "build", "dist", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
}  # fmt: skip


class PackingError(RuntimeError):
    """The environment cannot be shipped; the message says how to fix it."""


@dataclasses.dataclass
class EnvReport:
    """What preparing the environment did, phase by phase (seconds)."""

    key: str
    archive: str
    packed: bool = False
    uploaded: bool = False
    size: int = 0
    times: dict[str, float] = dataclasses.field(default_factory=dict)

    def container_files(self) -> dict[str, skein.File]:
        """The tar, as a file each NodeManager keeps between runs (the service script
        unpacks it once per node)."""
        return {ENV_TAR: skein.File(source=self.archive, type="file", visibility="private")}

    def assembly(self) -> str:
        return ""  # service.sh unpacks the tar itself


def cache_dir() -> Path:
    return Path(os.environ.get("TFYARN_CACHE", Path.home() / ".cache" / "tfyarn"))


def venv_prefix() -> Path:
    """The running venv, or a clear error when Python does not run from one."""
    if sys.prefix == sys.base_prefix:
        raise PackingError(
            f"Python runs from {sys.prefix}, which is not a virtual environment, so there is "
            "nothing to ship to the containers. Create one (python -m venv ENV), install "
            "tfyarn_jupyter and your libraries into it and start Jupyter from it, or pass "
            "pyenv_archive= a pre-built environment archive."
        )
    return Path(sys.prefix)


def base_interpreter(prefix: Path) -> str:
    """The interpreter the venv's ``bin/python`` resolves to; nodes need it at this path."""
    return os.path.realpath(prefix / "bin" / "python")


def site_packages(prefix: Path) -> Path:
    rel = Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)
    return prefix / rel


def editable_roots(prefix: Path) -> list[Path]:
    """Source folders that editable installs put on ``sys.path`` via ``.pth`` files."""
    roots: list[Path] = []
    sp = site_packages(prefix)
    for direct_url in sorted(sp.glob("*.dist-info/direct_url.json")):
        try:
            info = json.loads(direct_url.read_text())
        except (OSError, ValueError):
            continue
        if not info.get("dir_info", {}).get("editable"):
            continue
        record = direct_url.with_name("RECORD")
        pths = [
            sp / line.split(",", 1)[0]
            for line in record.read_text().splitlines()
            if line.split(",", 1)[0].endswith(".pth")
        ]
        for pth in pths:
            with contextlib.suppress(OSError):
                for line in pth.read_text().splitlines():
                    line = line.strip()
                    if line and not line.startswith(("#", "import")) and Path(line).is_dir():
                        roots.append(Path(line).resolve())
    return sorted(set(roots))


def _py_files(root: Path) -> Iterator[Path]:
    """Top-level modules and packages of a source root (what ``import`` finds there)."""
    for entry in sorted(root.iterdir()):
        if entry.name in _SKIP_DIRS or entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix == ".py":
            yield entry
        elif entry.is_dir() and (entry / "__init__.py").exists():
            for dirpath, dirnames, filenames in os.walk(entry):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
                for f in sorted(filenames):
                    if not f.endswith((".pyc", ".pyo")):
                        yield Path(dirpath) / f


def _stat_digest(files: Iterable[Path], h: hashlib._Hash) -> None:
    for f in files:
        st = f.stat()
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())


def env_key(prefix: Path | None = None) -> str:
    """Content key of a venv: its interpreter, every installed distribution's RECORD.

    RECORD files list each installed file with its hash, so they change when
    any distribution is added, removed or upgraded; hashing them is cheap
    (milliseconds for a TensorFlow venv), unlike ``pip freeze``.
    """
    prefix = prefix or venv_prefix()
    h = hashlib.sha256()
    h.update(f"{sys.version}\0{prefix}\0{base_interpreter(prefix)}\n".encode())
    for record in sorted(site_packages(prefix).glob("*.dist-info/RECORD")):
        h.update(record.parent.name.encode())
        h.update(record.read_bytes())
    return h.hexdigest()[:24]


def _tar_argv(prefix: Path, dest: str) -> list[str]:
    """``tar -c`` of ``prefix`` into ``dest`` (``-`` for stdout), without pyc temp files."""
    tar = shutil.which("tar")
    if not tar:
        raise PackingError("the 'tar' command is needed to pack the environment")
    return [tar, "-cf", dest, "--exclude=__pycache__/*.pyc.*", "-C", str(prefix), "."]


def pack(prefix: Path, dest: Path, packer: str = "tar") -> None:
    """Archive the venv at ``prefix`` into ``dest`` (an uncompressed ``.tar``)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".part-{os.getpid()}")
    if packer == "tar":
        proc = subprocess.run(_tar_argv(prefix, str(tmp)), capture_output=True, text=True)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise PackingError(f"packing {prefix} with tar failed: {proc.stderr[-2000:]}")
    elif packer == "venv-pack":
        import venv_pack

        venv_pack.pack(prefix=str(prefix), output=str(tmp), format="tar", force=True)
    else:
        raise PackingError(f"unknown packer {packer!r}: use 'tar' or 'venv-pack'")
    tmp.rename(dest)


def ensure_env(packer: str = "tar") -> EnvReport:
    """Make sure this venv's archive is on HDFS; pack and upload only when missing."""
    t0 = time.perf_counter()
    prefix = venv_prefix()
    key = env_key(prefix)
    remote = f"{filesystem.home()}/.tfyarn/envs/{key}.tar"
    report = EnvReport(key=key, archive=filesystem.qualify(remote))
    report.times["key"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    present = filesystem.exists(remote)
    report.times["check"] = time.perf_counter() - t1
    if present:
        return report
    local = cache_dir() / "envs" / f"{key}.tar"
    if packer == "tar" and not local.exists():
        _stream_to_hdfs(prefix, remote, report)
        return report
    t2 = time.perf_counter()
    if not local.exists():
        pack(prefix, local, packer)
        report.packed = True
    report.times["pack"] = time.perf_counter() - t2
    report.size = local.stat().st_size
    t3 = time.perf_counter()
    filesystem.upload(local, remote)
    report.uploaded = True
    report.times["upload"] = time.perf_counter() - t3
    local.unlink(missing_ok=True)
    return report


def tar_chunks(prefix: Path, on_end: Callable[[int], None] = lambda size: None) -> Iterator[bytes]:
    """An uncompressed tar of ``prefix``, chunk by chunk, as ``tar`` writes it.

    ``on_end(size)`` is called when tar has written its last byte and exited
    cleanly; a failing tar raises :class:`PackingError` with its message. Closing
    the generator early closes tar's pipe, which ends tar.
    """
    size = 0
    with (
        tempfile.TemporaryFile() as err,
        subprocess.Popen(_tar_argv(prefix, "-"), stdout=subprocess.PIPE, stderr=err) as proc,
    ):
        assert proc.stdout is not None
        while chunk := proc.stdout.read(filesystem.CHUNK):
            size += len(chunk)
            yield chunk
        if proc.wait() != 0:
            err.seek(0)
            message = err.read().decode(errors="replace")[-2000:]
            raise PackingError(f"packing {prefix} with tar failed: {message}")
    on_end(size)


def _stream_to_hdfs(prefix: Path, remote: str, report: EnvReport) -> None:
    """Pack and upload at once: tar's output goes to HDFS as it is written.

    The two overlap, so ``times["pack"]`` is until tar's end (its output already
    uploaded up to there) and ``times["upload"]`` the rest of the transfer.
    """
    t0 = time.perf_counter()
    ended: dict[str, float] = {}

    def on_end(size: int) -> None:
        ended["t"] = time.perf_counter()
        report.size = size

    filesystem.upload_stream(tar_chunks(prefix, on_end), remote)
    done = time.perf_counter()
    report.packed = report.uploaded = True
    report.times["pack"] = ended.get("t", done) - t0
    report.times["upload"] = done - ended.get("t", done)


def _pip_key(env: str, packages: Sequence[str]) -> str:
    h = hashlib.sha256(env.encode())
    for pkg in packages:
        h.update(pkg.encode() + b"\0")
        path = Path(pkg)
        if path.is_file():
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:24]


def ensure_overlay(packages: Sequence[str], env: str) -> tuple[str, bool]:
    """``pip install --target`` the packages once per key; upload; return (HDFS URI, built)."""
    key = _pip_key(env, packages)
    remote = f"{filesystem.home()}/.tfyarn/overlays/{key}.tar"
    if filesystem.exists(remote):
        return filesystem.qualify(remote), False
    with tempfile.TemporaryDirectory(prefix="tfyarn-overlay-") as tmp:
        target = Path(tmp) / "site"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--no-warn-script-location", "--target", str(target), *packages],
            capture_output=True, text=True,
        )  # fmt: skip
        if proc.returncode != 0:
            raise PackingError(
                f"pip_packages {list(packages)} could not be installed: {proc.stderr[-2000:]}"
            )
        archive = Path(tmp) / "overlay.tar"
        pack(target, archive)
        return filesystem.upload(archive, remote), True


def zip_sources(roots: dict[str, Path], dest: Path) -> None:
    """Zip source roots (editable installs, the notebook's folder) for ``PYTHONPATH``."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for root in roots.values():
            for f in _py_files(root):
                zf.write(f, f.relative_to(root).as_posix())


def sources_digest(roots: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for root in roots:
        _stat_digest(_py_files(root), h)
    return h.hexdigest()[:16]
