"""What is refused before anything of a run is uploaded or submitted (``run/checks.py``)."""

from __future__ import annotations

import pytest

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.protocol.contract import CHECKPOINT_EPOCHS_VAR
from tfyarn_jupyter.run.checks import check_program

CHIEF = {"chief": TaskSpec("1G", 1)}


def experiment_fn() -> None:
    return None


def test_a_bad_checkpoint_interval_is_a_spec_error_before_any_submission():
    options = LaunchOptions(env={CHECKPOINT_EPOCHS_VAR: "0"})
    with pytest.raises(SpecError, match="TFYARN_CHECKPOINT_EPOCHS='0': give a whole number"):
        check_program(experiment_fn, CHIEF, options)


def test_a_whole_number_of_epochs_passes():
    options = LaunchOptions(env={CHECKPOINT_EPOCHS_VAR: "3"})
    assert check_program(experiment_fn, CHIEF, options)
