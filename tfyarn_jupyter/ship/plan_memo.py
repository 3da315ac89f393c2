"""A venv's layer plan, kept between launches while the venv's files are unchanged.

Planning (:func:`tfyarn_jupyter.ship.layers.plan`) reads every file of the venv: a
TensorFlow venv holds 55 k of them, 0.6-0.9 CPU-s on each launch here, and a notebook
launches from the same venv again and again. So the plan is kept with a stamp of what it
read: the modification time and size of every file it planned and of every folder on the
way to them (adding, removing or renaming a file changes its folder's time). Checking the
stamp is stat calls only (0.24 CPU-s there); any difference plans again.

What the stamp cannot see: a file added to a folder that holds no planned file and leads
to none (an empty folder, or one of bytecode only, which is never shipped). A plan read
while files were being written (their times within :data:`SETTLE_S` of the planning) is
not kept, as git does for its index: the next launch plans again.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from tfyarn_jupyter.ship import layers

#: How many plans are kept (one per venv and exclusion list).
KEEP = 4
#: A plan is kept only when every file it read was last written this long before planning.
SETTLE_S = 2.0

Stamp = tuple[tuple[str, int, int], ...]
_kept: dict[tuple[str, str, tuple[str, ...]], tuple[Stamp, layers.Plan]] = {}
_lock = threading.Lock()


def stamp(prefix: Path, files: Iterable[str]) -> Stamp | None:
    """``(path, mtime_ns, size)`` of ``files`` (relative to ``prefix``) and of the folders
    leading to them, in a fixed order; ``None`` when one of them is gone."""
    root = str(prefix)
    wanted = set(files)
    folders = {""}
    for rel in wanted:
        head = os.path.dirname(rel)
        while head not in folders:
            folders.add(head)
            head = os.path.dirname(head)
    out = []
    for rel in sorted(folders | wanted):
        try:
            st = os.lstat(os.path.join(root, rel) if rel else root)
        except OSError:
            return None
        out.append((rel, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _planned_files(plan: layers.Plan) -> set[str]:
    return {f for layer in (*plan.layers, *plan.left_out) for f in layer.files}


def plan(prefix: Path, site_rel: str, exclude: Iterable[str]) -> layers.Plan:
    """:func:`layers.plan` of the venv at ``prefix``, the kept one while its stamp holds."""
    key = (str(prefix), site_rel, tuple(sorted({layers.normalise(e) for e in exclude})))
    held = _kept.get(key)
    if held is not None:
        kept_stamp, kept_plan = held
        if stamp(prefix, (rel for rel, _, _ in kept_stamp if rel)) == kept_stamp:
            return kept_plan
    started_ns = time.time_ns()
    fresh = layers.plan(prefix, site_rel, key[2])
    now = stamp(prefix, _planned_files(fresh))
    settled = started_ns - int(SETTLE_S * 1e9)
    if now is not None and all(mtime < settled for _, mtime, _ in now):
        with _lock:  # runs launched from several threads (the magic's) plan at once
            _kept.pop(key, None)
            while len(_kept) >= KEEP:
                del _kept[next(iter(_kept))]
            _kept[key] = (now, fresh)
    return fresh


def forget() -> None:
    """Drop every kept plan (tests, and a caller that knows the venv changed)."""
    with _lock:
        _kept.clear()
