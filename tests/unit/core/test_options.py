"""Launch options: checked at construction, the same from keywords and from the magic."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import skein

from tfyarn_jupyter.core import options as options_module
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.run.skein_app import task_env


@pytest.fixture
def full(tmp_path) -> LaunchOptions:
    src = tmp_path / "model.py"
    src.write_text("X = 1\n")
    return LaunchOptions(
        files={"model.py": src},
        env={"A": "1", contract.PEER_TIMEOUT_VAR: "45"},
        queue="ml-gpu",
        pip_packages=["six"],
        file_systems=["hdfs://nn2:8020"],
        name="exp",
        acls={"view": ["bob"]},
        nb_retries=2,
        pyenv_archive="hdfs:///envs/e.tar",
        detach=True,
        source_roots={str(tmp_path): tmp_path},
        peer_timeout_s=60.0,
        layers=False,
        ship_interpreter=False,
        exclude_packages=["mypy"],
        shared_layer_cache="/apps/tfyarn/layers",
        layer_codec="zstd",
    )


def test_every_field_survives_a_round_trip_through_its_keywords(full):
    keywords = {f.name: getattr(full, f.name) for f in dataclasses.fields(LaunchOptions)}
    again = LaunchOptions.from_keywords(keywords)
    assert again == full
    for f in dataclasses.fields(LaunchOptions):
        assert getattr(again, f.name) == getattr(full, f.name), f.name


def test_the_environment_ships_as_layers_unless_told_otherwise():
    opts = LaunchOptions()
    assert opts.layers is True
    assert (opts.ship_interpreter, opts.exclude_packages, opts.shared_layer_cache) == (
        "auto",
        None,
        None,
    )


def test_values_are_normalised(full, tmp_path):
    assert full.files == {"model.py": (tmp_path / "model.py").absolute()}
    assert full.pip_packages == ("six",) and full.file_systems == ("hdfs://nn2:8020",)
    assert full.acls == {"view": ("bob",)}
    assert full.exclude_packages == ("mypy",)


def test_none_means_not_given_for_collections_only():
    opts = LaunchOptions.from_keywords({"files": None, "env": None, "pip_packages": None})
    assert (opts.files, opts.env, opts.pip_packages) == ({}, {}, ())
    with pytest.raises(SpecError, match="queue must be a queue name"):
        LaunchOptions.from_keywords({"queue": None})


def test_an_unknown_keyword_names_the_ones_there_are():
    with pytest.raises(TypeError, match=r"unknown launch keyword.*skein_clien.*the keywords are"):
        LaunchOptions.from_keywords({"skein_clien": object()})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"acls": {"admin": ["x"]}}, "unknown key"),
        ({"acls": ["bob"]}, "acls must be a dict"),
        ({"peer_timeout_s": 0}, "peer_timeout_s must be >= 1"),
        ({"nb_retries": -1}, "nb_retries must be an int >= 0"),
    ],
)
def test_bad_values_are_spec_errors_naming_the_option(kwargs, message):
    with pytest.raises(SpecError, match=message):
        LaunchOptions(**kwargs)


def test_skein_acls_pass_through_unchanged():
    acls = skein.ACLs(enable=True, view_users=["bob"])
    assert LaunchOptions(acls=acls).acls is acls


def test_the_contract_takes_the_user_bounds_and_a_detached_run_has_no_watchdog(full):
    c = full.contract({"chief": 1}, env_key="k")
    assert (c.peer_timeout_s, c.heartbeat_timeout_s, c.env_key) == (45.0, 0.0, "k")
    owned = dataclasses.replace(full, detach=False).contract({"chief": 1})
    assert owned.heartbeat_timeout_s == contract.HEARTBEAT_TIMEOUT_S
    assert LaunchOptions(peer_timeout_s=90).contract({"chief": 1}).peer_timeout_s == 90


def test_files_are_resolved_against_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert LaunchOptions(files={"m.py": "m.py"}).files["m.py"] == Path(tmp_path / "m.py")


def test_tf_yarn_keywords_are_accepted_under_their_names():
    client = object()
    opts = LaunchOptions.from_keywords({
        "pyenv_zip_path": "hdfs:///envs/e.tar", "skein_client": client,
        "pre_script_hook": "export A=1", "custom_task_module": "tf_yarn.distributed.task",
        "nb_retries": 1, "eval_monitor_log_thresholds": None,
    })  # fmt: skip
    assert opts.pyenv_archive == "hdfs:///envs/e.tar"
    assert opts.skein_client is client and opts.pre_script_hook == "export A=1"
    assert (opts.mode, opts.custom_task_module) == ("function", None)
    assert LaunchOptions(custom_task_module="my.tasks").custom_task_module == "my.tasks"


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"eval_monitor_log_thresholds": {"loss": (0, 1)}}, "RunResult.metrics"),
        ({"pyenv_zip_path": "a.tar", "pyenv_archive": "b.tar"}, "not both"),
        ({"pyenv_zip_path": {"gpu": "a.tar"}}, "one archive path for every node label"),
        ({"custom_task_module": "not a module"}, "must be a module name"),
        ({"mode": "estimator"}, "mode must be one of"),
    ],
)
def test_tf_yarn_keywords_that_differ_say_what_to_use_instead(keywords, message):
    with pytest.raises(SpecError, match=message):
        LaunchOptions.from_keywords(keywords)


# -- tf-yarn's task modules ---------------------------------------------------------------------
#: tf-yarn's default task in each layout it had (criteo/tf-yarn: tf_yarn/_env.py's
#: INDEPENDENT_WORKERS_MODULE in 0.7.0, tf_yarn/tasks/ and tf_yarn/ before), and ours.
STANDARD_TASKS = [
    "tf_yarn.tensorflow.tasks._independent_workers_task",
    "tf_yarn.tasks._independent_workers_task",
    "tf_yarn._independent_workers_task",
    "tf_yarn._dispatch_task",
    "tfyarn_jupyter.container",
    "tfyarn_jupyter.tasks",
]


@pytest.mark.parametrize("module", STANDARD_TASKS)
def test_tf_yarns_standard_task_module_maps_to_tfyarns_own_task(module):
    opts = LaunchOptions(custom_task_module=module)
    assert (opts.mode, opts.custom_task_module) == ("experiment", None)
    # In function mode it stays function mode: the standard task runs what the mode says.
    opts = LaunchOptions(custom_task_module=module, mode="function")
    assert (opts.mode, opts.custom_task_module) == ("function", None)


def test_every_mapped_task_module_runs_tfyarns_own_task_in_a_known_mode():
    for module in options_module.MAPPED_TASK_MODULES:
        opts = LaunchOptions(custom_task_module=module)
        assert opts.custom_task_module is None and opts.mode in options_module.MODES, module
    functions = sorted(options_module.FUNCTION_TASK_MODULES)
    assert functions == ["tf_yarn.distributed.task", "tfyarn_jupyter.distributed"]


@pytest.mark.parametrize(
    "module",
    [
        "tf_yarn.tensorflow.tasks.gloo_allred_task",
        "tf_yarn.tasks.gloo_allred_task",
        "tf_yarn.tasks._gloo_allred_task",
    ],
)
def test_horovods_gloo_task_is_refused_saying_horovod_is_not_shipped_and_what_to_use(module):
    with pytest.raises(SpecError) as exc:
        LaunchOptions.from_keywords({"custom_task_module": module})
    message = str(exc.value)
    assert message.startswith(f"custom_task_module={module!r} is tf-yarn's Horovod task")
    assert "Horovod is not shipped" in message
    assert "return a KerasExperiment" in message and "MultiWorkerMirroredStrategy" in message
    assert "give no custom_task_module" in message


@pytest.mark.parametrize(
    ("module", "what", "use"),
    [
        ("tf_yarn.tensorflow.tasks.evaluator_task", "evaluator-only task", '"evaluator": TaskSpec'),
        ("tf_yarn.tasks.evaluator_task", "evaluator-only task", '"evaluator": TaskSpec'),
        ("tf_yarn.tensorflow.tasks._tensorboard_task", "TensorBoard task", '"tensorboard": Task'),
        ("tf_yarn.tasks._standalone_client_task", "standalone-client task", "KerasExperiment"),
        ("tf_yarn.pytorch.tasks.worker", "PyTorch task", "distributed.run_on_yarn(fn"),
        # Not a task module of tf-yarn's (its helpers, or a name it never had).
        ("tf_yarn.tensorflow.tasks.tf_task_common", "not a tf-yarn task module", "_independent"),
        ("tf_yarn.tensorflow.tasks.tf_task", "not a tf-yarn task module", "mode='function'"),
    ],
)
def test_tf_yarns_task_modules_without_a_counterpart_are_refused_saying_what_to_use(
    module, what, use
):
    with pytest.raises(SpecError) as exc:
        LaunchOptions(custom_task_module=module)
    message = str(exc.value)
    assert message.startswith(f"custom_task_module={module!r} ")
    assert what in message and use in message


def test_a_module_of_ones_own_is_left_to_the_check_against_the_shipped_environment():
    # Whether it is importable where the tasks run is skein_app.check_program's question.
    opts = LaunchOptions(custom_task_module="my_pkg.tf_yarn.task")
    assert (opts.mode, opts.custom_task_module) == ("experiment", "my_pkg.tf_yarn.task")


# -- the notebook's Keras choice ----------------------------------------------------------------
def test_the_notebooks_keras_variables_reach_the_tasks_when_env_does_not_set_them(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    monkeypatch.setenv("SOME_OTHER_SETTING", "x")  # only the Keras choice travels
    opts = LaunchOptions()
    assert opts.env == {"TF_USE_LEGACY_KERAS": "1", "KERAS_BACKEND": "tensorflow"}
    env = task_env(opts, opts.contract({"chief": 1}))
    assert (env["TF_USE_LEGACY_KERAS"], env["KERAS_BACKEND"]) == ("1", "tensorflow")
    assert "SOME_OTHER_SETTING" not in env
    # The same through submit's keywords and a copy (the magic's dataclasses.replace).
    assert LaunchOptions.from_keywords({"env": None}).env == opts.env
    assert dataclasses.replace(opts, name="again").env == opts.env


def test_env_wins_over_the_notebooks_keras_variables(monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    opts = LaunchOptions(env={"TF_USE_LEGACY_KERAS": "0", "A": "1"})
    assert opts.env == {"TF_USE_LEGACY_KERAS": "0", "KERAS_BACKEND": "jax", "A": "1"}
    env = task_env(opts, opts.contract({"chief": 1}))
    assert env["TF_USE_LEGACY_KERAS"] == "0"


def test_without_keras_variables_in_the_notebook_the_tasks_get_only_env(monkeypatch):
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    assert LaunchOptions(env={"A": "1"}).env == {"A": "1"}
    assert options_module.inherited_env({"KERAS_BACKEND": "torch", "PATH": "/bin"}) == {
        "KERAS_BACKEND": "torch"
    }


def test_files_on_hdfs_are_kept_as_uris_for_yarn_to_localise(tmp_path):
    local = tmp_path / "cancer.py"
    local.write_text("")
    opts = LaunchOptions(files={"cancer.py": str(local), "data.csv": "hdfs:///user/me/d.csv",
                                "wine.csv": "viewfs://c/data/wine.csv"})  # fmt: skip
    assert opts.files == {"cancer.py": local}
    assert opts.remote_files == {"data.csv": "hdfs:///user/me/d.csv",
                                 "wine.csv": "viewfs://c/data/wine.csv"}  # fmt: skip


def test_an_hdfs_file_still_needs_a_plain_name_in_the_containers_folder():
    with pytest.raises(SpecError, match="not a plain name"):
        LaunchOptions(files={"data/d.csv": "hdfs:///user/me/d.csv"})
    with pytest.raises(SpecError, match="not a plain name"):
        LaunchOptions(files={"env": "hdfs:///user/me/env.tar"})


@pytest.mark.parametrize("codec", ["gzip", "ZSTD", 1, ""])
def test_a_layer_codec_other_than_zstd_is_refused_naming_what_it_may_be(codec):
    with pytest.raises(SpecError, match=r"layer_codec must be None \(plain tars\) or 'zstd'"):
        LaunchOptions(layer_codec=codec)
