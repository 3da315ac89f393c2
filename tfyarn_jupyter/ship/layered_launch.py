"""Shipping a venv as layers: each packed and uploaded once, localised once per node.

:mod:`tfyarn_jupyter.ship.layers` plans the layers; this module puts the missing
ones on HDFS (one listing of the cache folder tells which, then a ``tar`` of
each missing layer streams to HDFS, a few at once) and names them as the
containers' files, where ``assemble.sh`` unpacks each layer once per node and
builds the environment from hard links. A layer's HDFS name is its key, so a
launch after ``pip install`` of one package uploads that package's layer only,
and YARN localises only that file on each node: the others are the same
resources as before, already in the NodeManagers' caches.

The optional shared cache (``shared_layer_cache=`` a folder an administrator
made world-readable, e.g. ``/apps/tfyarn/layers``) holds layers with YARN's
PUBLIC visibility, so a team's TensorFlow layer is localised once per node for
everyone. Only layers of distributions installed from an index and the
interpreter go there; the base layer (the venv's own files), local wheels, VCS
and editable installs, sources and payloads stay in the user's private cache.

With ``layer_codec="zstd"`` each layer is compressed as tar writes it (``zstd -1``,
all cores) and named ``<key>.tar.zst``: about 3.5 times fewer bytes to upload and to
localise on each node, for more CPU on both sides (``benchmarks/compression.py``).
The client's ``zstd`` travels with the containers (``tfyarn-zstd``) for nodes that
have none; a node unpacks a compressed layer into the same folder as a plain one.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from importlib.resources import files as package_files
from pathlib import Path
from typing import TYPE_CHECKING

import skein

from tfyarn_jupyter.core import program
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.ship import interpreter, layers, packing, plan_memo
from tfyarn_jupyter.ship.layers import Layer, Plan

if TYPE_CHECKING:
    from tfyarn_jupyter.core.options import LaunchOptions

#: Layers uploaded at once: the NameNode and DataNode take them in parallel, tar is cheap.
UPLOAD_THREADS = 3
#: Each codec's archive suffix and compressor (tar's ``--use-compress-program``).
CODECS = {"zstd": (".zst", "zstd -1 -T0 -q")}
#: The container's name for the client's ``zstd``, the decoder of last resort on a node.
ZSTD_FILE = "tfyarn-zstd"


@dataclasses.dataclass
class LayersReport:
    """What shipping the layers did: which were uploaded, their bytes, the phases' seconds."""

    key: str
    plan: Plan
    interpreter: Layer | None
    #: The base prefix the venv's ``bin/python`` links to (rewritten where shipped).
    client_base: str
    uris: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    uploaded: list[str] = dataclasses.field(default_factory=list)
    bytes_uploaded: int = 0
    times: dict[str, float] = dataclasses.field(default_factory=dict)
    #: The layers' compression (``LaunchOptions.layer_codec``), None for plain tars.
    codec: str | None = None

    @property
    def layers(self) -> list[Layer]:
        return [*self.plan.layers, *([self.interpreter] if self.interpreter else [])]

    @property
    def size(self) -> int:
        return sum(layer.size for layer in self.layers)

    def container_files(self) -> dict[str, skein.File]:
        return spec_files(self)

    def assembly(self) -> str:
        return assembly_script(self)


def site_rel(prefix: Path) -> str:
    """The venv's site-packages folder, relative to it."""
    return f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


def plan_environment(
    prefix: Path, exclude: Sequence[str] | None, ship_interpreter: bool | str
) -> tuple[Plan, Layer | None, Path]:
    """The venv's layers, the interpreter's layer where it is shipped, the base prefix."""
    plan = plan_memo.plan(
        prefix, site_rel(prefix), layers.DEFAULT_EXCLUDE if exclude is None else exclude
    )
    base = interpreter.base_prefix(prefix)
    interp = None
    if interpreter.should_ship(ship_interpreter, base):
        interp = interpreter.interpreter_layer(base)
    return plan, interp, base


