"""What a launch runs, found before anything is submitted: an Estimator, Keras, or a function.

``experiment_fn`` is not called on the client (that would import TensorFlow
and build the model in the notebook). Instead the code it can reach (its
own, its closures, and the functions of the notebook's own modules it calls)
is read for the classes it returns: :class:`~.spec.Experiment` (an
Estimator) or :class:`~.spec.KerasExperiment`. With that and the installed
TensorFlow, a program that cannot run (an Estimator on TensorFlow 2.16 or
later, a strategy the Keras in use does not support) is refused here.
"""

from __future__ import annotations

import dis
import importlib.metadata
import importlib.util
import sys
import sysconfig
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tfyarn_jupyter.core import spec
from tfyarn_jupyter.protocol.contract import ESTIMATOR, FUNCTION, KERAS, UNKNOWN

__all__ = ["ESTIMATOR", "FUNCTION", "KERAS", "UNKNOWN", "program_kind", "tensorflow_version"]

_LIBRARY_PREFIXES = tuple(
    str(Path(p).resolve())
    for p in {
        sys.prefix,
        sys.base_prefix,
        sysconfig.get_path("stdlib"),
        sysconfig.get_path("purelib"),
    }
)
_RESULT_NAMES = {"Experiment": ESTIMATOR, "KerasExperiment": KERAS}


def _is_user_code(obj: Any) -> bool:
    """Defined in the notebook or its own modules, not in an installed library."""
    module = str(getattr(obj, "__module__", None) or getattr(obj, "__name__", ""))
    if module == "__main__" or (isinstance(obj, types.ModuleType) and obj.__name__ == "__main__"):
        return True
    if module.split(".")[0] in ("tfyarn_jupyter", "tf_yarn"):
        return False
    mod = sys.modules.get(module) if not isinstance(obj, types.ModuleType) else obj
    file = getattr(mod, "__file__", None)
    if not file:
        return module == "__main__"
    return not str(Path(file).resolve()).startswith(_LIBRARY_PREFIXES)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _names(fn: types.FunctionType) -> set[str]:
    return {n for c in _codes(fn.__code__) for n in c.co_names}


def _neighbours(fn: types.FunctionType, names: set[str]) -> Iterator[Any]:
    """What ``fn`` refers to: its closure's cells and its globals by the names it uses;
    for a module among them, its attributes by those names (``module.attr`` calls)."""
    values = []
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    values += [fn.__globals__[n] for n in names if n in fn.__globals__]
    for value in values:
        yield value
        if isinstance(value, types.ModuleType):
            yield from (getattr(value, n) for n in names if hasattr(value, n))


def _reachable(
    fn: Callable[..., Any], limit: int, expand: Callable[[Any], bool] = lambda obj: True
) -> Iterator[Any]:
    """Each object the code of ``fn`` reaches, once, up to ``limit`` of them: the function,
    then the names its code uses (globals, closure cells, module attributes), following
    user functions (and methods' functions) whose object ``expand`` accepts."""
    seen: set[int] = set()
    stack: list[Any] = [fn]
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        yield obj
        if not expand(obj):
            continue
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
        if isinstance(obj, types.FunctionType) and (obj is fn or _is_user_code(obj)):
            stack.extend(_neighbours(obj, _names(obj)))


def _result_kind(obj: Any) -> str | None:
    """The program kind a class stands for (tfyarn's or tf-yarn's Experiment classes)."""
    ours = ("tfyarn_jupyter", "tf_yarn")
    if _is_result_name(obj) and obj.__module__.split(".")[0] in ours:
        return _RESULT_NAMES[obj.__name__]
    return None


def _is_result_name(obj: Any) -> bool:
    return isinstance(obj, type) and obj.__name__ in _RESULT_NAMES


def program_kind(fn: Callable[..., Any], limit: int = 500) -> str:
    """``"estimator"``, ``"keras"`` or ``"unknown"``, from the code ``fn`` can reach."""
    found = {
        kind
        for obj in _reachable(fn, limit, expand=lambda obj: not _is_result_name(obj))
        if (kind := _result_kind(obj)) is not None
    }
    if len(found) == 1:
        return found.pop()
    return UNKNOWN


def tensorflow_version() -> tuple[int, int] | None:
    """The installed TensorFlow's (major, minor), which the shipped environment has too."""
    for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly"):
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        parts = [*version.split("."), "0"]
        try:
            return int(parts[0]), int(parts[1])
        except ValueError:
            return None
    return None


def check_estimator(kind: str, tf_version: tuple[int, int] | None) -> None:
    """An Estimator needs TensorFlow < 2.16, where ``tf.estimator`` still exists."""
    if kind == ESTIMATOR and tf_version is not None and tf_version >= (2, 16):
        raise spec.SpecError(
            f"experiment_fn returns an Estimator Experiment, but this environment has "
            f"TensorFlow {tf_version[0]}.{tf_version[1]}, which has no tf.estimator "
            "(removed in 2.16): return a KerasExperiment(model, model_dir, train_params, ...) "
            "instead, or run a function with mode='function'; or use TensorFlow 2.15"
        )


def check_legacy_keras(environ: Mapping[str, str], installed: bool | None = None) -> None:
    """``TF_USE_LEGACY_KERAS=1`` makes TensorFlow import tf-keras, which must be shipped.

    ``environ`` is the tasks' environment (``LaunchOptions.env``: ``env=`` over the
    notebook's own value), so the check and the tasks read the same value.
    """
    if environ.get("TF_USE_LEGACY_KERAS") not in ("1", "true", "True"):
        return
    if installed is None:
        installed = importlib.util.find_spec("tf_keras") is not None
    if not installed:
        raise spec.SpecError(
            "TF_USE_LEGACY_KERAS=1 (from env= or the notebook's environment, which the tasks "
            "inherit) makes TensorFlow use tf-keras, which this environment lacks: pip install "
            "the tf-keras release matching TensorFlow, or unset the variable (for the tasks "
            'alone: env={"TF_USE_LEGACY_KERAS": "0"})'
        )


def referenced_modules(fn: Callable[..., Any], limit: int = 500) -> set[str]:
    """Top-level modules the code ``fn`` reaches uses: imported inside it, or referenced.

    For the check that what the experiment imports is shipped: a module object or
    a library object among the reachable values gives its module's top-level name,
    and so does each ``import`` statement in that code.
    """
    found: set[str] = set()
    for obj in _reachable(fn, limit):
        module = (
            obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "")
        )
        if isinstance(module, str) and module and module != "__main__":
            found.add(module.split(".")[0])
        target = obj.__func__ if isinstance(obj, types.MethodType) else obj
        if isinstance(target, types.FunctionType) and (target is fn or _is_user_code(target)):
            found.update(_imported(target.__code__))
    return found


def _imported(code: types.CodeType) -> set[str]:
    """Top-level names of the ``import`` statements in ``code`` and its nested code."""
    return {
        str(ins.argval).split(".")[0]
        for c in _codes(code)
        for ins in dis.get_instructions(c)
        if ins.opname == "IMPORT_NAME" and ins.argval
    }
