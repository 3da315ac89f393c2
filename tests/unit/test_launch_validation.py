"""Requests that are wrong fail in the notebook, before HDFS or YARN is asked anything.

Every test runs with ``HADOOP_CONF_DIR`` unset and with the functions that
reach the cluster (the skein driver, the environment upload, WebHDFS,
submission) replaced by ones that fail the test: a :class:`SpecError` can
only come from the local checks.
"""

from __future__ import annotations

import threading

import pytest

from tfyarn_jupyter import NodeLabel, SpecError, TaskSpec, filesystem, launch, packing

OK_SPECS = {"chief": TaskSpec(1024, 1), "evaluator": TaskSpec(1024, 1)}


def ok_fn():  # picklable by reference; never called
    return None


class TouchedCluster(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)

    def forbidden(*_a, **_k):
        raise TouchedCluster("validation reached the cluster")

    monkeypatch.setattr(launch, "get_client", forbidden)
    monkeypatch.setattr(launch, "submit_spec", forbidden)
    monkeypatch.setattr(launch, "check_queue", forbidden)
    monkeypatch.setattr(packing, "ensure_env", forbidden)
    monkeypatch.setattr(packing, "ensure_overlay", forbidden)
    monkeypatch.setattr(filesystem, "client", forbidden)
    monkeypatch.setattr(filesystem, "upload", forbidden)
    monkeypatch.setattr(filesystem, "exists", forbidden)


@pytest.fixture(params=["prepare", "submit", "run_on_yarn"])
def entry(request):
    """Each public way in runs the same checks."""
    return getattr(launch, request.param)


def test_the_guard_itself_catches_cluster_access():
    # A valid request gets past the local checks and into the guarded calls.
    with pytest.raises(TouchedCluster):
        launch.prepare(ok_fn, OK_SPECS)


# -- topology ---------------------------------------------------------------------------
def test_unknown_task_type(entry):
    with pytest.raises(SpecError, match="'master'") as exc:
        entry(ok_fn, {"chief": TaskSpec(1024, 1), "master": TaskSpec(1024, 1)})
    assert "chief, worker, ps, evaluator" in str(exc.value)


def test_two_chiefs(entry):
    with pytest.raises(SpecError, match="exactly one chief, got instances=2"):
        entry(ok_fn, {"chief": TaskSpec(1024, 1, instances=2)})


def test_no_chief(entry):
    with pytest.raises(SpecError, match='"chief"'):
        entry(ok_fn, {"evaluator": TaskSpec(1024, 1)})


def test_two_evaluators(entry):
    with pytest.raises(SpecError, match="at most one evaluator"):
        entry(ok_fn, {"chief": TaskSpec(1024, 1), "evaluator": TaskSpec(1024, 1, instances=2)})


def test_worker_without_ps(entry):
    with pytest.raises(SpecError, match='"ps"'):
        entry(ok_fn, {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, instances=2)})


def test_empty_topology(entry):
    with pytest.raises(SpecError, match="non-empty"):
        entry(ok_fn, {})


def test_task_spec_that_is_not_a_task_spec(entry):
    with pytest.raises(SpecError, match=r"task_specs\['chief'\] must be a TaskSpec"):
        entry(ok_fn, {"chief": {"memory": 1024, "vcores": 1}})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory": 1024, "vcores": 0}, "vcores must be positive"),
        ({"memory": 1024, "vcores": -2}, "vcores must be positive"),
        ({"memory": 1024, "vcores": 1, "instances": 0}, "instances must be positive"),
        ({"memory": 1024, "vcores": 1.5}, "vcores must be an int"),
        ({"memory": 1024, "vcores": True}, "vcores must be an int"),
        ({"memory": 0, "vcores": 1}, "memory must be positive"),
        ({"memory": "lots", "vcores": 1}, "is not a size"),
        ({"memory": 1024, "vcores": 1, "label": "tpu"}, "unknown node label"),
    ],
)
def test_bad_resources(kwargs, message):
    with pytest.raises(SpecError, match=message):
        TaskSpec(**kwargs)


def test_memory_units_and_short_form():
    assert TaskSpec("2G", 1).memory == 2048
    assert TaskSpec("512M", 1).memory == 512
    assert TaskSpec("1.5GiB", 1).memory == 1536
    spec = TaskSpec.parse("2G/4x8@gpu")
    assert (spec.memory, spec.vcores, spec.instances, spec.label) == (2048, 4, 8, NodeLabel.GPU)
    with pytest.raises(SpecError, match="MEMORY/VCORES"):
        TaskSpec.parse("2G")


