"""run_on_yarn / submit against the real sandbox cluster, with real TensorFlow in the containers.

Containers are small (512 MiB - 1 GiB, 1 vcore) and runs short (200-400
steps) because the sandbox shares a 2-core host. Model directories are under
``tmp_path``: the sandbox is one host, so the containers see its local disk.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tfyarn_jupyter import NodeLabel, RunFailed, SpecError, TaskSpec, submit
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.ship import layered_launch, packing

from .helpers import unique

pytestmark = pytest.mark.sandbox

SMALL = TaskSpec("1G", 1)
RUN_TIMEOUT_S = 600


def watch(run, timeout: float = RUN_TIMEOUT_S, interval: float = 1.0) -> list:
    """Drive ``run.advance()`` until the run (and its retries) ended; every snapshot, in order."""
    snapshots = []
    deadline = time.monotonic() + timeout
    while True:
        st = run.advance()
        snapshots.append(st)
        if st.ended and (st.succeeded or run.attempt >= run.nb_retries):
            return snapshots
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{run.app_id} did not end within {timeout}s: {st.app.state}, "
                f"tasks {[(t.task, t.state) for t in st.tasks]}, pending {st.pending}"
            )
        time.sleep(interval)


def _name(enum_value) -> str:
    return str(getattr(enum_value, "name", enum_value))


def task_states(st) -> dict[str, str]:
    return {t.task: t.state for t in st.tasks}


# -- validation against the cluster (fast: nothing runs) ---------------------------------
def test_unknown_queue_is_refused_before_anything_is_submitted(sandbox, app_names):
    name = unique("tfyarn-test-noqueue")
    with pytest.raises(SpecError, match="'no-such-queue' does not exist") as exc:
        submit(lambda: None, {"chief": SMALL}, queue="no-such-queue", name=name)
    # The message lists the queues that do exist.
    assert "default" in str(exc.value) and "ml-gpu" in str(exc.value)
    assert name not in app_names()


def test_memory_larger_than_any_node_is_refused_before_anything_is_submitted(sandbox, app_names):
    name = unique("tfyarn-test-toobig")
    with pytest.raises(SpecError, match="does not fit any node") as exc:
        submit(
            lambda: None,
            {"chief": SMALL, "evaluator": TaskSpec("64G", 1)},
            name=name,
        )
    assert str(exc.value).startswith("evaluator: 65536 MiB")
    assert name not in app_names()


def test_experiment_fn_that_does_not_load_in_a_fresh_interpreter_is_refused(
    sandbox, app_names, tmp_path, monkeypatch, runs
):
    # A function from a module that only this process can import (sys.path
    # was changed at run time): cloudpickle pickles it by reference, so a
    # fresh interpreter, like a container, cannot load it.
    mod_name = unique("local_only_mod").replace("-", "_")
    mod_file = tmp_path / f"{mod_name}.py"
    mod_file.write_text("def experiment_fn():\n    raise RuntimeError('never called')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(mod_name)
    monkeypatch.setitem(sys.modules, mod_name, module)  # removed again at teardown
    name = unique("tfyarn-test-noload")
    with pytest.raises(SpecError, match="does not load in a fresh interpreter") as exc:
        submit(module.experiment_fn, {"chief": SMALL}, name=name)
    assert f"No module named '{mod_name}'" in str(exc.value)
    assert "files=" in str(exc.value)  # says how to fix it
    assert name not in app_names()

    # Shipping the module with files= is the fix: the check then passes.
    name = unique("tfyarn-test-loads")
    run = submit(module.experiment_fn, {"chief": SMALL}, files={mod_file.name: mod_file}, name=name)
    runs.append(run)
    run.cancel()
    assert name in app_names()


# -- the environment cache ---------------------------------------------------------------
def test_second_layered_submit_with_unchanged_env_uploads_no_layer(sandbox, runs):
    specs = {"chief": TaskSpec("512M", 1)}
    first = submit(lambda: None, specs, name=unique("tfyarn-test-lcache1"))
    runs.append(first)
    first.cancel()
    second = submit(lambda: None, specs, name=unique("tfyarn-test-lcache2"))
    runs.append(second)
    second.cancel()

    report = second.env_report
    assert isinstance(report, layered_launch.LayersReport)  # layers are the default
    assert (report.uploaded, report.bytes_uploaded) == ([], 0)
    assert report.key == first.env_report.key
    assert len(report.layers) > 1
    for name, (uri, visibility) in report.uris.items():
        assert visibility == "private"
        assert uri.endswith(f"/.tfyarn/layers/{name}")
    # Planned and checked, nothing packed.
    assert {k for k in second.phases if k.startswith("env_")} == {
        "env_plan",
        "env_check",
        "env_upload",
    }


def test_a_deleted_layer_alone_is_uploaded_again(sandbox, skein_client, runs):
    specs = {"chief": TaskSpec("512M", 1)}
    first = submit(lambda: None, specs, name=unique("tfyarn-test-relayer0"))
    runs.append(first)
    first.cancel()
    _wait_for_quiet_cluster(skein_client)
    smallest = min(first.env_report.plan.layers, key=lambda layer: layer.size)
    uri, _ = first.env_report.uris[smallest.archive_name]
    assert filesystem.client().delete(filesystem.strip_scheme(uri)) is True

    run = submit(lambda: None, specs, name=unique("tfyarn-test-relayer"))
    runs.append(run)
    run.cancel()
    assert run.env_report.uploaded == [smallest.archive_name]
    assert filesystem.client().status(filesystem.strip_scheme(uri))["permission"] == "600"
    assert 0 < run.env_report.bytes_uploaded < run.env_report.size


def test_second_tar_submit_with_unchanged_env_neither_packs_nor_uploads(sandbox, runs):
    specs = {"chief": TaskSpec("512M", 1)}
    first = submit(lambda: None, specs, name=unique("tfyarn-test-cache1"), layers=False)
    runs.append(first)
    first.cancel()
    second = submit(lambda: None, specs, name=unique("tfyarn-test-cache2"), layers=False)
    runs.append(second)
    second.cancel()

    report = second.env_report
    assert report.packed is False
    assert report.uploaded is False
    assert report.archive == first.env_report.archive
    assert report.key == packing.env_key()
    assert report.archive.endswith(f"/.tfyarn/envs/{report.key}.tar")
    assert filesystem.exists(report.archive)
    # Only the key and the existence check were timed: no pack, no upload phase.
    assert {k for k in second.phases if k.startswith("env_")} == {"env_key", "env_check"}


# -- runs ----------------------------------------------------------------------------------
def test_quickstart_trains_above_majority_and_streams_metrics_while_running(
    sandbox, cancer, cancer_files, tmp_path, runs, launch
):
    model_dir = str(tmp_path / "model")
    # Long enough (at least 9 s of training: 0.003 s a step, however fast the machine) that
    # the evaluator, which starts with the chief, evaluates while the chief still runs,
    # even on a loaded 2-core machine.
    max_steps = 3000

    def experiment_fn():
        return cancer.experiment(
            model_dir, max_steps=max_steps, save_checkpoints_steps=250, step_delay_s=0.003
        )

    run = launch(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, "tfyarn-test-quickstart")
    snapshots = watch(run)
    result = run.wait(timeout=60)

    live = [st for st in snapshots if st.app.state == "RUNNING" and st.metrics]
    steps_seen_live = sorted({m["step"] for st in live for m in st.metrics})
    print(f"metrics seen while RUNNING at steps {steps_seen_live}; "
          f"{len(snapshots)} polls; phases {run.phases}")  # fmt: skip
    assert live, "no evaluation metrics were visible through status() while the run ran"
    assert steps_seen_live[0] < max_steps or len(steps_seen_live) >= 2

    assert result.final_status == "SUCCEEDED"
    assert {t: d["state"] for t, d in result.tasks.items()} == {
        "chief:0": "succeeded",
        "evaluator:0": "succeeded",
    }
    final = result.metrics
    assert final["global_step"] >= max_steps
    majority = cancer.majority_rate()
    assert final["accuracy"] > majority + 0.1, (final, majority)
    # Metrics are ordered by step, the last one is the result's.
    all_steps = [m["step"] for m in run.status().metrics]
    assert all_steps == sorted(all_steps) and all_steps[-1] == final["step"]
    assert len(all_steps) >= 2, f"only {all_steps} evaluated"
    assert result.training_time_s > 0
    assert os.path.exists(os.path.join(model_dir, "checkpoint"))


def test_multi_worker_with_ps_succeeds_and_ps_exits(sandbox, cancer, cancer_files, tmp_path, runs):
    model_dir = str(tmp_path / "model")
    max_steps = 300

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=max_steps, save_checkpoints_steps=100)

    specs = {
        "chief": SMALL,
        "worker": TaskSpec("1G", 1, instances=2),
        "ps": TaskSpec("512M", 1),
        "evaluator": TaskSpec("768M", 1),
    }
    run = submit(experiment_fn, specs, files=cancer_files, name=unique("tfyarn-test-multi"))
    runs.append(run)
    snapshots = watch(run)  # bounded: a ps that never exits fails here, not by hanging
    result = run.wait(timeout=60)

    assert result.final_status == "SUCCEEDED"
    assert {t: d["state"] for t, d in result.tasks.items()} == {
        "chief:0": "succeeded",
        "worker:0": "succeeded",
        "worker:1": "succeeded",
        "ps:0": "succeeded",
        "evaluator:0": "succeeded",
    }
    assert result.metrics["global_step"] >= max_steps
    # Every task really ran: each reported its start and a clean stop.

    ev = run.source.events
    for task in result.tasks:
        assert "start" in ev.task(task), task
        assert ev.task(task)["stop"]["traceback"] == "", task
    # The ps served the cluster it was part of, and ended after the trainers.
    trainers_end = max(ev.task(t)["stop"]["t"] for t in ("chief:0", "worker:0", "worker:1"))
    assert ev.task("ps:0")["stop"]["t"] >= trainers_end
    # All five were running at once at some point.
    assert any(sum(s == "running" for s in task_states(st).values()) == 5 for st in snapshots)


def test_gpu_labelled_chief_lands_on_the_gpu_node_and_evaluator_does_not(
    sandbox, skein_client, cancer, cancer_files, tmp_path, runs
):
    nodes = {n.http_address: set(n.labels) for n in skein_client.get_nodes()}
    gpu_nodes = {addr for addr, labels in nodes.items() if "gpu" in labels}
    cpu_nodes = {addr for addr, labels in nodes.items() if not labels}
    assert gpu_nodes and cpu_nodes, nodes
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=200)

    run = submit(
        experiment_fn,
        {"chief": TaskSpec("1G", 1, label=NodeLabel.GPU), "evaluator": SMALL},
        queue="ml-gpu",
        files=cancer_files,
        name=unique("tfyarn-test-gpu"),
    )
    runs.append(run)
    snapshots = watch(run)
    result = run.wait(timeout=60)
    assert result.final_status == "SUCCEEDED"

    placed = [st for st in snapshots if all(t.node for t in st.tasks)]
    assert placed, "the tasks never showed a node"
    for st in (placed[0], snapshots[-1]):
        chief, evaluator = st.tasks
        assert (chief.task, evaluator.task) == ("chief:0", "evaluator:0")
        assert chief.gpu is True
        assert chief.node in gpu_nodes
        assert evaluator.gpu is False
        assert evaluator.node in cpu_nodes
        assert chief.node != evaluator.node
    # Hadoop 3.5 reports the queue's full path.
    assert snapshots[-1].app.queue in ("ml-gpu", "root.ml-gpu")


def test_files_ship_a_local_module_and_pip_packages_install_a_local_wheel(
    sandbox, cancer, cancer_files, tmp_path, runs, build_wheel
):
    token = uuid.uuid4().hex
    conf_mod = f"shipped_conf_{token[:8]}"
    pkg_mod = f"tfyarn_probe_{token[:8]}"
    conf_file = tmp_path / "shipped" / f"{conf_mod}.py"
    conf_file.parent.mkdir()
    conf_file.write_text(f"HIDDEN = (7, 5)\nMARKER = 'conf-{token}'\n")
    wheel = build_wheel(pkg_mod.replace("_", "-"), pkg_mod, f"VALUE = 'pkg-{token}'\n")
    # Neither is importable here: only shipping can make them importable there.
    assert importlib.util.find_spec(conf_mod) is None
    assert importlib.util.find_spec(pkg_mod) is None
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        import importlib
        import json
        import os

        conf = importlib.import_module(conf_mod)
        pkg = importlib.import_module(pkg_mod)
        task = json.loads(os.environ["TF_CONFIG"])["task"]["type"]
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, f"marker-{task}.json"), "w") as fh:
            json.dump(
                {"conf": conf.MARKER, "conf_file": conf.__file__,
                 "pkg": pkg.VALUE, "pkg_file": pkg.__file__},
                fh,
            )  # fmt: skip
        return cancer.experiment(model_dir, max_steps=200, hidden_units=conf.HIDDEN)

    run = submit(
        experiment_fn,
        {"chief": SMALL, "evaluator": SMALL},
        files={**cancer_files, conf_file.name: conf_file},
        pip_packages=[str(wheel)],
        name=unique("tfyarn-test-files-pip"),
    )
    runs.append(run)
    watch(run)
    result = run.wait(timeout=60)
    assert result.final_status == "SUCCEEDED"

    for task in ("chief", "evaluator"):
        marker = json.loads(Path(model_dir, f"marker-{task}.json").read_text())
        assert marker["conf"] == f"conf-{token}"
        assert marker["pkg"] == f"pkg-{token}"
        # Imported from the container's folder and the overlay, not from here.
        assert not marker["conf_file"].startswith(str(tmp_path))
        assert f"/overlay/{pkg_mod}/" in marker["pkg_file"]
    # The shipped module's value shaped the model the chief trained.
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""\
            import json, sys, tensorflow as tf
            print(json.dumps(dict(tf.train.list_variables(sys.argv[1]))))
        """), model_dir],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    shapes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert shapes["dnn/hiddenlayer_0/kernel"] == [30, 7]
    assert shapes["dnn/hiddenlayer_1/kernel"] == [7, 5]


