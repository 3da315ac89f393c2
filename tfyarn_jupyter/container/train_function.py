"""Container side: a plain function in every task (function mode: tf-yarn's ``distributed``).

Each chief, worker and evaluator task calls the function with no arguments,
``TF_CONFIG`` set, and ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
``MASTER_PORT`` and ``LOCAL_RANK`` for code that is not TensorFlow: ranks
count the chief and the workers (the chief, else worker 0, is rank 0 and the
master, at its TensorFlow address); the evaluator's rank is -1. A ps serves
TensorFlow until the trainers end. :func:`task_info` gives the same figures.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfyarn_jupyter.container.gpus import device_ids

if TYPE_CHECKING:
    from tfyarn_jupyter.container.task import Task


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """Where a task stands in its run (what :func:`task_info` returns)."""

    task_type: str
    task_index: int
    #: Over the chief and the workers, from 0 (the master); -1 outside them (evaluator, ps).
    rank: int
    world_size: int
    master_addr: str
    master_port: int
    local_rank: int
    cluster: Mapping[str, list[str]]
    #: The GPUs this task was given (``CUDA_VISIBLE_DEVICES``, set from YARN's assignment
    #: where YARN did not set it): indexes or UUIDs; empty when none are known.
    gpus: tuple[str, ...] = ()

    @property
    def task(self) -> str:
        return f"{self.task_type}:{self.task_index}"

    @property
    def is_chief(self) -> bool:
        return self.rank == 0


def info_of(cluster: Mapping[str, list[str]], task_type: str, task_index: int) -> TaskInfo:
    """A task's :class:`TaskInfo` from the TensorFlow cluster and its place in it."""
    trainers = [(t, i) for t in ("chief", "worker") for i in range(len(cluster.get(t, ())))]
    if not trainers:
        raise ValueError(f"no chief or worker in the cluster {dict(cluster)!r}")
    master = cluster["chief"][0] if cluster.get("chief") else cluster["worker"][0]
    host, _, port = master.rpartition(":")
    me = (task_type, task_index)
    return TaskInfo(
        task_type=task_type,
        task_index=task_index,
        rank=trainers.index(me) if me in trainers else -1,
        world_size=len(trainers),
        master_addr=host,
        master_port=int(port),
        local_rank=0,
        cluster={t: list(a) for t, a in cluster.items()},
    )


def rank_env(info: TaskInfo) -> dict[str, str]:
    """The variables non-TensorFlow code (e.g. ``torch.distributed``) reads."""
    return {
        "RANK": str(info.rank),
        "WORLD_SIZE": str(info.world_size),
        "MASTER_ADDR": info.master_addr,
        "MASTER_PORT": str(info.master_port),
        "LOCAL_RANK": str(info.local_rank),
    }


def task_info(environ: Mapping[str, str] | None = None) -> TaskInfo:
    """This task's type, index, rank, world size and master, read from ``TF_CONFIG``; its
    GPUs' ids from ``CUDA_VISIBLE_DEVICES`` (or ``NVIDIA_VISIBLE_DEVICES``).

    Raises RuntimeError outside a tfyarn_jupyter task.
    """
    env = os.environ if environ is None else environ
    if "TF_CONFIG" not in env:
        raise RuntimeError("task_info() is only known inside a tfyarn_jupyter task (no TF_CONFIG)")
    config = json.loads(env["TF_CONFIG"])
    task = config.get("task", {})
    info = info_of(config.get("cluster", {}), task.get("type", ""), int(task.get("index", 0)))
    return dataclasses.replace(info, gpus=tuple(device_ids(env)))


def run(task: Task, cluster: dict[str, list[str]]) -> None:
    """Call the function (a ps serves instead); report its start and its end."""
    if task.type == "ps":
        task.put("start")
        task.serve(cluster, task.trainers())
        return
    os.environ.update(rank_env(info_of(cluster, task.type, task.index)))
    fn = task.load_payload()
    task.put("start")
    # The function binds what it wants on the task's port: TensorFlow's server, or another.
    task.release_port()
    kind = "eval" if task.type == "evaluator" else "train"
    task.put(f"{kind}_start")
    fn()
    task.put(f"{kind}_stop")
