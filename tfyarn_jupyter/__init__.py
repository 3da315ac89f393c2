"""tfyarn_jupyter: distributed TensorFlow on Hadoop YARN, launched and watched from Jupyter.

The library (``run_on_yarn``, ``submit``, ``Experiment``, ``TaskSpec``,
``NodeLabel``), the ``%%tfyarn`` magic (``%load_ext tfyarn_jupyter``) and a
live panel. TensorFlow itself is only imported inside the containers.
"""

from .launch import Run, RunFailed, RunResult, attach, run_on_yarn, submit
from .packing import PackingError
from .spec import Experiment, NodeLabel, SpecError, TaskSpec

__version__ = "0.1.0"

__all__ = [
    "Experiment",
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
