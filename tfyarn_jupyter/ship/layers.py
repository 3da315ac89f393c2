"""Planning a venv as content-addressed layers: one per installed distribution, plus the rest.

A launch ships the environment as layers so that installing, upgrading or
removing one package moves only that package's layer (see
:mod:`tfyarn_jupyter.ship.layered_launch` for the upload and the container's assembly).
The plan reads only the venv's files: each distribution's ``RECORD`` lists the
files it installed with their hashes, so a layer's key is a digest of the
sorted ``(path, hash, size)`` lines of its files: stable under any reordering,
changed by an install, upgrade or removal (a new RECORD) and by a file whose
size changed since. The *base* layer holds what no distribution owns
(``pyvenv.cfg``, ``bin/python``, stray ``.pth`` files), keyed by content.
Bytecode that Python wrote after installation belongs to nobody and is left out.

Why one layer per large distribution, and small ones grouped: the cost of a
layer is one HDFS file, one YARN LocalResource and one unpack per node, and a
cold launch of 216 layers (the TensorFlow 2.15 venv with the test tools: 2.15 GB)
spent most of its time localising the 183 under 8 MB, which together hold only
161 MB. So distributions under :data:`GROUP_BELOW` go into one of
:data:`GROUPS` group layers chosen by a hash of their name: about 40 layers in
all, and an install, upgrade or removal of a small package moves its group
(about 20 MB here), never the others; of a large one, exactly that package.
A group's key is a digest of its members' keys.

Why the biggest layers are split: a node unpacks its layers in parallel
(``assemble.sh``), so one 853 MiB TensorFlow layer would leave all but one core
idle while it unpacks. A layer over :data:`PART_SIZE` becomes parts of about that
size (its files spread over them, largest first, each to the lightest part), each
its own archive; a part's key is a digest of the layer's key and its place, so the
parts move together when the distribution changes. A single file bigger than a part
(TensorFlow's 539 MiB ``libtensorflow_cc.so.2``) is a part of its own.

Packages only the notebook needs are left out (:data:`DEFAULT_EXCLUDE`,
measured sizes in that venv): playwright 164 MB, mypy 57 MB, jupyterlab 41 MB,
ruff 24 MB, debugpy 19 MB, notebook 16 MB, widgetsnbextension 9 MB,
jupyterlab-server 1 MB: 0.33 GB of 1.87 GB. :func:`check_imports` refuses a
launch whose experiment imports one of them.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import heapq
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

#: Distributions the tasks never import: the notebook's front end, its debugger, dev tools.
DEFAULT_EXCLUDE = (
    "playwright", "mypy", "jupyterlab", "ruff", "debugpy", "notebook",
    "widgetsnbextension", "jupyterlab-server",
)  # fmt: skip
#: Distributions smaller than this go into group layers (see the module's docstring).
GROUP_BELOW = 8 * 2**20
#: How many group layers small distributions are spread over, by a hash of their name.
GROUPS = 8
#: Layers bigger than this are split into parts of about this size (see the docstring).
PART_SIZE = 256 * 2**20
DIST = "dist"
GROUP = "group"
BASE = "base"
INTERPRETER = "interpreter"


class LayerError(RuntimeError):
    """The environment cannot be planned or shipped as layers; the message says why."""


@dataclasses.dataclass(frozen=True)
class Layer:
    """Files under ``root`` (relative paths) shipped as one archive named by ``key``."""

    name: str
    kind: str
    key: str
    root: Path
    files: tuple[str, ...]
    size: int
    #: Top-level modules the layer provides (for the import check).
    modules: frozenset[str] = frozenset()
    #: May go to a shared (PUBLIC) cache: installed from an index, nothing of the user's own.
    shareable: bool = False
    #: The distributions a group layer holds (empty for any other layer).
    members: tuple[str, ...] = ()
    #: ``"i/n"`` for the i-th of the n parts of a split layer, else empty.
    part: str = ""

    @property
    def archive_name(self) -> str:
        """The file name in the container's folder: ``I-`` for the interpreter, else ``L-``."""
        return f"{'I' if self.kind == INTERPRETER else 'L'}-{self.key}.tar"


