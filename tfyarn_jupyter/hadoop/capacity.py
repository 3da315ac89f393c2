"""Whether a topology fits its queue as a whole, and why tasks wait: arithmetic on plain data.

A queue may reach, in each node-label partition, at most its maximum
capacity of that partition's resources (the CapacityScheduler's
``effectiveMaxResource``, or absolute maximum capacity x the partition's
nodes), and one user at most the queue's guaranteed share x its
``user-limit-factor``. A run whose tasks (plus skein's application master)
need more than that in some partition would be accepted, then wait for ever:
:func:`check_fits` refuses it with the figures. While a run that fits waits,
:func:`pending_message` says which tasks wait, where, and how full the queue
is. The figures come from the ResourceManager (``cluster.queue_limits``);
everything here is pure.

GPUs count the same way where the cluster schedules them as the resource
type ``yarn.io/gpu`` (Hadoop >= 3.1): per partition against the queue's share
of them, and per task against the largest GPU count of any one node
(:func:`check_gpus`). A cluster without that resource type cannot honour a
GPU count at all, and is told so before anything is uploaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tfyarn_jupyter.core.spec import SpecError, TaskSpec

#: skein's application master: 512 MiB, 1 vcore, in the unlabelled partition.
AM_MEMORY_MB = 512
AM_VCORES = 1
#: YARN's resource type for GPUs (``yarn.resource-types`` in resource-types.xml).
GPU_RESOURCE = "yarn.io/gpu"


@dataclasses.dataclass(frozen=True)
class Limit:
    """What one queue may hold in one partition ("" is the unlabelled one), and holds now."""

    partition: str
    max_memory: int  # MiB
    max_vcores: int
    total_memory: int = 0  # the partition's running nodes
    total_vcores: int = 0
    max_percent: float = 100.0  # absolute maximum capacity, % of the partition
    used_memory: int = 0
    used_vcores: int = 0
    max_gpus: int | None = None  # None: the scheduler gives no yarn.io/gpu figure
    used_gpus: int = 0

    @property
    def free_gpus(self) -> int | None:
        return None if self.max_gpus is None else max(0, self.max_gpus - self.used_gpus)

    @property
    def free_memory(self) -> int:
        return max(0, self.max_memory - self.used_memory)

    @property
    def free_vcores(self) -> int:
        return max(0, self.max_vcores - self.used_vcores)


def _name(partition: str) -> str:
    return f"partition '{partition}'" if partition else "the unlabelled partition"


def demand(task_specs: Mapping[str, TaskSpec], master: bool = True) -> dict[str, tuple[int, int]]:
    """Per partition, the MiB and vcores the whole run asks for (the master's included)."""
    out: dict[str, tuple[int, int]] = {}
    if master:
        out[""] = (AM_MEMORY_MB, AM_VCORES)
    for spec in task_specs.values():
        mem, cores = out.get(spec.label.value, (0, 0))
        out[spec.label.value] = (mem + spec.memory * spec.instances,
                                 cores + spec.vcores * spec.instances)  # fmt: skip
    return out


def check_fits(queue: str, task_specs: Mapping[str, TaskSpec], limits: Mapping[str, Limit]) -> None:
    """Raise :class:`SpecError` with the figures when the run can never fit ``queue``."""
    for partition, (mem, cores) in demand(task_specs).items():
        lim = limits.get(partition)
        if lim is None or (mem <= lim.max_memory and cores <= lim.max_vcores):
            continue  # a partition the queue cannot reach is check_queue's error
        tasks = ", ".join(
            f"{t} {s.instances}x{s.memory} MiB/{s.vcores} vcores"
            for t, s in task_specs.items() if s.label.value == partition
        )  # fmt: skip
        extra = " + the application master 512 MiB/1 vcore" if partition == "" else ""
        short = []
        if mem > lim.max_memory:
            short.append(f"{mem} MiB > {lim.max_memory} MiB")
        if cores > lim.max_vcores:
            short.append(f"{cores} vcores > {lim.max_vcores} vcores")
        raise SpecError(
            f"the run needs {mem} MiB / {cores} vcores in {_name(partition)} ({tasks}{extra}), "
            f"but queue {queue!r} can hold at most {lim.max_memory} MiB / {lim.max_vcores} "
            f"vcores there ({lim.max_percent:g}% of {lim.total_memory} MiB / "
            f"{lim.total_vcores} vcores): {' and '.join(short)}, so it would wait for ever. "
            "Ask for fewer or smaller tasks, or use a queue with a larger maximum capacity"
        )
    _check_gpu_share(queue, task_specs, limits)


def gpu_demand(task_specs: Mapping[str, TaskSpec]) -> dict[str, int]:
    """Per partition, the ``yarn.io/gpu`` the whole run asks for (partitions asking some)."""
    out: dict[str, int] = {}
    for spec in task_specs.values():
        if spec.gpus:
            out[spec.label.value] = out.get(spec.label.value, 0) + spec.gpus * spec.instances
    return out


def _check_gpu_share(queue: str, task_specs: Mapping[str, TaskSpec], limits: Mapping[str, Limit]):
    """The run's GPUs per partition against what ``queue`` may use of them there."""
    for partition, gpus in gpu_demand(task_specs).items():
        lim = limits.get(partition)
        if lim is None or lim.max_gpus is None or gpus <= lim.max_gpus:
            continue
        tasks = ", ".join(f"{t} {s.instances}x{s.gpus}" for t, s in task_specs.items()
                          if s.gpus and s.label.value == partition)  # fmt: skip
        raise SpecError(
            f"the run needs {gpus} {GPU_RESOURCE} in {_name(partition)} ({tasks}), but queue "
            f"{queue!r} can use at most {lim.max_gpus} there: {gpus} GPUs > {lim.max_gpus} "
            "GPUs, so it would wait for ever. Ask for fewer GPUs, or use a queue with a larger "
            "share of them"
        )


def check_gpus(task_specs: Mapping[str, TaskSpec], largest: Mapping[str, int] | None) -> None:
    """Each task's GPU count against the largest of any one node in its partition.

    ``largest`` is :func:`largest_gpu_nodes`' answer: None when no node reports
    ``yarn.io/gpu``, i.e. the cluster does not schedule GPUs, which is refused
    with the node label as the way that remains.
    """
    asking = {t: s for t, s in task_specs.items() if s.gpus}
    if not asking:
        return
    if largest is None:
        ttype, spec = next(iter(asking.items()))
        raise SpecError(
            f"{ttype} asks for {spec.gpus} {GPU_RESOURCE}, but this cluster does not schedule "
            f"GPUs: no node reports the {GPU_RESOURCE} resource type (resource-types.xml and "
            "the NodeManagers' GPU plugin, Hadoop >= 3.1). Drop the GPU count and run the "
            f"task on GPU nodes by their node label instead: --gpu {ttype} in %%tfyarn, or "
            "TaskSpec(..., label=NodeLabel.GPU)"
        )
    for ttype, spec in asking.items():
        most = largest.get(spec.label.value, 0)
        if spec.gpus > most:
            raise SpecError(
                f"{ttype}: {spec.gpus} {GPU_RESOURCE} per task does not fit any node in "
                f"{_name(spec.label.value)} (largest: {most} GPUs), so it would never start. "
                "Ask for fewer GPUs per task and more instances"
                + ("" if spec.label.value else ", or run it on GPU nodes (--gpu / NodeLabel.GPU)")
            )


def pending_message(
    queue: str, waiting: Iterable[tuple[str, TaskSpec]], limits: Mapping[str, Limit]
) -> str:
    """What waits for a container, in which partition, and how full ``queue`` is there."""
    by_partition: dict[str, list[tuple[str, TaskSpec]]] = {}
    for task, spec in waiting:
        by_partition.setdefault(spec.label.value, []).append((task, spec))
    parts = []
    for partition, items in sorted(by_partition.items()):
        names = ", ".join(t for t, _ in items)
        sizes = sorted({_size(s) for _, s in items})
        text = f"{names} waiting for {' or '.join(sizes)} in {_name(partition)}"
        lim = limits.get(partition)
        if lim is not None:
            full = _fullness(items, lim)
            gpus = ""
            if lim.max_gpus is not None and any(s.gpus for _, s in items):
                gpus = f", {lim.used_gpus} of {lim.max_gpus} GPUs"
            text += (
                f": queue {queue!r} {full} ({lim.used_memory} of {lim.max_memory} MiB, "
                f"{lim.used_vcores} of {lim.max_vcores} vcores{gpus} in use)"
            )
        else:
            text += f" on queue {queue!r}"
        parts.append(text)
    return "; ".join(parts)


def _size(spec: TaskSpec) -> str:
    gpus = f"/{spec.gpus} GPU{'s' if spec.gpus > 1 else ''}" if spec.gpus else ""
    return f"{spec.memory} MiB/{spec.vcores} vcores{gpus}"


def _fullness(items: Sequence[tuple[str, TaskSpec]], lim: Limit) -> str:
    spec = min((s for _, s in items), key=lambda s: (s.memory, s.vcores))
    if spec.memory > lim.free_memory or spec.vcores > lim.free_vcores:
        return "is full"
    gpus, free = min(s.gpus for _, s in items), lim.free_gpus
    if gpus and free is not None and gpus > free:
        return f"has no GPU free for them (waiting for {gpus} GPU{'s' if gpus > 1 else ''})"
    return (
        "has room: the scheduler has not placed it yet (no node may have enough free, "
        "or the queue's limit on application masters is reached)"
    )


# -- the ResourceManager's figures, as plain data ----------------------------------------------
def partition_totals(nodes: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """Per partition, the MiB and vcores of the running nodes (skein's ``NodeReport``s)."""
    out: dict[str, tuple[int, int]] = {}
    for n in nodes:
        labels = sorted(n.labels) or [""]
        mem, cores = out.get(labels[0], (0, 0))
        out[labels[0]] = (mem + n.total_resources.memory, cores + n.total_resources.vcores)
    return out


def find_queue(info: Mapping[str, Any], queue: str) -> Mapping[str, Any] | None:
    """The queue named ``queue`` (a leaf's name, or its whole path) in the scheduler's tree."""
    if info.get("queueName") == queue or info.get("queuePath") == queue:
        return info
    for child in (info.get("queues") or {}).get("queue", []) or []:
        found = find_queue(child, queue)
        if found is not None:
            return found
    return None


def resource_value(resource: Any, name: str) -> int | None:
    """The value of resource type ``name`` in a REST ``ResourceInfo`` (its
    ``resourceInformations``, Hadoop >= 3), None when it does not list that type."""
    infos = ((resource or {}).get("resourceInformations") or {}).get("resourceInformation")
    if isinstance(infos, Mapping):  # one element: some JSON writers drop the list
        infos = [infos]
    for info in infos or []:
        if isinstance(info, Mapping) and info.get("name") == name:
            return int(info.get("value", 0))
    return None


def largest_gpu_nodes(nodes: Mapping[str, Any]) -> dict[str, int] | None:
    """Per partition, the most ``yarn.io/gpu`` of any one running node, from
    ``/ws/v1/cluster/nodes`` (each node's ``totalResource``); None when no node reports
    that resource type: the cluster does not schedule GPUs."""
    found, out = False, dict[str, int]()
    for node in (nodes.get("nodes") or {}).get("node") or []:
        gpus = resource_value(node.get("totalResource"), GPU_RESOURCE)
        if node.get("state", "RUNNING") != "RUNNING" or gpus is None:
            continue
        found = True
        partition = (sorted(node.get("nodeLabels") or []) or [""])[0]
        out[partition] = max(out.get(partition, 0), gpus)
    return out if found else None


def _gpu_limit(cap: Mapping[str, Any], ulf: float) -> int | None:
    """What one user of a queue may use of ``yarn.io/gpu`` in one partition, None: unknown."""
    most = resource_value(cap.get("effectiveMaxResource"), GPU_RESOURCE)
    guaranteed = resource_value(cap.get("effectiveMinResource"), GPU_RESOURCE)
    if most is not None and ulf > 0 and guaranteed is not None:
        return min(most, int(guaranteed * ulf))
    return most


def _pair(d: Any) -> tuple[int, int]:
    return (int(d.get("memory", 0)), int(d.get("vCores", 0))) if isinstance(d, Mapping) else (0, 0)


def limits_from_scheduler(
    scheduler: Mapping[str, Any], queue: str, totals: Mapping[str, tuple[int, int]]
) -> dict[str, Limit] | None:
    """Per partition, ``queue``'s limits from ``/ws/v1/cluster/scheduler`` (None: not there)."""
    q = find_queue(scheduler.get("scheduler", {}).get("schedulerInfo", {}), queue)
    if q is None:
        return None
    usages = (q.get("resources") or {}).get("resourceUsagesByPartition", []) or []
    used = {u.get("partitionName", ""): _pair(u.get("used")) for u in usages}
    used_gpus = {
        u.get("partitionName", ""): resource_value(u.get("used"), GPU_RESOURCE) or 0 for u in usages
    }
    ulf = float(q.get("userLimitFactor", -1) or -1)
    out = {}
    for cap in (q.get("capacities") or {}).get("queueCapacitiesByPartition", []) or []:
        part = cap.get("partitionName", "")
        tmem, tcores = totals.get(part, (0, 0))
        pct = float(cap.get("absoluteMaxCapacity", 100.0))
        mem, cores = _pair(cap.get("effectiveMaxResource"))
        if not mem:
            mem, cores = int(tmem * pct / 100), int(tcores * pct / 100)
        if ulf > 0:  # one user may take the guaranteed share x the factor, within the maximum
            gmem, gcores = _pair(cap.get("effectiveMinResource"))
            if not gmem:
                share = float(cap.get("absoluteCapacity", 0.0)) / 100
                gmem, gcores = int(tmem * share), int(tcores * share)
            mem, cores = min(mem, int(gmem * ulf)), min(cores, int(gcores * ulf))
        umem, ucores = used.get(part, (0, 0))
        out[part] = Limit(part, mem, cores, tmem, tcores, pct, umem, ucores,
                          _gpu_limit(cap, ulf), used_gpus.get(part, 0))  # fmt: skip
    return out


def limits_from_queue(
    max_percent: float, percent_used: float, capacity: float,
    labels: Sequence[str], totals: Mapping[str, tuple[int, int]],
) -> dict[str, Limit]:  # fmt: skip
    """Per partition, limits from skein's ``Queue`` alone (when the scheduler's REST answer is
    not to be had): its maximum capacity of the unlabelled partition, and the whole of each
    labelled partition it reaches, so the check never refuses what could run."""
    out = {}
    tmem, tcores = totals.get("", (0, 0))
    used = percent_used / 100 * capacity / 100
    out[""] = Limit("", int(tmem * max_percent / 100), int(tcores * max_percent / 100), tmem,
                    tcores, max_percent, int(tmem * used), int(tcores * used))  # fmt: skip
    reached = set(totals) if "*" in labels else set(labels)
    for label in reached:
        if label in totals and label:
            lmem, lcores = totals[label]
            out[label] = Limit(label, lmem, lcores, lmem, lcores)
    return out
