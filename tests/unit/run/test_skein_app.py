"""The application spec and the container's service script, run here on a fake env tar.

The script is run by bash as YARN's NodeManager would (``bash .skein.sh`` in
the container's folder); the "environment" is a tar whose ``bin/python`` is
a shell script recording how it was called.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import skein

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.run import skein_app as appspec

FAKE_PYTHON = """#!/bin/sh
echo "$PYTHONPATH|$*" >> "$CALLS"
if [ "$1" = "-u" ]; then exit "${TASK_EXIT:-0}"; fi
"""


def env_tar(path: Path) -> None:
    with tarfile.open(path, "w") as tar:
        data = FAKE_PYTHON.encode()
        info = tarfile.TarInfo("bin/python")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def container(tmp_path):
    """A container's folder with env.tar, and a function that runs the script in it."""
    folder = tmp_path / "container"
    folder.mkdir()
    env_tar(folder / contract.ENV_TAR)
    calls = tmp_path / "calls"

    def run(interpreter="/bin/sh", task_exit=0, folder=folder, module=appspec.TASK_MODULE,
            hook=None, **env):  # fmt: skip
        script = appspec.service_script(interpreter, [".", contract.SOURCES], module, hook)
        (folder / ".skein.sh").write_text(script)
        full_env = {"PATH": os.environ["PATH"], "CALLS": str(calls), "TASK_EXIT": str(task_exit),
                    contract.NODE_ENV_CACHE_VAR: str(tmp_path / "cache"),
                    contract.ENV_KEY_VAR: "key1", **env}  # fmt: skip
        proc = subprocess.run(["bash", ".skein.sh"], cwd=folder, env=full_env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        lines = calls.read_text().splitlines() if calls.exists() else []
        calls.unlink(missing_ok=True)
        return proc, lines

    return folder, run


def test_the_script_unpacks_the_env_once_per_node_links_it_and_runs_the_task(container, tmp_path):
    folder, run = container
    proc, calls = run()
    assert proc.returncode == 0, proc.stderr
    assert calls == [".:tfyarn_sources.zip|-u -m tfyarn_jupyter.container"]
    cached = tmp_path / "cache" / "key1"
    assert (folder / "env").resolve() == cached.resolve()
    assert (cached / ".tfyarn-unpacked").exists() and (cached / ".tfyarn-used").exists()
    # A second container on the node: no second tar -x (the marker's time is unchanged).
    stamp = (cached / ".tfyarn-unpacked").stat().st_mtime_ns
    other = tmp_path / "container2"
    other.mkdir()
    env_tar(other / contract.ENV_TAR)
    proc, _ = run(folder=other)
    assert proc.returncode == 0, proc.stderr
    assert (cached / ".tfyarn-unpacked").stat().st_mtime_ns == stamp


def test_the_pre_script_hook_runs_first_and_its_failure_stops_the_task(container):
    folder, run = container
    proc, calls = run(hook='echo "$PWD" > hook.out')
    assert proc.returncode == 0, proc.stderr
    assert (folder / "hook.out").read_text().strip() == str(folder)
    assert len(calls) == 1
    proc, calls = run(hook="false")
    assert proc.returncode == 1 and "pre_script_hook failed" in proc.stderr
    assert calls == []


def test_temporary_files_go_in_the_container_folder(container):
    folder, run = container
    proc, _ = run(hook='echo "$TMPDIR" > tmpdir.out')
    assert proc.returncode == 0, proc.stderr
    assert (folder / "tmpdir.out").read_text().strip() == str(folder / "tmp")


def test_a_custom_task_module_runs_instead_and_its_failure_is_reported_by_the_exit_hook(
    container,
):
    """A custom module reports nothing itself: the hook says it exited, which ends the run
    (a task that failed by itself is not restarted in the application)."""
    _, run = container
    proc, calls = run(module="my_pkg.my_task", task_exit=3)
    assert proc.returncode == 3
    assert calls == [".:tfyarn_sources.zip|-u -m my_pkg.my_task",
                     ".:tfyarn_sources.zip|-m tfyarn_jupyter.container --exited 3"]  # fmt: skip
    proc, calls = run(module="my_pkg.my_task", task_exit=0)
    assert proc.returncode == 0
    assert calls == [".:tfyarn_sources.zip|-u -m my_pkg.my_task"]


def test_a_failing_task_is_reported_by_the_exit_hook_but_yarns_sigterm_is_not(container):
    _, run = container
    proc, calls = run(task_exit=137)
    assert proc.returncode == 137
    assert calls[-1].endswith("|-m tfyarn_jupyter.container --exited 137")
    proc, calls = run(task_exit=143)
    assert proc.returncode == 143
    assert len(calls) == 1


def test_a_node_without_the_interpreter_fails_with_a_message_saying_what_to_do(container):
    _, run = container
    proc, calls = run(interpreter="/nonexistent/python3")
    assert proc.returncode == 127
    assert "lacks the interpreter /nonexistent/python3" in proc.stderr
    assert "pyenv_archive=" in proc.stderr
    assert calls == []


def test_only_the_newest_environments_stay_on_a_node(container, tmp_path):
    _, run = container
    for key in ("k1", "k2", "k3"):
        proc, _ = run(**{contract.ENV_KEY_VAR: key, contract.NODE_ENV_KEEP_VAR: "2"})
        assert proc.returncode == 0, proc.stderr
    kept = sorted(p.name for p in (tmp_path / "cache").iterdir() if p.is_dir())
    assert kept == ["k2", "k3"]


def test_with_attempt_changes_only_the_attempt_in_every_service():
    c = contract.TaskContract({"chief": 1, "evaluator": 1}, peer_timeout_s=45.0)
    svc = skein.Service(script="true", resources=skein.Resources(128, 1), env=c.to_env())
    spec = skein.ApplicationSpec(services={"chief": svc, "evaluator": svc}, name="x")
    again = appspec.with_attempt(spec, c, 2)
    for name in ("chief", "evaluator"):
        got = contract.TaskContract.from_env(again.services[name].env)
        assert got == c.with_attempt(2)
    assert again.name == "x"


def test_the_application_spec_gives_each_task_type_its_resources_label_and_contract(monkeypatch):
    monkeypatch.setattr(appspec.filesystem, "hadoop_user", lambda: "alice")
    specs = {"chief": TaskSpec("2G", 4, label="gpu", gpus=2), "ps": TaskSpec(512, 1, 2)}
    opts = LaunchOptions(queue="ml-gpu", name="n", env={"A": "1"}, acls={"view": ["bob"]})
    c = opts.contract({"chief": 1, "ps": 2})
    spec = appspec.application_spec(specs, opts, c, {}, "true")
    chief, ps = spec.services["chief"], spec.services["ps"]
    assert (chief.resources.memory, chief.resources.vcores, chief.node_label) == (2048, 4, "gpu")
    assert (ps.instances, ps.node_label) == (2, "")
    # skein asks YARN for yarn.io/gpu from Resources.gpus; what goes to its driver says so.
    assert (chief.resources.gpus, ps.resources.gpus) == (2, 0)
    assert spec.to_dict()["services"]["chief"]["resources"]["gpus"] == 2
    assert chief.env["A"] == "1" and contract.TaskContract.from_env(chief.env) == c
    assert (spec.queue, spec.name, spec.max_attempts) == ("ml-gpu", "n", 1)
    assert spec.acls.view_users == ["alice", "bob"] and spec.acls.modify_users == ["alice"]


def test_serialise_refuses_what_is_not_a_function():
    with pytest.raises(SpecError, match="must be a function, got int"):
        appspec.serialise(3)  # type: ignore[arg-type]


def test_the_load_check_names_the_import_that_fails_in_a_fresh_interpreter(tmp_path):
    # A function pickled by reference to a module only this process can import.
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "no_such_modx.py").write_text("def f():\n    return 1\n")
    sys.path.insert(0, str(tmp_path / "lib"))
    try:
        payload = tmp_path / contract.PAYLOAD
        payload.write_bytes(pickle.dumps(importlib.import_module("no_such_modx").f))
    finally:
        sys.path.remove(str(tmp_path / "lib"))
        sys.modules.pop("no_such_modx", None)
    proc = appspec.start_load_check(payload, [])
    with pytest.raises(SpecError, match=r"does not load in a fresh interpreter.*no_such_modx"):
        appspec.finish_load_check(proc)


