"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, launched and watched from Jupyter.

The library (``run_on_yarn``, ``submit``, ``Experiment``, ``TaskSpec``,
``NodeLabel``), the ``%%tfyarn`` magic (``%load_ext tfyarn_jupyter``) and a
live panel. TensorFlow itself is only imported inside the containers.
Inside a task, ``report``, ``ProgressCallback`` and ``task_info`` (loaded on
first use, without TensorFlow) feed the progress and say where the task stands.
"""

from typing import TYPE_CHECKING

from tfyarn_jupyter.core.spec import Experiment, KerasExperiment, NodeLabel, SpecError, TaskSpec

if TYPE_CHECKING:  # imported on first use (``_LAZY``); named here for type checkers
    from tfyarn_jupyter._version import __version__ as __version__
    from tfyarn_jupyter.container.progress import ProgressCallback, report
    from tfyarn_jupyter.container.train_function import TaskInfo, task_info
    from tfyarn_jupyter.core.options import LaunchOptions
    from tfyarn_jupyter.hadoop.resourcemanager import cluster_gpus
    from tfyarn_jupyter.run.launch import Run, RunFailed, RunResult, attach, run_on_yarn, submit
    from tfyarn_jupyter.ship.layered_launch import environment_report
    from tfyarn_jupyter.ship.packing import PackingError

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
    "cluster_gpus",
    "environment_report",
    "report",
    "run_on_yarn",
    "submit",
    "task_info",
]

#: The public names imported on first use, ``name -> module``. Every task's container
#: imports this package (its entry point is ``tfyarn_jupyter.container``), and so does the
#: client's check that a cell's function unpickles in a fresh interpreter: eagerly, the
#: launching side's modules (skein's model, the ResourceManager's client, the launcher)
#: cost a container 0.33 CPU-s and that check 0.7 (2026-12-07), for what only a client
#: needs. The spec classes above are cheap, and an unpickled ``experiment_fn`` needs them.
_LAZY = {
    "__version__": "_version",
    "LaunchOptions": "core.options",
    "cluster_gpus": "hadoop.resourcemanager",
    "Run": "run.launch",
    "RunFailed": "run.launch",
    "RunResult": "run.launch",
    "attach": "run.launch",
    "run_on_yarn": "run.launch",
    "submit": "run.launch",
    "environment_report": "ship.layered_launch",
    "PackingError": "ship.packing",
    "report": "container.progress",
    "ProgressCallback": "container.progress",
    "task_info": "container.train_function",
    "TaskInfo": "container.train_function",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the kernel tests
    from tfyarn_jupyter.magic.extension import load_ipython_extension as load

    load(ipython)
