"""Container side: which GPUs YARN gave this task, and ``CUDA_VISIBLE_DEVICES`` from them.

How YARN's assignment reaches a container (Hadoop's NodeManager, its GPU
plugin ``yarn.nodemanager.resource-plugins=yarn.io/gpu``; see docs/gpus.md):

- Docker with nvidia-docker v2 (``NvidiaDockerV2CommandPlugin``): the
  container gets ``NVIDIA_VISIBLE_DEVICES`` (the assigned indexes) and sees
  those devices only, renumbered from 0: nothing to do here;
- the LinuxContainerExecutor without Docker (``GpuResourceHandlerImpl``): the
  devices cgroup denies the other GPUs, but no variable names the assigned
  ones; the NodeManager lists them (``assignedGpuDevices``, with the container
  id) at ``/ws/v1/node/resources/yarn.io%2Fgpu``, which :func:`use_assigned_gpus`
  reads to set ``CUDA_VISIBLE_DEVICES``, so TensorFlow opens those devices only;
- the DefaultContainerExecutor: no resource handler runs, so YARN counts the
  GPUs but assigns and isolates none; every device of the node is visible.

A ``CUDA_VISIBLE_DEVICES`` already set (by YARN, the image or the user) is
kept. Nothing here may fail a task: what cannot be read is left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

#: The NodeManager's REST resource for the GPU plugin's devices.
NM_GPU_PATH = "/ws/v1/node/resources/yarn.io%2Fgpu"
_CUDA = "CUDA_VISIBLE_DEVICES"
_NVIDIA = "NVIDIA_VISIBLE_DEVICES"
#: Values of the two variables that name no particular device.
_NO_IDS = {"", "all", "none", "void", "NoDevFiles"}


def assigned_indexes(answer: Mapping[str, Any], container_id: str) -> list[int]:
    """The GPU indexes the NodeManager's answer assigns to ``container_id``, in order."""
    devices = answer.get("assignedGpuDevices") or []
    if isinstance(devices, Mapping):  # one element: some JSON writers drop the list
        devices = [devices]
    return sorted(
        int(d["index"])
        for d in devices
        if isinstance(d, Mapping) and d.get("containerId") == container_id and "index" in d
    )


def node_has_gpus(dev: Path = Path("/dev"), which: Callable[[str], Any] = shutil.which) -> bool:
    """Whether this node has an NVIDIA device or driver: only then is the NodeManager asked."""
    return (dev / "nvidiactl").exists() or which("nvidia-smi") is not None


def fetch_assignment(environ: Mapping[str, str], timeout: float = 2.0) -> Mapping | None:
    """The NodeManager's GPU resource answer (``NM_HOST``/``NM_HTTP_PORT``, which YARN sets
    in every container), None when it does not answer (no GPU plugin, SPNEGO, a firewall)."""
    host, port = environ.get("NM_HOST"), environ.get("NM_HTTP_PORT")
    if not host or not port:
        return None
    request = urllib.request.Request(
        f"http://{host}:{port}{NM_GPU_PATH}", headers={"Accept": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            answer = json.loads(resp.read().decode())
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, Mapping) else None


def use_assigned_gpus(
    environ: MutableMapping[str, str] | None = None,
    fetch: Callable[[Mapping[str, str]], Mapping | None] = fetch_assignment,
    has_gpus: Callable[[], bool] = node_has_gpus,
) -> list[str]:
    """Set ``CUDA_VISIBLE_DEVICES`` from YARN's assignment when nothing set it; return the
    task's device ids (empty: none known). Call before TensorFlow is imported."""
    env = os.environ if environ is None else environ
    if _CUDA in env or _NVIDIA in env or not has_gpus():
        return device_ids(env)
    answer = fetch(env)
    indexes = assigned_indexes(answer, env.get("CONTAINER_ID", "")) if answer else []
    if indexes:
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # CUDA's numbering, as nvidia-smi's and YARN's
        env[_CUDA] = ",".join(map(str, indexes))
    return device_ids(env)


def device_ids(environ: Mapping[str, str] | None = None) -> list[str]:
    """The GPU ids a task was given: ``CUDA_VISIBLE_DEVICES``, else ``NVIDIA_VISIBLE_DEVICES``
    (indexes or UUIDs; empty when neither names devices)."""
    env = os.environ if environ is None else environ
    for var in (_CUDA, _NVIDIA):
        value = env.get(var)
        if value is not None:
            return [] if value.strip() in _NO_IDS else [v.strip() for v in value.split(",")]
    return []