def test_experiment_that_raises_fails_with_the_remote_traceback_and_task(
    sandbox, cancer, cancer_files, tmp_path, runs, launch
):
    token = uuid.uuid4().hex[:12]
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        import json
        import os

        if json.loads(os.environ["TF_CONFIG"])["task"]["type"] == "chief":
            raise ValueError(f"deliberate failure {token}")
        return cancer.experiment(model_dir, max_steps=200)

    run = launch(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, "tfyarn-test-raises")
    watch(run)
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=60)
    err = exc.value
    assert err.task == "chief:0"
    assert f"ValueError: deliberate failure {token}" in err.traceback
    assert "Traceback (most recent call last)" in err.traceback
    assert "in experiment_fn" in err.traceback  # the user's frame, not only ours
    assert "in task chief:0" in str(err)
    assert err.status is not None and err.status.app.final_status == "FAILED"
    assert task_states(err.status)["chief:0"] == "failed"


def test_nb_retries_resubmits_and_the_second_attempt_succeeds(
    sandbox, skein_client, cancer, cancer_files, tmp_path, runs
):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=200, fail_on_attempt=0)

    run = submit(
        experiment_fn,
        {"chief": SMALL, "evaluator": SMALL},
        files=cancer_files,
        nb_retries=1,
        name=unique("tfyarn-test-retry"),
    )
    runs.append(run)
    watch(run)
    result = run.wait(timeout=60)

    assert len(result.attempts) == 2
    first, second = result.attempts
    assert first != second and result.app_id == second
    assert run.attempt == 1
    reports = [skein_client.application_report(a) for a in (first, second)]
    assert [_name(r.final_status) for r in reports] == ["FAILED", "SUCCEEDED"]
    assert all(r.name == reports[0].name for r in reports)  # same run, resubmitted
    assert result.final_status == "SUCCEEDED"
    assert result.metrics["global_step"] >= 200