def archive_name(layer: Layer, codec: str | None) -> str:
    """The layer's file name on HDFS and in the container: ``L-<key>.tar[.zst]``."""
    return layer.archive_name + (CODECS[codec][0] if codec else "")


def zstd_binary() -> str:
    """The client's ``zstd``, which compresses the layers and travels as their decoder."""
    found = shutil.which("zstd")
    if found is None:
        raise layers.LayerError(
            "layer_codec='zstd' needs the zstd program on this machine (apt install zstd, "
            "or dnf install zstd), or leave layer_codec unset to ship plain tars"
        )
    return str(Path(found).resolve())


def tar_layer(layer: Layer, codec: str | None = None) -> Iterator[bytes]:
    """A tar of the layer's files (compressed with ``codec``), chunk by chunk as tar writes it."""
    with tempfile.NamedTemporaryFile("wb", suffix=".list") as names:
        names.write(b"\0".join(f.encode("utf-8", "surrogateescape") for f in layer.files))
        names.flush()
        argv = ["tar", "-cf", "-", "-C", str(layer.root), "--null", "--no-recursion",
                "-T", names.name]  # fmt: skip
        if codec:
            argv[1:1] = [f"--use-compress-program={CODECS[codec][1]}"]
        with (
            tempfile.TemporaryFile() as err,
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err) as proc,
        ):
            assert proc.stdout is not None
            while chunk := proc.stdout.read(filesystem.CHUNK):
                yield chunk
            if proc.wait() != 0:
                err.seek(0)
                message = err.read().decode(errors="replace")[-2000:]
                raise layers.LayerError(f"packing layer {layer.name} failed: {message}")


def _listing(folder: str) -> set[str]:
    try:
        return set(filesystem.listdir(folder))
    except filesystem.HdfsNotFound:
        return set()


def check_shared(folder: str) -> None:
    """The shared cache must exist and be world-readable: YARN localises PUBLIC files only
    when the file and every folder above it are readable by everyone."""
    st = filesystem.status(folder, strict=False)
    mode = int(st["permission"], 8) if st else 0
    if st is None or st["type"] != "DIRECTORY" or mode & 0o005 != 0o005:
        raise layers.LayerError(
            f"shared_layer_cache {folder} is not a world-readable HDFS folder: an "
            "administrator makes it once (hdfs dfs -mkdir -p FOLDER && hdfs dfs -chmod 1777 "
            "FOLDER), or leave shared_layer_cache unset to use your private cache"
        )


def _upload(layer: Layer, remote: str, permission: str, codec: str | None) -> int:
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal size
        for chunk in tar_layer(layer, codec):
            size += len(chunk)
            yield chunk

    filesystem.upload_stream(counted(), remote, permission=permission)
    return size


def ensure_layers(
    plan: Plan,
    interp: Layer | None,
    base: Path,
    shared: str | None = None,
    codec: str | None = None,
) -> LayersReport:
    """Upload the layers HDFS lacks (compressed with ``codec``); return where each is and
    what was uploaded."""
    t0 = time.perf_counter()
    if codec:
        zstd_binary()  # refused before anything is uploaded
    report = LayersReport(plan.key if interp is None else layers.digest(
        [plan.key, interp.key]), plan, interp, str(base), codec=codec)  # fmt: skip
    private = f"{filesystem.home()}/.tfyarn/layers"
    if shared:
        check_shared(shared)
    folders = {"private": private, **({"public": shared.rstrip("/")} if shared else {})}
    present = {vis: _listing(folder) for vis, folder in folders.items()}
    report.times["check"] = time.perf_counter() - t0
    todo = []
    for layer in report.layers:
        vis = "public" if shared and layer.shareable else "private"
        name = archive_name(layer, codec)
        remote = f"{folders[vis]}/{name}"
        report.uris[name] = (filesystem.qualify(remote), vis)
        if name not in present[vis]:
            todo.append((layer, remote, "644" if vis == "public" else "600", codec))
    t1 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(UPLOAD_THREADS) as pool:
        sizes = list(pool.map(lambda job: _upload(*job), todo))
    report.uploaded = [archive_name(layer, codec) for layer, *_ in todo]
    report.bytes_uploaded = sum(sizes)
    report.times["upload"] = time.perf_counter() - t1
    return report


