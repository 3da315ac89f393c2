"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, launched and watched from Jupyter.

The library (``run_on_yarn``, ``submit``, ``Experiment``, ``TaskSpec``,
``NodeLabel``), the ``%%tfyarn`` magic (``%load_ext tfyarn_jupyter``) and a
live panel. TensorFlow itself is only imported inside the containers.
Inside a task, ``report``, ``ProgressCallback`` and ``task_info`` (loaded on
first use, without TensorFlow) feed the progress and say where the task stands.
"""

from tfyarn_jupyter._version import __version__ as __version__
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import Experiment, KerasExperiment, NodeLabel, SpecError, TaskSpec
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

#: The container side's public names: ``name -> module``, imported on first use.
_LAZY = {
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


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the kernel tests
    from tfyarn_jupyter.magic.extension import load_ipython_extension as load

    load(ipython)
