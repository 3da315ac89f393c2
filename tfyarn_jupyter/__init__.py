"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, launched and watched from Jupyter.

The library (``run_on_yarn``, ``submit``, ``Experiment``, ``TaskSpec``,
``NodeLabel``), the ``%%tfyarn`` magic (``%load_ext tfyarn_jupyter``) and a
live panel. TensorFlow itself is only imported inside the containers.
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
    "Run",
    "RunFailed",
    "RunResult",
    "SpecError",
    "TaskSpec",
    "attach",
    "run_on_yarn",
    "submit",
]


def load_ipython_extension(ipython):  # pragma: no cover - exercised by the kernel tests
    from .magic import load_ipython_extension as load

    load(ipython)