def launch_layers(
    experiment_fn: Callable[..., object], options: LaunchOptions, phases: dict[str, float]
) -> LayersReport:
    """Plan this venv's layers, check the experiment's imports are shipped, upload the rest."""
    t0 = time.perf_counter()
    try:
        plan, interp, base = plan_environment(
            packing.venv_prefix(), options.exclude_packages, options.ship_interpreter
        )
        layers.check_imports(program.referenced_modules(experiment_fn), plan)
        phases["env_plan"] = time.perf_counter() - t0
        report = ensure_layers(plan, interp, base, options.shared_layer_cache, options.layer_codec)
    except layers.LayerError as exc:
        raise packing.PackingError(str(exc)) from None
    phases.update({f"env_{k}": v for k, v in report.times.items()})
    return report


def spec_files(report: LayersReport) -> dict[str, skein.File]:
    """The layers as the containers' files (YARN LocalResources, kept by each node), and
    with compressed layers the client's ``zstd``."""
    out = {
        name: skein.File(source=uri, type="file", visibility=vis)
        for name, (uri, vis) in report.uris.items()
    }
    if report.codec == "zstd":
        out[ZSTD_FILE] = skein.File(source=zstd_binary(), type="file")
    return out


def assembly_script(report: LayersReport) -> str:
    """``assemble.sh`` with its inputs: what goes before ``service.sh`` in a layered launch."""
    body = (package_files("tfyarn_jupyter.container") / "sh" / "assemble.sh").read_text()
    return f"TFYARN_CLIENT_BASE='{report.client_base}'\n{body}"


def describe(plan: Plan, interp: Layer | None = None, limit: int = 15) -> str:
    """A table of the layers and their sizes, largest first, then what is left out."""
    rows = layers.report_rows(plan)
    if interp is not None:
        rows.insert(0, (interp.name, interp.kind, interp.size, interp.key))
    shipped = [r for r in rows if r[1] != "excluded"]
    lines = [
        f"{len(shipped)} layers, {sum(r[2] for r in shipped) / 2**20:.0f} MiB (key {plan.key})"
    ]
    for name, kind, size, key in shipped[:limit]:
        lines.append(f"  {size / 2**20:9.1f} MiB  {kind:11} {name}  {key}")
    if len(shipped) > limit:
        rest = shipped[limit:]
        lines.append(f"  {sum(r[2] for r in rest) / 2**20:9.1f} MiB  {len(rest)} more layers")
    for name, _, size, _ in (r for r in rows if r[1] == "excluded"):
        lines.append(f"  {size / 2**20:9.1f} MiB  left out    {name}")
    return "\n".join(lines)


def environment_report(
    exclude: Sequence[str] | None = None, ship_interpreter: bool | str = "auto"
) -> str:
    """What a layered launch from this venv ships, and why: ``%tfyarn env``."""
    plan, interp, base = plan_environment(packing.venv_prefix(), exclude, ship_interpreter)
    where = "shipped" if interp else "expected on the nodes"
    text = f"{describe(plan, interp)}\ninterpreter {base}: {where}"
    if interp is not None:
        text += "\n" + describe_system_libraries(interpreter.system_libraries(base))
    return text


def describe_system_libraries(needs: dict[str, list[str]]) -> str:
    """What a shipped interpreter still loads from each node's system, wrapped.

    A self-contained Python (pyenv, a source build) links its extension modules
    against the system's libssl, libffi, libz and the like; a node without one of
    them runs the venv, but the module that needs it fails to import there.
    """
    if not needs:
        return "  it loads nothing from the nodes' system but glibc"
    items = [f"{lib} ({', '.join(users)})" if users else lib for lib, users in needs.items()]
    lines = ["  it loads from each node's system (where one is missing, the modules named fail):"]
    row = ""
    for item in items:
        if row and len(row) + len(item) + 2 > 96:
            lines.append(f"    {row},")
            row = ""
        row = f"{row}, {item}" if row else item
    lines.append(f"    {row}")
    return "\n".join(lines)
