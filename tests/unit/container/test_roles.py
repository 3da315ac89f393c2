"""Which role a task runs: its type, the mode, and the program's kind (the client's or its own).

The role functions are replaced by recorders: this is the dispatch alone, with no TensorFlow.
"""

from __future__ import annotations

import types

import cloudpickle
import pytest

from tfyarn_jupyter.container import progress, roles, train_estimator, train_function, train_keras
from tfyarn_jupyter.container import task as tasks
from tfyarn_jupyter.core.spec import Experiment, KerasExperiment
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.contract import PAYLOAD, TaskContract


class KV(dict):
    def get_range(self) -> dict:
        return dict(self)


class App:
    def __init__(self) -> None:
        self.kv = KV()
        self.shutdowns: list = []

    def shutdown(self, status, diagnostics=""):
        self.shutdowns.append((str(status), diagnostics))

    def get_containers(self, **_kwargs):
        return []


def task_for(monkeypatch, tmp_path, container, topology, fn=None, **contract) -> tasks.Task:
    for var, value in TaskContract(topology, ack_timeout_s=0, **contract).to_env().items():
        monkeypatch.setenv(var, value)
    monkeypatch.chdir(tmp_path)
    (tmp_path / PAYLOAD).write_bytes(cloudpickle.dumps(fn or (lambda: None)))
    return tasks.Task(App(), container)


@pytest.fixture
def calls(monkeypatch) -> list:
    """Every role function called, as ``(name, args)``; TensorFlow's version as 2.15."""
    seen: list = []

    def recorder(name):
        return lambda *args, **kwargs: seen.append((name, args[1:], kwargs))

    for module, name in [(train_estimator, "train"), (train_estimator, "evaluate"),
                         (train_keras, "run"), (train_keras, "evaluate"),
                         (train_function, "run")]:  # fmt: skip
        monkeypatch.setattr(module, name, recorder(f"{module.__name__.split('.')[-1]}.{name}"))
    monkeypatch.setattr(tasks.Task, "serve", lambda self, cluster, until: seen.append(
        ("serve", (sorted(until),), {})))  # fmt: skip
    monkeypatch.setattr(roles, "tf_has_estimator", lambda: True)
    return seen


def estimator_fn():
    return Experiment("estimator", types.SimpleNamespace(hooks=None), "eval_spec")


def keras_fn():
    return KerasExperiment("model", "/model", {"epochs": 1})


PS = {"chief": 1, "worker": 2, "ps": 1, "evaluator": 1}


def test_a_ps_serves_until_every_trainer_ended(monkeypatch, tmp_path, calls):
    roles.run_role(task_for(monkeypatch, tmp_path, "ps_0", PS, program="keras"), {})
    assert calls == [("serve", (["chief:0", "worker:0", "worker:1"],), {})]


def test_function_mode_runs_the_function_in_every_task_type(monkeypatch, tmp_path, calls):
    for container in ("chief_0", "ps_0", "evaluator_0"):
        roles.run_role(task_for(monkeypatch, tmp_path, container, PS, mode="function"), {})
    assert [c[0] for c in calls] == ["train_function.run"] * 3


@pytest.mark.parametrize(("fn", "role"), [(estimator_fn, "train_estimator.evaluate"),
                                          (keras_fn, "train_keras.evaluate")])  # fmt: skip
def test_the_evaluator_evaluates_what_experiment_fn_returns(monkeypatch, tmp_path, calls, fn, role):
    task = task_for(monkeypatch, tmp_path, "evaluator_0", PS, fn)
    roles.run_role(task, {})
    assert [c[0] for c in calls] == [role]
    assert events.task_key("evaluator:0", "start") in task.app.kv


def test_a_keras_trainer_builds_its_experiment_in_the_keras_role(monkeypatch, tmp_path, calls):
    roles.run_role(
        task_for(monkeypatch, tmp_path, "worker_1", PS, keras_fn, program="keras"), {"c": []}
    )
    ((name, args, kwargs),) = calls
    assert name == "train_keras.run" and args[0] == {"c": []} and kwargs == {}
    assert args[1]().model == "model", "the payload itself, to call inside the strategy's scope"


def test_an_unknown_program_that_returns_an_estimator_trains_it(monkeypatch, tmp_path, calls):
    task = task_for(monkeypatch, tmp_path, "chief_0", PS, estimator_fn)
    roles.run_role(task, {})
    assert [c[0] for c in calls] == ["train_estimator.train"]


def test_an_unknown_program_that_returns_keras_is_handed_what_it_built(
    monkeypatch, tmp_path, calls
):
    roles.run_role(task_for(monkeypatch, tmp_path, "chief_0", PS, keras_fn), {})
    ((name, _args, kwargs),) = calls
    assert name == "train_keras.run" and kwargs["built"].model == "model"


@pytest.mark.parametrize(
    ("topology", "has_estimator", "program"),
    [
        ({"chief": 1}, True, "unknown"),
        ({"chief": 1, "worker": 1, "ps": 1}, True, "unknown"),
        ({"chief": 1}, False, "keras"),
        ({"chief": 1, "worker": 2}, True, "keras"),
        ({"worker": 2}, True, "keras"),
    ],
)
def test_an_unknown_program_is_keras_where_an_estimator_cannot_run(
    monkeypatch, tmp_path, topology, has_estimator, program
):
    monkeypatch.setattr(roles, "tf_has_estimator", lambda: has_estimator)
    assert roles.program(task_for(monkeypatch, tmp_path, "chief_0", topology)) == program
    told = task_for(monkeypatch, tmp_path, "chief_0", topology, program="estimator")
    assert roles.program(told) == "estimator"


def test_a_trainer_reports_progress_and_a_failed_role_its_traceback(monkeypatch, tmp_path):
    def role(task, cluster):
        progress.report(step=5, loss=0.5)
        raise RuntimeError("diverged")

    monkeypatch.setattr(roles, "run_role", role)
    monkeypatch.setenv("TF_CONFIG", "")  # the task sets it: put back afterwards
    monkeypatch.setattr(progress, "_current", None)
    task = task_for(monkeypatch, tmp_path, "chief_0", {"chief": 1})
    assert roles.run(task) == 1
    ev = events.parse(task.app.kv)
    assert ev.progress["chief:0"]["step"] == 5, "the last figures are flushed at the end"
    assert "RuntimeError: diverged" in ev.traceback("chief:0")
    assert not task.port_hold.held


def test_a_task_whose_code_raised_ends_the_application_instead_of_being_restarted(
    monkeypatch, tmp_path
):
    def role(task, cluster):
        raise RuntimeError("eval input broken")

    monkeypatch.setattr(roles, "run_role", role)
    monkeypatch.setenv("TF_CONFIG", "")
    monkeypatch.setattr(progress, "_current", None)
    monkeypatch.delenv("SKEIN_CONTAINER_ID", raising=False)
    # No peers to wait for: the evaluator is outside the TensorFlow cluster.
    task = task_for(monkeypatch, tmp_path, "evaluator_0", {"evaluator": 1})
    assert roles.run(task) == 1
    assert task.app.shutdowns == [("FAILED", "Failure in service evaluator, its code raised")]
    # A trainer too: skein's max_restarts restarts lost containers, not failed code.
    chief = task_for(monkeypatch, tmp_path, "chief_0", {"chief": 1})
    assert roles.run(chief) == 1
    assert chief.app.shutdowns == [("FAILED", "Failure in service chief, its code raised")]
