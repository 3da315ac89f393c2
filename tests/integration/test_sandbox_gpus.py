"""GPUs as YARN counts them, on a sandbox of its own started with ``--gpus 2`` (issue 24).

The gpu NodeManager declares two ``yarn.io/gpu``; plain skein applications (no
TensorFlow) ask for them on the ``gpu`` partition through ``ml-gpu``, the queue
that reaches it. YARN counts and reserves the GPUs (no device is assigned: the
sandbox runs no GPU plugin, see docs/sandbox.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import skein
from tfyarn_sandbox.fixtures import AppTracker, exported, killing_leftovers, shaped_sandbox
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import GPU_LABEL, GPU_RESOURCE

from .helpers import unique

GPUS = 2
APP_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def gpu_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A sandbox of this module's own with ``--gpus 2``, its environment exported."""
    with shaped_sandbox(tmp_path_factory.mktemp("gpus") / "box", Shape(gpus=GPUS)) as box:
        yield box


@pytest.fixture(scope="module")
def gpu_client(gpu_box: Sandbox) -> Iterator[skein.Client]:
    client = skein.Client(log=str(gpu_box.log_dir / "skein-driver-gpus.log"))
    try:
        yield client
    finally:
        client.close()


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
