"""GPUs as YARN counts them, on a sandbox started with ``--gpus 2`` (issue 24).

The gpu NodeManager declares two ``yarn.io/gpu``. First plain skein applications (no
TensorFlow) ask for them on the ``gpu`` partition through ``ml-gpu``, the queue that
reaches it; then tfyarn runs ask through ``TaskSpec(gpus=...)``. YARN counts and
reserves the GPUs (no device is assigned: the sandbox runs no GPU plugin, see
docs/sandbox.md).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import requests
import skein
from nbformat.v4 import new_code_cell
from tfyarn_sandbox.fixtures import (
    AppTracker,
    exported,
    killing_leftovers,
    skein_driver,
    suite_sandbox,
)
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import GPU_LABEL, GPU_RESOURCE

from tfyarn_jupyter import NodeLabel, SpecError, TaskSpec, submit
from tfyarn_jupyter.hadoop import filesystem

from .helpers import unique

GPUS = 2
APP_TIMEOUT_S = 180.0
FINAL_AND_LIVE = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED",
                  "KILLED")  # fmt: skip
RUN_TIMEOUT_S = 600.0
SMALL = TaskSpec("1G", 1)


def on_gpus(gpus: int) -> TaskSpec:
    """A small task on the gpu partition asking ``gpus`` GPUs."""
    return TaskSpec("1G", 1, label=NodeLabel.GPU, gpus=gpus)


@pytest.fixture(scope="module")
def gpu_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox with ``--gpus 2``, its environment exported: the session's when it has two
    GPUs and nothing else (CI's second lane), else one of this module's own."""
    with suite_sandbox(tmp_path_factory.mktemp("gpus") / "box", Shape(gpus=GPUS)) as box:
        yield box


@pytest.fixture(scope="module")
def gpu_client(gpu_box: Sandbox) -> Iterator[skein.Client]:
    with skein_driver(gpu_box, "gpus") as client:
        yield client


@pytest.fixture
def gpu_apps(gpu_client: skein.Client) -> Iterator[AppTracker]:
    with killing_leftovers(gpu_client) as tracker:
        yield tracker


def rm_get(box: Sandbox, path: str) -> Any:
    resp = requests.get(f"http://{box.layout().addr('rm_http')}/ws/v1/cluster/{path}", timeout=10)
    resp.raise_for_status()
    return resp.json()


def resources(info: dict) -> dict[str, int]:
    """``{name: value}`` of a REST resource object's ``resourceInformations``."""
    return {r["name"]: r["value"] for r in info["resourceInformations"]["resourceInformation"]}


