"""Launch options: checked at construction, the same from keywords and from the magic."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import skein

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.protocol import contract


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