def test_file_sources_keep_uris_and_make_local_paths_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert appspec.file_source("hdfs://nn/x.tar") == "hdfs://nn/x.tar"
    assert appspec.file_source("env.tar") == str(tmp_path / "env.tar")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LOCAL_DIRS": "/d1/nm/usercache/alice/appcache/application_1_0001,/d2/nm/x"},
         "/d1/nm/usercache/alice/tfyarn-envs"),
        ({"LOCAL_DIRS": "/d1/nm/usercache/alice/appcache/application_1_0001",
          "TFYARN_ENV_CACHE": "/cache/here"}, "/cache/here"),
        ({"TMPDIR": "/scratch"}, f"/scratch/tfyarn-envs-{os.getuid()}"),
        ({"LOCAL_DIRS": "/odd/layout"}, f"/tmp/tfyarn-envs-{os.getuid()}"),
    ],
)  # fmt: skip
def test_a_nodes_cache_lives_beside_yarns_user_cache_not_in_tmp(env, expected):
    code = appspec.node_cache_script() + "tfyarn_node_cache envs"
    full = {"PATH": os.environ["PATH"], **env}
    proc = subprocess.run(["bash", "-c", code], env=full, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_the_script_keeps_its_env_under_the_nodemanagers_user_cache(container, tmp_path):
    folder, run = container
    user_cache = tmp_path / "nm-local" / "usercache" / "alice"
    app_dir = user_cache / "appcache" / "application_1_0001"
    app_dir.mkdir(parents=True)
    proc, calls = run(LOCAL_DIRS=str(app_dir), **{contract.NODE_ENV_CACHE_VAR: ""})
    assert proc.returncode == 0, proc.stderr
    assert len(calls) == 1
    cached = user_cache / "tfyarn-envs" / "key1"
    assert (folder / "env").resolve() == cached.resolve()
    assert (user_cache / "tfyarn-envs").stat().st_mode & 0o777 == 0o700


def test_skein_restarts_a_lost_container_of_every_task_type_each_as_its_regroup_needs():
    """A task nothing waits on restarts alone, once per loss; a service of the TensorFlow
    cluster restarts each of its containers once per loss (the cluster regroups), for as
    many losses as the run may restart, and one round more."""
    from tfyarn_jupyter.container import regroup
    from tfyarn_jupyter.core import recovery

    specs = {"chief": TaskSpec("1G", 1), "worker": TaskSpec("1G", 1, instances=2),
             "ps": TaskSpec("1G", 1), "evaluator": TaskSpec("1G", 1),
             "tensorboard": TaskSpec("1G", 1)}  # fmt: skip
    opts = LaunchOptions(name="x")
    topology = {t: s.instances for t, s in specs.items()}
    spec = appspec.application_spec(specs, opts, opts.contract(topology), {}, "true")
    restarts = {name: svc.max_restarts for name, svc in spec.services.items()}
    n = recovery.DEFAULT_PREEMPTIONS
    assert restarts == {"chief": n + 1, "worker": 2 * (n + 1), "ps": n + 1,
                        "evaluator": n, "tensorboard": n}  # fmt: skip
    assert spec.services["worker"].env[appspec.PREEMPTIONS_VAR] == str(n)
    # The two sides name the bound alike (the container side imports no client module).
    assert (appspec.PREEMPTIONS_VAR, n) == (regroup.PREEMPTIONS_VAR, regroup.DEFAULT_PREEMPTIONS)
    opts = LaunchOptions(name="x", env={appspec.PREEMPTIONS_VAR: "2"})
    spec = appspec.application_spec(specs, opts, opts.contract(topology), {}, "true")
    assert spec.services["worker"].max_restarts == 6
    assert spec.services["worker"].env[appspec.PREEMPTIONS_VAR] == "2"