@dataclasses.dataclass(frozen=True)
class Plan:
    """The layers of a venv, and the distributions' layers that were left out."""

    prefix: Path
    layers: tuple[Layer, ...]
    left_out: tuple[Layer, ...] = ()

    @property
    def excluded(self) -> dict[str, int]:
        """``{distribution: bytes}`` of what is left out."""
        return {layer.name: layer.size for layer in self.left_out}

    @property
    def key(self) -> str:
        """The environment's key: its layers' keys, in any order."""
        return digest(sorted(layer.key for layer in self.layers))

    @property
    def size(self) -> int:
        return sum(layer.size for layer in self.layers)


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def digest(lines: Iterable[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()[:24]


def _size(path: str | Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return -1


def record_entries(dist_info: Path, prefix: Path) -> list[tuple[str, str]]:
    """``(prefix-relative path, RECORD hash)`` of each installed file inside ``prefix``.

    Plain strings, not ``Path`` objects: a TensorFlow venv has 40 k of them.
    """
    site, root = str(dist_info.parent), str(prefix) + "/"
    out = []
    with open(dist_info / "RECORD", newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if not row or not row[0]:
                continue
            full = os.path.normpath(os.path.join(site, row[0]))
            if not full.startswith(root):
                continue  # installed outside the venv (rare data files): not ours to ship
            out.append((full[len(root) :], row[1] if len(row) > 1 else ""))
    return out


def layer_key(name: str, entries: Iterable[tuple[str, str, int]]) -> str:
    """Digest of a layer's ``(path, hash, size)`` entries: order-free, content-sensitive."""
    return digest([name, *sorted(f"{p}\0{h}\0{s}" for p, h, s in entries)])


def _top_modules(files: Iterable[str], site_rel: str) -> frozenset[str]:
    mods = set()
    for f in files:
        if not f.startswith(site_rel + "/"):
            continue
        top = f[len(site_rel) + 1 :].split("/", 1)[0]
        if top.endswith((".dist-info", ".pth")) or top == "__pycache__" or top.startswith(".."):
            continue
        mods.add(top.split(".", 1)[0] if top.endswith((".py", ".so")) else top)
    return frozenset(mods)


def _is_shareable(dist_info: Path) -> bool:
    """From an index: no direct_url.json (a local wheel, a VCS checkout or an editable has one)."""
    return not (dist_info / "direct_url.json").exists()


def dist_layer(dist_info: Path, prefix: Path, site_rel: str) -> Layer:
    """The layer of one installed distribution, from its RECORD."""
    name = normalise(dist_info.name[: -len(".dist-info")].split("-", 1)[0])
    root = str(prefix) + "/"
    entries = [(p, h, _size(root + p)) for p, h in record_entries(dist_info, prefix)]
    present = [(p, h, s) for p, h, s in entries if s >= 0]
    return Layer(
        name=name,
        kind=DIST,
        key=layer_key(f"{DIST}:{name}", present),
        root=prefix,
        files=tuple(sorted(p for p, _, _ in present)),
        size=sum(s for _, _, s in present),
        modules=_top_modules((p for p, _, _ in present), site_rel),
        shareable=_is_shareable(dist_info),
    )


def _walk(root: Path) -> Iterable[str]:
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        rel = os.path.relpath(dirpath, top)
        pre = "" if rel == "." else rel + "/"
        for f in sorted(filenames):
            yield pre + f
        for d in dirnames:
            if os.path.islink(os.path.join(dirpath, d)):
                yield pre + d  # a symlink to a folder (lib64 -> lib)


def content_layer(name: str, kind: str, root: Path, files: Sequence[str]) -> Layer:
    """A layer keyed by the content of its files (symlinks by their targets)."""
    entries = []
    for rel in files:
        path = root / rel
        if path.is_symlink():
            h = "->" + os.readlink(path)
        else:
            h = hashlib.sha256(path.read_bytes()).hexdigest()
        entries.append((rel, h, _size(path)))
    return Layer(name, kind, layer_key(f"{kind}:{name}", entries), root, tuple(sorted(files)),
                 sum(s for _, _, s in entries))  # fmt: skip


def group_of(name: str, groups: int = GROUPS) -> int:
    """The group a small distribution goes to: fixed by its name alone, so installing or
    removing another package never moves it."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % groups


def grouped(dists: Sequence[Layer], below: int = GROUP_BELOW, groups: int = GROUPS) -> list[Layer]:
    """``dists`` with those under ``below`` bytes merged into at most ``groups`` group layers.

    Only shareable distributions are grouped, so a group may go to the shared cache; a
    local wheel stays a layer of its own. A group of one stays that distribution's layer.
    """
    out: list[Layer] = []
    buckets: dict[int, list[Layer]] = {}
    for layer in dists:
        if layer.kind == DIST and layer.shareable and layer.size < below and groups > 0:
            buckets.setdefault(group_of(layer.name, groups), []).append(layer)
        else:
            out.append(layer)
    for i, members in sorted(buckets.items()):
        if len(members) == 1:
            out.append(members[0])
            continue
        members.sort(key=lambda m: m.name)
        out.append(
            Layer(
                name=f"{GROUP}-{i}",
                kind=GROUP,
                key=digest([f"{GROUP}:{i}", *sorted(m.key for m in members)]),
                root=members[0].root,
                files=tuple(sorted(f for m in members for f in m.files)),
                size=sum(m.size for m in members),
                modules=frozenset().union(*(m.modules for m in members)),
                shareable=True,
                members=tuple(m.name for m in members),
            )
        )
    return out


def split(layer: Layer, part_size: int = PART_SIZE) -> list[Layer]:
    """``layer`` as parts of about ``part_size`` bytes, or alone when it is no bigger.

    Its files go largest first, each to the part with the fewest bytes so far (ties: the
    first), so the parts are as even as the largest files allow and the same files always
    make the same parts. ``part_size=0`` never splits.
    """
    count = min(-(-layer.size // part_size), len(layer.files)) if part_size > 0 else 1
    if count <= 1:
        return [layer]
    root = f"{layer.root}/"
    sizes = {f: max(_size(root + f), 0) for f in layer.files}
    parts: list[list[str]] = [[] for _ in range(count)]
    totals = [0] * count
    lightest = [(0, i) for i in range(count)]  # a heap of (bytes so far, part)
    for f in sorted(layer.files, key=lambda f: (-sizes[f], f)):
        total, i = heapq.heappop(lightest)
        parts[i].append(f)
        totals[i] = total + sizes[f]
        heapq.heappush(lightest, (totals[i], i))
    return [
        dataclasses.replace(
            layer,
            key=digest([f"part:{i + 1}/{count}", layer.key]),
            files=tuple(sorted(files)),
            size=totals[i],
            part=f"{i + 1}/{count}",
        )
        for i, files in enumerate(parts)
    ]


def plan(
    prefix: Path,
    site_rel: str,
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
    *,
    group_below: int = GROUP_BELOW,
    groups: int = GROUPS,
    part_size: int | None = None,
) -> Plan:
    """The layers of the venv at ``prefix`` (``site_rel``: its site-packages, relative);
    distributions under ``group_below`` bytes grouped (``group_below=0``: one layer each),
    layers over ``part_size`` bytes (default :data:`PART_SIZE`) split into parts (0: none)."""
    prefix = Path(prefix)
    site = prefix / site_rel
    if not site.is_dir():
        raise LayerError(f"{site} is not a folder: is {prefix} a virtual environment?")
    left_out = {normalise(e) for e in exclude}
    layers: list[Layer] = []
    excluded: list[Layer] = []
    owned: set[str] = set()
    for dist_info in sorted(site.glob("*.dist-info")):
        if not (dist_info / "RECORD").exists():
            continue
        layer = dist_layer(dist_info, prefix, site_rel)
        owned.update(layer.files)
        if layer.name in left_out:
            excluded.append(layer)
        else:
            layers.append(layer)
    rest = [f for f in _walk(prefix) if f not in owned and not f.endswith((".pyc", ".pyo"))]
    base = content_layer(BASE, BASE, prefix, rest)
    planned = [base, *grouped(layers, group_below, groups)]
    size = PART_SIZE if part_size is None else part_size
    parts = tuple(p for layer in planned for p in split(layer, size))
    return Plan(prefix, parts, tuple(excluded))


def check_imports(modules: Iterable[str], plan: Plan) -> None:
    """Refuse modules the experiment uses that only a left-out distribution provides."""
    shipped = {m for layer in plan.layers for m in layer.modules}
    owners = {m: layer.name for layer in plan.left_out for m in layer.modules}
    missing = sorted(m for m in set(modules) if m not in shipped and m in owners)
    if missing:
        dists = sorted({owners[m] for m in missing})
        raise LayerError(
            f"experiment_fn uses {', '.join(missing)}, from {', '.join(dists)}, which is left "
            "out of the shipped environment as notebook-only: pass exclude_packages= a list "
            f"without {', '.join(dists)} (exclude_packages=() ships everything)"
        )


def _label(layer: Layer, shown: int = 4) -> str:
    if layer.part:
        return f"{layer.name} (part {layer.part.replace('/', ' of ')})"
    if not layer.members:
        return layer.name
    names = ", ".join(layer.members[:shown])
    more = len(layer.members) - shown
    return f"{layer.name} ({names}{f' and {more} more' if more > 0 else ''})"


def report_rows(plan: Plan) -> list[tuple[str, str, int, str]]:
    """``(name, kind, bytes, key)`` of each layer, largest first, then what is left out."""
    rows = [(_label(lay), lay.kind, lay.size, lay.key) for lay in plan.layers]
    rows.sort(key=lambda r: -r[2])
    rows += [(name, "excluded", size, "") for name, size in sorted(plan.excluded.items())]
    return rows