# -- the experiment ---------------------------------------------------------------------
def test_unpicklable_experiment_fn(entry):
    lock = threading.Lock()
    fn = lambda: lock  # noqa: E731 - a closure over something cloudpickle cannot pickle
    with pytest.raises(SpecError, match="cannot be serialised") as exc:
        entry(fn, OK_SPECS)
    assert "'<lambda>'" in str(exc.value)
    assert "lock" in str(exc.value)


def test_experiment_fn_that_is_not_callable(entry):
    with pytest.raises(SpecError, match="must be a function, got str"):
        entry("experiment_fn", OK_SPECS)


# -- files, env, queue, retries ------------------------------------------------------------
def test_missing_files_source(entry, tmp_path):
    missing = tmp_path / "nowhere" / "mod.py"
    with pytest.raises(SpecError, match="does not exist") as exc:
        entry(ok_fn, OK_SPECS, files={"mod.py": str(missing)})
    assert str(missing) in str(exc.value)
    assert "'mod.py'" in str(exc.value)


@pytest.mark.parametrize("target", ["pkg/mod.py", "", "..", "env", "experiment.pkl"])
def test_files_target_that_is_not_a_plain_name(entry, tmp_path, target):
    src = tmp_path / "mod.py"
    src.write_text("X = 1\n")
    with pytest.raises(SpecError, match="not a plain name"):
        entry(ok_fn, OK_SPECS, files={target: src})


@pytest.mark.parametrize("value", ['say "hi"', "two\nlines"])
def test_env_value_yarn_cannot_carry(entry, value):
    with pytest.raises(SpecError, match="the value of GREETING contains a double quote"):
        entry(ok_fn, OK_SPECS, env={"OK": "fine", "GREETING": value})


@pytest.mark.parametrize("env", [{"N": 3}, {"NOT-A-NAME": "x"}, {"": "x"}])
def test_env_entries_that_are_not_name_to_string(entry, env):
    with pytest.raises(SpecError, match="must map a variable name to a string"):
        entry(ok_fn, OK_SPECS, env=env)


@pytest.mark.parametrize(
    "env", [{"TFYARN_PEER_TIMEOUT": "soon"}, {"TFYARN_PEER_TIMEOUT": "0"},
            {"TFYARN_HEARTBEAT_TIMEOUT": "5"}],
)  # fmt: skip
def test_timeout_bounds_in_env_that_are_not_usable_seconds(entry, env):
    (key,) = env
    with pytest.raises(SpecError, match=f"{key}=.* must be a number of seconds"):
        entry(ok_fn, OK_SPECS, env=env)


def test_timeout_bounds_in_env_override_the_defaults_but_a_detached_run_has_no_watchdog():
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2), "ps": TaskSpec(512, 1)}
    user = {"TFYARN_HEARTBEAT_TIMEOUT": "20", "TFYARN_PEER_TIMEOUT": "45", "A": "b"}
    owned = launch.task_env(user, specs, peer_timeout_s=300.0, heartbeat=True)
    assert owned["TFYARN_HEARTBEAT_TIMEOUT"] == "20"
    assert owned["TFYARN_PEER_TIMEOUT"] == "45"
    assert owned["TFYARN_TASKS"] == "chief=1,worker=2,ps=1"
    assert owned["A"] == "b"
    detached = launch.task_env(user, specs, peer_timeout_s=300.0, heartbeat=False)
    assert detached["TFYARN_HEARTBEAT_TIMEOUT"] == "0"
    assert detached["TFYARN_PEER_TIMEOUT"] == "45"
    default = launch.task_env({}, specs, peer_timeout_s=300.0, heartbeat=True)
    assert default["TFYARN_HEARTBEAT_TIMEOUT"] == str(launch.HEARTBEAT_TIMEOUT_S)
    assert default["TFYARN_PEER_TIMEOUT"] == "300.0"


@pytest.mark.parametrize("queue", ["", None, 3])
def test_queue_that_is_not_a_name(entry, queue):
    with pytest.raises(SpecError, match="queue must be a queue name"):
        entry(ok_fn, OK_SPECS, queue=queue)


@pytest.mark.parametrize("entry_name", ["submit", "run_on_yarn"])
@pytest.mark.parametrize("nb_retries", [-1, 1.5, True, "1"])
def test_bad_nb_retries(entry_name, nb_retries):
    with pytest.raises(SpecError, match="nb_retries must be an int >= 0"):
        getattr(launch, entry_name)(ok_fn, OK_SPECS, nb_retries=nb_retries)


def test_the_first_problem_is_reported_before_later_ones(tmp_path):
    # A bad topology is reported even when the function is unpicklable too:
    # the cheap checks run first.
    lock = threading.Lock()
    with pytest.raises(SpecError, match='"ps"'):
        launch.prepare(
            lambda: lock,
            {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1)},
            files={"x.py": tmp_path / "missing.py"},
        )
