"""Run a plain function in every task (tf-yarn's ``tf_yarn.distributed``).

The function takes no arguments. In each chief, worker and evaluator task it
is called with ``TF_CONFIG`` set, and ``RANK``, ``WORLD_SIZE``,
``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK`` for code that is not
TensorFlow; it builds whatever strategy it wants and trains with a custom
loop or ``fit``. A ps task serves TensorFlow variables until the trainers end.
Inside, ``tfyarn_jupyter.task_info()`` gives the same figures and
``tfyarn_jupyter.report(step=..., loss=...)`` feeds the panel's progress.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.run import launch


def submit(fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], **options: Any) -> launch.Run:
    """:func:`tfyarn_jupyter.submit` with ``mode="function"``."""
    return launch.submit(fn, task_specs, mode="function", **options)


def run_on_yarn(
    fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], **options: Any
) -> launch.RunResult:
    """:func:`tfyarn_jupyter.run_on_yarn` with ``mode="function"``."""
    return launch.run_on_yarn(fn, task_specs, mode="function", **options)