# -- last: forces a re-upload of the whole environment -------------------------------------
def _wait_for_quiet_cluster(skein_client, timeout: float = 600) -> None:
    """Other runs may be localising the archive: do not delete it under them."""
    deadline = time.monotonic() + timeout
    while True:
        busy = skein_client.get_applications(
            states=["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]
        )
        if not busy:
            return
        if time.monotonic() > deadline:
            pytest.skip(f"the cluster stayed busy ({[a.id for a in busy]}); not deleting the env")
        time.sleep(5)


def test_deleted_tar_env_archive_is_uploaded_again(sandbox, skein_client, runs):
    key = packing.env_key()
    archive = filesystem.qualify(f"{filesystem.home()}/.tfyarn/envs/{key}.tar")
    specs = {"chief": TaskSpec("512M", 1)}
    if not filesystem.exists(archive):  # make sure there is one to delete
        run = submit(lambda: None, specs, name=unique("tfyarn-test-reupload0"), layers=False)
        runs.append(run)
        run.cancel()
    _wait_for_quiet_cluster(skein_client)
    before = filesystem.client().status(filesystem.strip_scheme(archive))
    assert filesystem.client().delete(filesystem.strip_scheme(archive)) is True
    assert not filesystem.exists(archive)

    run = submit(lambda: None, specs, name=unique("tfyarn-test-reupload"), layers=False)
    runs.append(run)
    run.cancel()
    report = run.env_report
    assert report.uploaded is True
    assert report.archive == archive
    assert {"env_pack", "env_upload"} <= set(run.phases)
    after = filesystem.client().status(filesystem.strip_scheme(archive))
    assert after["length"] == report.size > 0
    assert after["modificationTime"] > before["modificationTime"]
    assert after["permission"] == "600"
    # And the next one finds it again.
    again = submit(lambda: None, specs, name=unique("tfyarn-test-reupload2"), layers=False)
    runs.append(again)
    again.cancel()
    assert (again.env_report.packed, again.env_report.uploaded) == (False, False)
