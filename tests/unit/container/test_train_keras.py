"""A KerasExperiment's fit arguments (its data functions, validation, where a resumed run
starts) and the epochs its trainers checkpoint at."""

from __future__ import annotations

from tfyarn_jupyter.container.train_keras import CheckpointSaver, fit_params, step_of
from tfyarn_jupyter.core.spec import KerasExperiment
from tfyarn_jupyter.protocol import contract


def experiment(**fields) -> KerasExperiment:
    params = {"epochs": 4, "steps_per_epoch": 10, "callbacks": ["user"]}
    base = {"model": "m", "model_dir": "/d", "train_params": params,
            "input_data_fn": lambda: "x", "target_data_fn": lambda: "y",
            "validation_data_fn": lambda: "val"}  # fmt: skip
    return KerasExperiment(**{**base, **fields})


def test_fit_gets_the_train_params_and_the_data_functions_data():
    params = fit_params(experiment(), contract.MULTI_WORKER_MIRRORED, evaluator=False, step=0)
    assert params == {"epochs": 4, "steps_per_epoch": 10, "callbacks": ["user"], "x": "x",
                      "y": "y", "validation_data": "val"}  # fmt: skip


def test_the_callbacks_list_is_a_copy_the_task_can_extend():
    exp = experiment()
    fit_params(exp, contract.DEFAULT, evaluator=False, step=0)["callbacks"].append("mine")
    assert exp.train_params["callbacks"] == ["user"]


def test_validation_data_feeds_the_evaluator_when_there_is_one_and_never_a_ps_fit():
    assert "validation_data" not in fit_params(experiment(), contract.DEFAULT, True, 0)
    assert "validation_data" not in fit_params(experiment(), contract.PARAMETER_SERVER, False, 0)
    given = experiment(train_params={"validation_data": "own"}, validation_data_fn=lambda: "v")
    assert fit_params(given, contract.DEFAULT, False, 0)["validation_data"] == "own"


def test_a_resumed_run_starts_at_the_epoch_its_step_is_in():
    assert fit_params(experiment(), contract.DEFAULT, False, step=25)["initial_epoch"] == 2
    own = experiment(train_params={"steps_per_epoch": 10, "initial_epoch": 1})
    assert fit_params(own, contract.DEFAULT, False, step=25)["initial_epoch"] == 1
    no_steps = experiment(train_params={"epochs": 3})
    assert "initial_epoch" not in fit_params(no_steps, contract.DEFAULT, False, step=25)


def test_missing_data_functions_leave_x_and_y_to_the_train_params():
    exp = experiment(input_data_fn=None, target_data_fn=None, train_params={"x": "given"})
    params = fit_params(exp, contract.DEFAULT, True, 0)
    assert params["x"] == "given" and "y" not in params


def test_a_checkpoints_step_is_its_number():
    assert step_of("/tmp/model/ckpt-120") == 120
    assert step_of("hdfs-model-1a2b/ckpt-7") == 7


class FakeManager:
    def __init__(self) -> None:
        self.saved: list[int] = []

    def save(self, checkpoint_number: int) -> None:
        self.saved.append(checkpoint_number)


class FakeModel:
    """A model whose optimizer's step count the test advances by epochs of 10 steps."""

    def __init__(self, step: int = 0) -> None:
        self.optimizer = type("Opt", (), {"iterations": step})()


def train(saver: CheckpointSaver, model: FakeModel, first_epoch: int, epochs: int) -> None:
    for epoch in range(first_epoch, epochs):
        model.optimizer.iterations += 10
        saver.on_epoch_end(epoch)
    saver.on_train_end()


def test_the_saver_checkpoints_every_nth_epoch_and_at_the_end_of_training():
    manager, model = FakeManager(), FakeModel()
    train(CheckpointSaver(manager, None, model, every=3), model, 0, 7)
    assert manager.saved == [30, 60, 70]


def test_every_epoch_is_the_default_and_the_end_saves_no_step_twice():
    manager, model = FakeManager(), FakeModel()
    train(CheckpointSaver(manager, None, model), model, 0, 3)
    assert manager.saved == [10, 20, 30]


def test_a_resumed_run_keeps_the_epochs_it_checkpoints_at():
    """Keras numbers a resumed run's epochs from its initial epoch, so the saver does too."""
    manager, model = FakeManager(), FakeModel(step=30)
    train(CheckpointSaver(manager, None, model, step=30, every=2), model, 3, 7)
    assert manager.saved == [40, 60, 70]