def wait_for(what: str, check: Callable[[], Any], timeout: float = APP_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while not (out := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not after {timeout}s: {what}")
        time.sleep(0.5)
    return out


def sleeping_on_gpus(gpus: int) -> skein.ApplicationSpec:
    """One ``sleep`` service asking ``gpus`` GPUs on the gpu partition."""
    service = skein.Service(
        resources=skein.Resources(memory=512, vcores=1, gpus=gpus),
        script="sleep 600",
        node_label=GPU_LABEL,
    )
    return skein.ApplicationSpec(
        name=unique("tfyarn-gpu1"), queue="ml-gpu", services={"sleep": service}, max_attempts=1
    )


def master_on_gpus(gpus: int) -> skein.ApplicationSpec:
    """An application whose master itself asks ``gpus`` GPUs on the gpu partition."""
    return skein.ApplicationSpec(
        name=unique("tfyarn-gpu-master"),
        queue="ml-gpu",
        node_label=GPU_LABEL,
        master=skein.Master(resources=skein.Resources(memory=512, vcores=1, gpus=gpus)),
        services={"sleep": skein.Service(resources=skein.Resources(256, 1), script="sleep 600")},
        max_attempts=1,
    )


def test_the_gpu_node_offers_its_gpus_and_the_other_none(gpu_box):
    nodes = rm_get(gpu_box, "nodes")["nodes"]["node"]
    offered = {tuple(n.get("nodeLabels") or ()): resources(n["totalResource"]) for n in nodes}
    print(f"nodes: {offered}")
    assert offered[(GPU_LABEL,)][GPU_RESOURCE] == GPUS
    assert offered[()][GPU_RESOURCE] == 0
    assert offered[(GPU_LABEL,)]["memory-mb"] == offered[()]["memory-mb"] == 8192


def test_one_gpu_runs_and_an_application_asking_two_waits_until_it_is_free(
    gpu_box, gpu_client, gpu_apps
):
    first = gpu_apps.submit(sleeping_on_gpus(1))
    t0 = time.monotonic()
    app = gpu_client.connect(first)
    wait_for("the 1-GPU container RUNNING", lambda: app.get_containers(states=["RUNNING"]))
    print(f"1-GPU container running {time.monotonic() - t0:.1f}s after submission")
    report = wait_for(
        "the report counts the GPU",
        lambda: (r := gpu_client.application_report(first)).usage.used_resources.gpus and r,
        30,
    )
    assert str(report.state) == "RUNNING"
    assert report.usage.used_resources.gpus == 1
    by_partition = rm_get(gpu_box, f"apps/{first}")["app"]["resourceInfo"]
    used = {
        p["partitionName"]: resources(p["used"]) for p in by_partition["resourceUsagesByPartition"]
    }
    print(f"{first} uses per partition: {used}")
    assert used[GPU_LABEL][GPU_RESOURCE] == 1 and used[""][GPU_RESOURCE] == 0

    second = gpu_apps.submit(master_on_gpus(2))
    time.sleep(15)  # long enough for YARN to have placed it, were a second GPU free
    waiting = gpu_client.application_report(second)
    print(f"{second} after 15 s: {waiting.state}: {waiting.diagnostics}")
    assert str(waiting.state) == "ACCEPTED"
    assert "waiting for resources to be assigned for AM" in waiting.diagnostics
    assert f"{GPU_RESOURCE}: 1>" in waiting.diagnostics  # the queue's use of the partition

    gpu_client.kill_application(first)
    t1 = time.monotonic()
    gpu_apps.wait(second, ["RUNNING"], timeout=APP_TIMEOUT_S)
    print(f"{second} RUNNING {time.monotonic() - t1:.1f}s after the first was killed")
    assert gpu_client.application_report(second).usage.used_resources.gpus == 2


def test_a_client_without_the_resource_type_cannot_ask_for_gpus(gpu_box, tmp_path):
    """skein's driver checks ``gpus=`` against its own configuration's resource types."""
    conf = tmp_path / "conf"
    conf.mkdir()
    for f in Path(os.environ["HADOOP_CONF_DIR"]).iterdir():
        if f.name != "resource-types.xml" and f.is_file():
            (conf / f.name).write_bytes(f.read_bytes())
    refused = pytest.raises(ValueError, match=f"Resource .{GPU_RESOURCE}. is not defined")
    with exported({"HADOOP_CONF_DIR": str(conf)}), skein.Client() as client, refused:
        client.submit(sleeping_on_gpus(1))


# -- tfyarn runs asking for GPUs ------------------------------------------------------------
def drive(run: Any, until: Callable[[Any], bool], timeout: float = RUN_TIMEOUT_S) -> Any:
    """Advance the run until ``until(status)``; that status."""
    deadline = time.monotonic() + timeout
    while not until(st := run.advance()):
        assert not st.ended, f"{run.app_id} ended {st.app.final_status}: {st.failure}"
        assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state}: {st.pending}"
        time.sleep(1.0)
    return st


@pytest.fixture
def gpu_runs(gpu_client: skein.Client) -> Iterator[Any]:
    """``start(specs, prefix, **kw)``: submit on ``ml-gpu`` through this sandbox's client
    (the process-wide client belongs to the default sandbox); runs still going at the
    end are cancelled."""
    started: list[Any] = []

    def start(fn: Any, specs: dict, prefix: str, **kw: Any) -> Any:
        run = submit(fn, specs, name=unique(prefix), queue="ml-gpu", skein_client=gpu_client,
                     **kw)  # fmt: skip
        started.append(run)
        return run

    yield start
    for run in started:
        if not run.source.ended:
            run.cancel()


@pytest.fixture
def model_dir(gpu_box: Sandbox) -> str:
    """A fresh ``hdfs://`` model dir on this module's sandbox (removed with its HDFS)."""
    return filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('model')}")


def test_a_chief_asking_one_gpu_and_an_evaluator_none_succeed_and_yarn_counts_one_gpu(
    gpu_box, gpu_client, gpu_runs, model_dir, cancer, cancer_files
):
    def experiment_fn():
        return cancer.keras_experiment(model_dir, epochs=2, steps_per_epoch=20)

    t0 = time.monotonic()
    run = gpu_runs(experiment_fn, {"chief": on_gpus(1), "evaluator": SMALL}, "tfyarn-gpu-run",
                   files=cancer_files)  # fmt: skip
    print(f"queue check (counting GPUs) {run.phases.get('queue_check', 0):.3f}s of "
          f"{run.phases.get('total', 0):.1f}s to submit")  # fmt: skip
    st = drive(run, lambda s: all(t.state == "running" for t in s.tasks) or s.ended)
    print(f"{run.app_id}: every task running {time.monotonic() - t0:.1f}s after submit()")
    used = gpu_client.application_report(run.app_id).usage.used_resources.gpus
    by_task = {t.task: (t.gpus, t.node) for t in st.tasks}
    print(f"while running: {used} GPU in use; tasks: {by_task}")
    assert used == 1
    assert by_task["chief:0"][0] == 1 and by_task["evaluator:0"][0] == 0
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert str(run.status().app.final_status) == "SUCCEEDED"
    assert "loss" in result.metrics


