"""What is checked before anything of a run is uploaded or submitted: the program (its
kind, the Keras it needs, a custom task module), the TensorBoard task, and the ``files``
on HDFS. Each refusal is a :class:`~tfyarn_jupyter.core.spec.SpecError` that says what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tfyarn_jupyter.core import program
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.ship import task_modules


def check_program(
    experiment_fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], options: LaunchOptions
) -> str:
    """Refuse a program the shipped TensorFlow cannot run on this topology; return its kind.

    The kind (Estimator, Keras, function) comes from the code ``experiment_fn``
    reaches; the rules are the strategy table's (:func:`.contract.strategy_for`)
    and the measured Keras table (:data:`.contract.KERAS_UNSUPPORTED`). First, a
    ``custom_task_module`` must be importable in the environment that will be shipped.
    """

    task_modules.check_task_module(options)
    kind = contract.FUNCTION if options.mode == "function" else program.program_kind(experiment_fn)
    tf_version = program.tensorflow_version()
    program.check_estimator(kind, tf_version)
    program.check_legacy_keras(options.env)
    try:
        contract.checkpoint_epochs(options.env)
    except contract.ContractError as exc:
        raise SpecError(str(exc)) from None
    if kind == program.UNKNOWN:
        return kind
    topology = {t: s.instances for t, s in task_specs.items()}
    try:
        strategy = contract.strategy_for(kind, topology)
        if kind == contract.KERAS:
            contract.check_keras(strategy, contract.keras_flavour(tf_version, options.env))
    except contract.StrategyError as exc:
        raise SpecError(str(exc)) from None
    return kind


def check_remote_files(options: LaunchOptions) -> None:
    """Every ``files`` source on HDFS exists, and is a file: refused before any upload."""
    for target, uri in options.remote_files.items():
        st = filesystem.status(uri, strict=False)
        if st is None:
            raise SpecError(f"files[{target!r}]: {uri} does not exist")
        if st.get("type") == "DIRECTORY":
            raise SpecError(f"files[{target!r}]: {uri} is a folder; name a file (or an archive)")


def check_tensorboard(task_specs: Mapping[str, TaskSpec], options: LaunchOptions) -> None:
    """A tensorboard task must find its folder, and runs tfyarn's own task module."""
    tb = task_specs.get("tensorboard")
    if tb is None:
        return
    if options.mode == "function" and not tb.tb_model_dir:
        raise SpecError(
            "the tensorboard task reads the Experiment's model dir, and a function run has "
            'none: give the folder your function writes summaries to, "tensorboard": '
            "TaskSpec(..., tb_model_dir=...)"
        )
    if options.custom_task_module:
        raise SpecError(
            f"custom_task_module={options.custom_task_module!r} with a tensorboard task: "
            "the tensorboard task runs tfyarn's own module; drop one of them"
        )
