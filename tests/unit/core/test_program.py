"""What a launch runs is read from the code the function reaches, without calling it."""

from __future__ import annotations

import sys

import pytest

from tfyarn_jupyter import Experiment, KerasExperiment, SpecError, TaskSpec
from tfyarn_jupyter.core import program
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.run.checks import check_program


def estimator_fn():
    return Experiment(None, None, None)


def keras_fn():
    return KerasExperiment(None, "hdfs:///m", {})


def calls_a_helper():
    return estimator_fn()


def test_the_returned_class_gives_the_kind_through_helpers_and_closures():
    assert program.program_kind(estimator_fn) == program.ESTIMATOR
    assert program.program_kind(keras_fn) == program.KERAS
    assert program.program_kind(calls_a_helper) == program.ESTIMATOR

    def closure(make=keras_fn):
        return make()

    inner = keras_fn
    assert program.program_kind(lambda: inner()) == program.KERAS
    assert program.program_kind(closure) == program.UNKNOWN  # defaults are not followed
    assert program.program_kind(lambda: 42) == program.UNKNOWN


def test_a_function_in_a_local_module_is_followed_through_module_attributes(tmp_path):
    (tmp_path / "localmod_kind.py").write_text(
        "from tfyarn_jupyter import KerasExperiment\n"
        "def experiment(d):\n    return KerasExperiment(None, d, {})\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        namespace: dict = {}
        exec("import localmod_kind\ndef experiment_fn():\n    return localmod_kind.experiment('x')",
             namespace)  # fmt: skip
        fn = namespace["experiment_fn"]
        assert program.program_kind(fn) == program.KERAS
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("localmod_kind", None)


@pytest.mark.parametrize(("version", "refused"), [((2, 15), False), ((2, 16), True),
                                                  ((2, 21), True), (None, False)])  # fmt: skip
def test_an_estimator_is_refused_from_tensorflow_2_16_on_naming_the_version(version, refused):
    if not refused:
        program.check_estimator(program.ESTIMATOR, version)
        return
    with pytest.raises(SpecError, match=rf"TensorFlow {version[0]}\.{version[1]}.*KerasExperiment"):
        program.check_estimator(program.ESTIMATOR, version)
    program.check_estimator(program.KERAS, version)  # Keras runs there


def test_an_estimator_with_workers_needs_a_ps_but_keras_and_functions_do_not(monkeypatch):
    monkeypatch.setattr(program, "tensorflow_version", lambda: (2, 15))
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2)}
    with pytest.raises(SpecError, match='through a "ps"'):
        check_program(estimator_fn, specs, LaunchOptions())
    assert check_program(keras_fn, specs, LaunchOptions()) == program.KERAS
    assert check_program(estimator_fn, specs, LaunchOptions(mode="function")) == "function"


def test_the_installed_tensorflow_version_is_read_from_package_metadata():
    version = program.tensorflow_version()
    assert version is None or (version[0] >= 2 and version[1] >= 0)


@pytest.mark.parametrize(
    ("version", "env", "refused"),
    [((2, 21), {}, True), ((2, 21), {"TF_USE_LEGACY_KERAS": "1"}, False), ((2, 15), {}, False)],
)
def test_keras_strategies_the_keras_in_use_cannot_train_are_refused_saying_what_works(
    monkeypatch, version, env, refused
):
    monkeypatch.setattr(program, "tensorflow_version", lambda: version)
    monkeypatch.setattr(program.importlib.util, "find_spec", lambda name: object())  # tf-keras
    opts = LaunchOptions(env=env)
    for specs in (
        {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2)},
        {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1), "ps": TaskSpec(512, 1)},
    ):
        if refused:
            with pytest.raises(SpecError, match="TF_USE_LEGACY_KERAS"):
                check_program(keras_fn, specs, opts)
        else:
            assert check_program(keras_fn, specs, opts) == program.KERAS
    assert check_program(keras_fn, {"chief": TaskSpec(1024, 1)}, opts) == program.KERAS


def test_a_module_captured_by_a_closure_is_followed_like_a_global(tmp_path):
    (tmp_path / "closuremod_kind.py").write_text(
        "from tfyarn_jupyter import KerasExperiment\n"
        "def experiment(d):\n    return KerasExperiment(None, d, {})\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import closuremod_kind  # type: ignore[import-not-found]

        def make(module):
            def experiment_fn():
                return module.experiment("x")

            return experiment_fn

        assert program.program_kind(make(closuremod_kind)) == program.KERAS
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("closuremod_kind", None)


def test_legacy_keras_asked_for_without_tf_keras_installed_is_refused():
    with pytest.raises(SpecError, match=r"tf-keras.*lacks"):
        program.check_legacy_keras({"TF_USE_LEGACY_KERAS": "1"}, installed=False)
    program.check_legacy_keras({"TF_USE_LEGACY_KERAS": "1"}, installed=True)
    program.check_legacy_keras({}, installed=False)


def test_the_keras_check_reads_the_notebooks_keras_choice_as_the_tasks_do(monkeypatch):
    # A notebook that trains with tf-keras (TF_USE_LEGACY_KERAS=1 in its environment)
    # is not refused all-reduce on TensorFlow 2.21: its tasks inherit the variable.
    monkeypatch.setattr(program, "tensorflow_version", lambda: (2, 21))
    monkeypatch.setattr(program.importlib.util, "find_spec", lambda name: object())  # tf-keras
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2)}
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    assert check_program(keras_fn, specs, LaunchOptions()) == program.KERAS
    # env= setting it otherwise wins, for the check as for the tasks.
    with pytest.raises(SpecError, match="TF_USE_LEGACY_KERAS"):
        check_program(keras_fn, specs, LaunchOptions(env={"TF_USE_LEGACY_KERAS": "0"}))
    monkeypatch.delenv("TF_USE_LEGACY_KERAS")
    with pytest.raises(SpecError, match="TF_USE_LEGACY_KERAS"):
        check_program(keras_fn, specs, LaunchOptions())


def test_the_notebooks_legacy_keras_without_tf_keras_is_refused_saying_where_it_came_from(
    monkeypatch,
):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    with pytest.raises(SpecError) as exc:
        program.check_legacy_keras(LaunchOptions().env, installed=False)
    assert "the notebook's environment" in str(exc.value)
    assert 'env={"TF_USE_LEGACY_KERAS": "0"}' in str(exc.value)
