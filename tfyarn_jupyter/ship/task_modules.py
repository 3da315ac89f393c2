"""Whether a ``custom_task_module`` can run in the environment a launch ships.

Each container runs ``python -m <custom_task_module>`` in the shipped
environment: this client's venv (its layers, less the distributions left out
of them), plus what the launch ships beside it (``files``, the source roots and
editable installs, on the tasks' ``PYTHONPATH``). A module none of them holds
fails in every container after everything was uploaded (``No module named ...``);
:func:`check_task_module` refuses it on the client instead, before anything is
uploaded. The module is located without importing it or its packages (no
package code runs in the notebook). tf-yarn's module names are mapped or refused
earlier, in :mod:`tfyarn_jupyter.core.options`.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.ship import layers, packing

_SHIP_IT = (
    "ship it with files={{'{name}.py': PATH}} (a package: files={{'{name}': FOLDER}}) or "
    "source_roots=, or install it in the notebook's environment"
)


def _descend(spec: ModuleSpec | None, parts: Sequence[str]) -> ModuleSpec | None:
    """The spec of ``parts`` under the package ``spec``, found without importing anything."""
    for part in parts:
        locations = spec.submodule_search_locations if spec is not None else None
        if locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, list(locations))
    return spec


def find_in(module: str, folders: Iterable[str | os.PathLike]) -> ModuleSpec | None:
    """The module's spec in these folders alone (as on ``PYTHONPATH``), else None."""
    top, *rest = module.split(".")
    spec = importlib.machinery.PathFinder.find_spec(top, [str(f) for f in folders])
    return _descend(spec, rest) if spec is not None else None


def find_here(module: str) -> ModuleSpec | None:
    """The module's spec in this process: its top-level package through every finder
    (editable installs' included), the rest by path, so no package code runs."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):  # a broken finder; a module without a __spec__
        return None
    return _descend(spec, rest) if spec is not None else None


def in_files(module: str, files: Mapping[str, Path]) -> ModuleSpec | None:
    """The module's spec when a ``files`` target provides it (``name.py``, an extension
    module, or a folder holding it: the container's folder is on ``PYTHONPATH``)."""
    top, *rest = module.split(".")
    for target, source in files.items():
        if not rest and (target == f"{top}.py" or target.startswith(f"{top}.cpython-")):
            return ModuleSpec(top, None, origin=str(source))
        if target == top and source.is_dir():
            spec = ModuleSpec(top, None, origin=str(source), is_package=True)
            spec.submodule_search_locations = [str(source)]
            return _descend(spec, rest) if rest else spec
    return None


def _under(path: Path, roots: Iterable[str | os.PathLike]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(Path(r).resolve()) for r in roots)


def excluded_owner(top: str, excluded: Iterable[str]) -> str | None:
    """The left-out distribution that alone provides the top-level module ``top``, if any."""
    left_out = {layers.normalise(e) for e in excluded}
    if not left_out:
        return None
    owners = {layers.normalise(d) for d in importlib.metadata.packages_distributions().get(top, [])}
    return min(owners) if owners and owners <= left_out else None


def _runnable(module: str, spec: ModuleSpec) -> None:
    """``python -m`` runs a package through its ``__main__`` module only."""
    if spec.submodule_search_locations is not None and _descend(spec, ["__main__"]) is None:
        raise SpecError(
            f"custom_task_module={module!r} is a package without a __main__ module, which "
            f"`python -m` cannot run: name the module that runs the task ({module}.SOMETHING)"
        )


def _unchecked(options: LaunchOptions) -> bool:
    """The launch adds modules the client cannot see: an archive built elsewhere, packages
    installed for the tasks, a hook that may install them, or the nodes' own PYTHONPATH."""
    return bool(
        options.pyenv_archive is not None
        or options.pip_packages
        or options.pre_script_hook
        or "PYTHONPATH" in options.env
    )


def _paths(spec: ModuleSpec) -> list[Path]:
    """The file, or the folders, a spec stands for (none: built into the interpreter)."""
    if spec.origin and spec.has_location:
        return [Path(spec.origin)]
    return [Path(p) for p in spec.submodule_search_locations or ()]


def _refuse(module: str, why: str) -> SpecError:
    name = module.split(".")[0]
    return SpecError(f"custom_task_module={module!r} {why}: {_SHIP_IT.format(name=name)}")


def _found_here(module: str, options: LaunchOptions, prefix: Path) -> ModuleSpec | None:
    """The module's spec where this process finds it, if that is shipped; None when it is
    not, but the launch adds modules the client cannot see; refused otherwise."""
    spec = find_here(module)
    if spec is None:
        if _unchecked(options):
            return None
        raise _refuse(
            module,
            f"is not in the environment a launch ships (this notebook's, {prefix}, with its "
            "files= and source roots), so every task would fail with `No module named`",
        )
    paths = _paths(spec)
    stdlib = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
    if paths and not any(_under(p, [prefix, *stdlib]) for p in paths):
        if _unchecked(options):
            return None
        raise _refuse(module, f"is importable here from {paths[0]}, which is not shipped")
    exclude = (
        layers.DEFAULT_EXCLUDE if options.exclude_packages is None else options.exclude_packages
    )
    site = packing.site_packages(prefix)
    if options.layers and paths and all(_under(p, [site]) for p in paths):
        owner = excluded_owner(module.split(".")[0], exclude)
        if owner is not None:
            raise SpecError(
                f"custom_task_module={module!r} comes from {owner}, which is left out of the "
                "shipped environment as notebook-only: pass exclude_packages= a list without "
                f"{owner} (exclude_packages=() ships everything)"
            )
    return spec


def check_task_module(options: LaunchOptions) -> None:
    """Refuse a ``custom_task_module`` that the environment a launch ships cannot import.

    Where it is found decides: a ``files`` target, a source root or an editable
    install (all shipped beside the venv), the venv itself (less the distributions
    left out of its layers), or the interpreter's standard library. Found nowhere, or
    only somewhere not shipped (the notebook's folder), it is refused, unless the
    launch adds modules the client cannot see (:func:`_unchecked`). A package must
    have a ``__main__`` module, as ``python -m`` wants.
    """
    module = options.custom_task_module
    if module is None or options.pyenv_archive is not None:
        return
    prefix = Path(sys.prefix)
    sources = [*options.source_roots.values(), *packing.editable_roots(prefix)]
    spec = (
        in_files(module, options.files)
        or (find_in(module, sources) if sources else None)
        or _found_here(module, options, prefix)
    )
    if spec is not None:
        _runnable(module, spec)
