"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, launched and watched from Jupyter.

The library (``run_on_yarn``, ``submit``, ``Experiment``, ``TaskSpec``,
``NodeLabel``), the ``%%tfyarn`` magic (``%load_ext tfyarn_jupyter``) and a
live panel. TensorFlow itself is only imported inside the containers.
Inside a task, ``report``, ``ProgressCallback`` and ``task_info`` (loaded on
first use, without TensorFlow) feed the progress and say where the task stands.
"""

from importlib.metadata import PackageNotFoundError, version

from .options import LaunchOptions
from .packing import PackingError
from .run import Run, RunFailed, RunResult, attach, run_on_yarn, submit
from .spec import Experiment, KerasExperiment, NodeLabel, SpecError, TaskSpec

try:
    __version__ = version("tfyarn_jupyter")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "Experiment",
    "KerasExperiment",
    "LaunchOptions",
    "NodeLabel",
    "PackingError",
    "ProgressCallback",
    "Run",
    "RunFailed",
    "RunResult",
    "SpecError",
    "TaskInfo",
    "TaskSpec",
    "attach",
    "report",
    "run_on_yarn",
    "submit",
    "task_info",
]

#: The container side's public names: ``name -> module``, imported on first use.
_LAZY = {
    "report": "progress",
    "ProgressCallback": "progress",
    "task_info": "train_function",
    "TaskInfo": "train_function",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the kernel tests
    from .magic import load_ipython_extension as load

    load(ipython)
