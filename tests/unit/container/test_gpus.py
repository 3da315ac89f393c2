"""Which GPUs YARN gave a task: the NodeManager's answer, and CUDA_VISIBLE_DEVICES from it."""

from __future__ import annotations

import io
import json

import pytest

from tfyarn_jupyter.container import gpus

ME = "container_1796524919563_0003_01_000002"
#: ``/ws/v1/node/resources/yarn.io%2Fgpu`` of a NodeManager with 4 GPUs, two containers on it
#: (the shape of Hadoop's NMGpuResourceInfo: gpuDeviceInformation trimmed).
NM_ANSWER = {
    "gpuDeviceInformation": {"driverVersion": "535.104.05", "gpus": []},
    "totalGpuDevices": [{"index": i, "minorNumber": i} for i in range(4)],
    "assignedGpuDevices": [
        {"index": 3, "minorNumber": 3, "containerId": ME},
        {"index": 0, "minorNumber": 0, "containerId": "container_1796524919563_0003_01_000003"},
        {"index": 1, "minorNumber": 1, "containerId": ME},
    ],
}


def test_the_indexes_assigned_to_this_container_come_in_order():
    assert gpus.assigned_indexes(NM_ANSWER, ME) == [1, 3]
    assert gpus.assigned_indexes(NM_ANSWER, "container_other") == []
    one = {"assignedGpuDevices": {"index": 2, "minorNumber": 2, "containerId": ME}}
    assert gpus.assigned_indexes(one, ME) == [2]
    assert gpus.assigned_indexes({"assignedGpuDevices": None}, ME) == []


def env_of(**extra: str) -> dict[str, str]:
    return {"CONTAINER_ID": ME, "NM_HOST": "nm1", "NM_HTTP_PORT": "8042", **extra}


def test_yarns_assignment_becomes_cuda_visible_devices_in_pci_order():
    env = env_of()
    assert gpus.use_assigned_gpus(env, lambda e: NM_ANSWER, lambda: True) == ["1", "3"]
    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


@pytest.mark.parametrize(
    ("given", "ids"),
    [
        ({"CUDA_VISIBLE_DEVICES": "0"}, ["0"]),  # YARN, the image or the user set it: kept
        ({"NVIDIA_VISIBLE_DEVICES": "2,3"}, ["2", "3"]),  # nvidia-docker v2: renumbered inside
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, []),
    ],
)
def test_a_variable_already_naming_devices_is_kept_and_the_nodemanager_not_asked(given, ids):
    asked: list[bool] = []
    env = env_of(**given)
    assert gpus.use_assigned_gpus(env, lambda e: asked.append(True), lambda: True) == ids
    assert asked == []
    assert env == env_of(**given)


def test_nothing_is_set_without_gpus_an_answer_or_an_assignment():
    asked: list[bool] = []
    env = env_of()
    assert gpus.use_assigned_gpus(env, lambda e: asked.append(True), lambda: False) == []
    assert asked == []  # a node without an NVIDIA device: no request at all
    assert gpus.use_assigned_gpus(env, lambda e: None, lambda: True) == []
    other = {**NM_ANSWER, "assignedGpuDevices": NM_ANSWER["assignedGpuDevices"][1:2]}
    assert gpus.use_assigned_gpus(env, lambda e: other, lambda: True) == []
    assert "CUDA_VISIBLE_DEVICES" not in env  # DefaultContainerExecutor: nothing assigned


def test_the_nodemanager_is_asked_at_its_gpu_resource(monkeypatch):
    urls: list[str] = []

    def urlopen(request, timeout):
        urls.append(request.full_url)
        return io.BytesIO(json.dumps(NM_ANSWER).encode())

    monkeypatch.setattr(gpus.urllib.request, "urlopen", urlopen)
    assert gpus.fetch_assignment(env_of()) == NM_ANSWER
    assert urls == ["http://nm1:8042/ws/v1/node/resources/yarn.io%2Fgpu"]
    assert gpus.fetch_assignment({"CONTAINER_ID": ME}) is None  # outside YARN


def test_a_nodemanager_that_does_not_answer_leaves_the_task_alone(monkeypatch):
    def refused(request, timeout):
        raise ConnectionRefusedError(111, "refused")

    monkeypatch.setattr(gpus.urllib.request, "urlopen", refused)
    assert gpus.fetch_assignment(env_of()) is None
    monkeypatch.setattr(gpus.urllib.request, "urlopen", lambda r, timeout: io.BytesIO(b"<html>"))
    assert gpus.fetch_assignment(env_of()) is None


def test_a_node_has_gpus_when_it_has_the_nvidia_control_device_or_nvidia_smi(tmp_path):
    assert not gpus.node_has_gpus(tmp_path, lambda name: None)
    assert gpus.node_has_gpus(tmp_path, lambda name: "/usr/bin/nvidia-smi")
    (tmp_path / "nvidiactl").touch()
    assert gpus.node_has_gpus(tmp_path, lambda name: None)


def test_device_ids_prefer_cuda_visible_devices():
    assert gpus.device_ids({"CUDA_VISIBLE_DEVICES": "1, 2", "NVIDIA_VISIBLE_DEVICES": "0"}) == [
        "1", "2"]  # fmt: skip
    assert gpus.device_ids({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert gpus.device_ids({}) == []