def test_two_trainers_take_both_gpus_and_a_third_waits_saying_it_waits_for_a_gpu(
    gpu_box, gpu_client, gpu_runs, model_dir, cancer, cancer_files
):
    def long_training(where: str) -> Callable[[], Any]:
        """Training that outlasts the test however fast the machine (the fixture cancels it):
        100000 steps alone took 70 s on a quiet machine, and the first run ended before the
        third asked for its GPU."""

        def experiment_fn() -> Any:
            import time as _time

            import tensorflow as tf

            exp = cancer.keras_experiment(where, epochs=40, steps_per_epoch=2500)
            pause = tf.keras.callbacks.LambdaCallback(
                on_train_batch_end=lambda *_: _time.sleep(0.01)
            )
            exp.train_params["callbacks"] = [pause]
            return exp

        return experiment_fn

    # Two runs of one trainer each (1 GPU apiece) fill the node's two GPUs.
    first = [
        gpu_runs(
            long_training(f"{model_dir}/{n}"),
            {"chief": on_gpus(1)},
            f"tfyarn-gpu-{n}",
            files=cancer_files,
        )
        for n in ("a", "b")
    ]
    for run in first:
        drive(run, lambda s: s.tasks[0].state == "running")

    def in_use() -> int:
        return sum(gpu_client.application_report(r.app_id).usage.used_resources.gpus for r in first)

    wait_for(f"{GPUS} GPUs in use", lambda: in_use() == GPUS, 30)

    third = gpu_runs(long_training(f"{model_dir}/c"), {"chief": on_gpus(1)}, "tfyarn-gpu-c",
                     files=cancer_files)  # fmt: skip
    # Once its master runs (before, the message is about the master), the chief waits.
    st = drive(
        third,
        lambda s: (
            s.tasks[0].state == "running"
            or bool(s.capacity and s.app.state == "RUNNING" and "chief" in s.capacity["message"])
        ),
    )
    message = (st.capacity or {}).get("message", "")
    print(f"{third.app_id} waits: {message}")
    assert st.tasks[0].state != "running"
    assert "GPU" in message and f"{GPUS} of {GPUS} GPUs in use" in message, message


def test_a_task_asking_more_gpus_than_any_node_has_is_refused_before_any_upload(
    gpu_box, gpu_client, gpu_runs, cancer, cancer_files
):
    def experiment_fn():
        return cancer.keras_experiment("hdfs:///nowhere")

    before = {a.id for a in gpu_client.get_applications(states=list(FINAL_AND_LIVE))}
    t0 = time.monotonic()
    with pytest.raises(SpecError) as refused:
        gpu_runs(experiment_fn, {"chief": on_gpus(3)}, "tfyarn-gpu-3", files=cancer_files)
    print(f"refused in {time.monotonic() - t0:.2f}s: {refused.value}")
    assert f"3 {GPU_RESOURCE}" in str(refused.value) and "largest: 2 GPUs" in str(refused.value)
    after = {a.id for a in gpu_client.get_applications(states=list(FINAL_AND_LIVE))}
    assert after == before  # nothing was submitted


def test_the_quickstarts_gpu_cells_run_one_chief_on_one_gpu_where_the_cluster_has_them(
    gpu_box, tmp_path
):
    from .test_notebook import NOTEBOOKS, execute, report, reported

    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns("__pycache__", ".ipynb*"))
    nb = nbformat.read(work / "quickstart.ipynb", as_version=4)
    gpu_at = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## One GPU"))
    # The set-up cells (extension, model module), then the GPU section as it is written.
    nb.cells = nb.cells[:3] + nb.cells[gpu_at:]
    outcome = '{"gpus": gpus, "final": gpu_result.final_status, "app": on_gpu.app_id, ' \
        '"per_task": {t: s["gpus"] for t, s in gpu_result.tasks.items()}}'  # fmt: skip
    nb.cells.append(new_code_cell(report(outcome)))
    wall = execute(nb, work)
    got = reported(nb.cells[-1].outputs)
    print(f"quickstart's GPU section: {wall:.0f}s wall: {got}")
    assert got["gpus"] == {"": 0, GPU_LABEL: GPUS}
    assert got["final"] == "SUCCEEDED"
    assert got["per_task"] == {"chief:0": 1, "evaluator:0": 0}
