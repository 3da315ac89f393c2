"""Whether a topology fits its queue as a whole, and why tasks wait: arithmetic on plain dicts.

The scheduler answers are trimmed copies of what the sandbox's ResourceManager returns for
``/ws/v1/cluster/scheduler`` (queues ``default`` and ``ml-gpu``, 8 GiB / 8 vcores per partition).
"""

from __future__ import annotations

import types

import pytest

from tfyarn_jupyter.core.spec import NodeLabel, SpecError, TaskSpec
from tfyarn_jupyter.hadoop import capacity
from tfyarn_jupyter.hadoop.capacity import Limit

SMALL_QUEUE = {"": Limit("", 8192, 8, 8192, 8, 100.0)}


def res(memory: int, vcores: int) -> dict:
    return {"memory": memory, "vCores": vcores}


def leaf(name: str, partitions: dict, ulf: float = 2.0, used: dict | None = None) -> dict:
    """A leaf queue as the scheduler lists it: per partition, capacities and resources."""
    return {
        "queueName": name,
        "queuePath": f"root.{name}",
        "userLimitFactor": ulf,
        "capacities": {
            "queueCapacitiesByPartition": [
                {"partitionName": p, **figures} for p, figures in partitions.items()
            ]
        },
        "resources": {
            "resourceUsagesByPartition": [
                {"partitionName": p, "used": res(*u)} for p, u in (used or {}).items()
            ]
        },
    }


def scheduler(*queues: dict) -> dict:
    return {
        "scheduler": {"schedulerInfo": {"queueName": "root", "queues": {"queue": list(queues)}}}
    }


SANDBOX_DEFAULT = {
    "absoluteCapacity": 50.0,
    "absoluteMaxCapacity": 100.0,
    "effectiveMinResource": res(4096, 4),
    "effectiveMaxResource": res(8192, 8),
}


# -- demand -----------------------------------------------------------------------------------
def test_demand_sums_instances_per_partition_and_counts_the_application_master():
    specs = {
        "chief": TaskSpec(2048, 4, label=NodeLabel.GPU),
        "worker": TaskSpec(1024, 2, instances=3, label=NodeLabel.GPU),
        "ps": TaskSpec(512, 1, instances=2),
    }
    assert capacity.demand(specs) == {"": (512 + 1024, 1 + 2), "gpu": (2048 + 3072, 4 + 6)}
    assert capacity.demand(specs, master=False) == {"": (1024, 2), "gpu": (5120, 10)}


# -- the whole-topology check -----------------------------------------------------------------
def test_eight_tasks_of_2_gib_and_4_vcores_are_refused_on_an_8_gib_8_vcore_queue():
    specs = {"chief": TaskSpec(2048, 4), "worker": TaskSpec(2048, 4, instances=7)}
    with pytest.raises(SpecError) as err:
        capacity.check_fits("small", specs, SMALL_QUEUE)
    text = str(err.value)
    assert text.startswith("the run needs 16896 MiB / 33 vcores in the unlabelled partition")
    assert "chief 1x2048 MiB/4 vcores, worker 7x2048 MiB/4 vcores" in text
    assert "the application master 512 MiB/1 vcore" in text
    assert "queue 'small' can hold at most 8192 MiB / 8 vcores there" in text
    assert "(100% of 8192 MiB / 8 vcores)" in text
    assert "16896 MiB > 8192 MiB and 33 vcores > 8 vcores" in text
    assert "use a queue with a larger maximum capacity" in text


def test_vcores_alone_can_make_a_run_too_large():
    specs = {"chief": TaskSpec(1024, 4), "worker": TaskSpec(1024, 4)}  # 9 vcores with the AM
    with pytest.raises(SpecError, match=r": 9 vcores > 8 vcores, so it would wait for ever"):
        capacity.check_fits("small", specs, SMALL_QUEUE)


def test_a_run_that_exactly_fills_the_queue_passes():
    specs = {"chief": TaskSpec(3584, 3), "worker": TaskSpec(2048, 2, instances=2)}
    assert capacity.demand(specs)[""] == (8192, 8)
    assert capacity.check_fits("small", specs, SMALL_QUEUE) is None


def test_each_partition_is_checked_against_its_own_limit():
    limits = {"": Limit("", 8192, 8, 8192, 8), "gpu": Limit("gpu", 4096, 4, 8192, 8, 50.0)}
    gpu = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(2048, 2, instances=3, label="gpu")}
    with pytest.raises(SpecError) as err:
        capacity.check_fits("ml-gpu", gpu, limits)
    assert "6144 MiB / 6 vcores in partition 'gpu' (worker 3x2048 MiB/2 vcores)" in str(err.value)
    assert "(50% of 8192 MiB / 8 vcores)" in str(err.value)
    assert "application master" not in str(err.value)


def test_a_partition_without_figures_is_not_judged_here():
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(65536, 64, label="gpu")}
    assert capacity.check_fits("q", specs, SMALL_QUEUE) is None


# -- the scheduler's figures ------------------------------------------------------------------
def test_limits_come_from_the_effective_maximum_per_partition():
    gpu_part = {**SANDBOX_DEFAULT, "effectiveMinResource": res(8192, 8)}
    info = scheduler(leaf("default", {"": SANDBOX_DEFAULT}),
                     leaf("ml-gpu", {"": SANDBOX_DEFAULT, "gpu": gpu_part},
                          used={"": (1536, 2), "gpu": (2048, 1)}))  # fmt: skip
    limits = capacity.limits_from_scheduler(info, "ml-gpu", {"": (8192, 8), "gpu": (8192, 8)})
    assert limits == {
        "": Limit("", 8192, 8, 8192, 8, 100.0, 1536, 2),
        "gpu": Limit("gpu", 8192, 8, 8192, 8, 100.0, 2048, 1),
    }
    assert limits[""].free_memory == 6656 and limits["gpu"].free_vcores == 7
    assert capacity.limits_from_scheduler(info, "nope", {}) is None


def test_one_user_gets_the_guaranteed_share_times_the_user_limit_factor():
    info = scheduler(leaf("default", {"": SANDBOX_DEFAULT}, ulf=1.0))
    (lim,) = capacity.limits_from_scheduler(info, "default", {"": (8192, 8)}).values()
    assert (lim.max_memory, lim.max_vcores) == (4096, 4)
    info = scheduler(leaf("default", {"": SANDBOX_DEFAULT}, ulf=-1.0))  # no per-user limit
    (lim,) = capacity.limits_from_scheduler(info, "default", {"": (8192, 8)}).values()
    assert (lim.max_memory, lim.max_vcores) == (8192, 8)


def test_without_effective_resources_the_percentages_of_the_partition_count():
    figures = {"absoluteCapacity": 25.0, "absoluteMaxCapacity": 50.0}
    nested = {"queueName": "ml", "queuePath": "root.ml", "queues": {"queue": [
        leaf("team", {"": figures}, ulf=-1)]}}  # fmt: skip
    info = scheduler(nested)
    (lim,) = capacity.limits_from_scheduler(info, "root.team", {"": (20480, 20)}).values()
    assert (lim.max_memory, lim.max_vcores, lim.max_percent) == (10240, 10, 50.0)


def test_skeins_queue_report_gives_lenient_limits_when_the_scheduler_cannot_be_read():
    totals = {"": (8192, 8), "gpu": (16384, 4)}
    limits = capacity.limits_from_queue(50.0, 100.0, 50.0, ["gpu"], totals)
    assert limits[""] == Limit("", 4096, 4, 8192, 8, 50.0, 4096, 4)  # its whole share in use
    assert limits["gpu"] == Limit("gpu", 16384, 4, 16384, 4)
    assert set(capacity.limits_from_queue(100.0, 0.0, 50.0, ["*"], totals)) == {"", "gpu"}


def test_partition_totals_add_up_the_running_nodes_per_label():
    def node(mem, cores, labels=()):
        return types.SimpleNamespace(labels=set(labels), total_resources=types.SimpleNamespace(
            memory=mem, vcores=cores))  # fmt: skip

    nodes = [node(8192, 8), node(4096, 2), node(8192, 8, {"gpu"})]
    assert capacity.partition_totals(nodes) == {"": (12288, 10), "gpu": (8192, 8)}


# -- why tasks wait ---------------------------------------------------------------------------
def test_pending_message_names_the_tasks_the_partition_and_how_full_the_queue_is():
    limits = {"gpu": Limit("gpu", 8192, 8, 8192, 8, used_memory=6144, used_vcores=3)}
    spec = TaskSpec(4096, 1, label="gpu")
    text = capacity.pending_message("ml-gpu", [("worker:1", spec), ("worker:2", spec)], limits)
    assert text == (
        "worker:1, worker:2 waiting for 4096 MiB/1 vcores in partition 'gpu': queue 'ml-gpu' "
        "is full (6144 of 8192 MiB, 3 of 8 vcores in use)"
    )


def test_pending_message_when_the_queue_has_room_but_no_node_does():
    limits = {"": Limit("", 16384, 16, 16384, 16, used_memory=4096, used_vcores=4)}
    text = capacity.pending_message("default", [("ps:0", TaskSpec(2048, 1))], limits)
    assert "has room: the scheduler has not placed it yet" in text
    assert "(4096 of 16384 MiB, 4 of 16 vcores in use)" in text


def test_pending_message_without_figures_still_says_what_waits():
    text = capacity.pending_message("q", [("chief:0", TaskSpec(1024, 1))], {})
    assert text == "chief:0 waiting for 1024 MiB/1 vcores in the unlabelled partition on queue 'q'"
    assert capacity.pending_message("q", [], {}) == ""


# -- GPUs: yarn.io/gpu ------------------------------------------------------------------------
def info(name: str, value: int, units: str = "") -> dict:
    """One ``resourceInformation`` as Hadoop 3.5's REST answers list it."""
    return {"maximumAllocation": 9223372036854775807, "minimumAllocation": 0, "name": name,
            "resourceType": "COUNTABLE", "units": units, "value": value}  # fmt: skip


def rest_res(memory: int, vcores: int, gpus: int | None = None) -> dict:
    """A REST ``ResourceInfo``: memory and vcores, and yarn.io/gpu where the type exists."""
    infos = [info("memory-mb", memory, "Mi"), info("vcores", vcores)]
    if gpus is not None:
        infos.append(info("yarn.io/gpu", gpus))
    return {**res(memory, vcores), "resourceInformations": {"resourceInformation": infos}}


def rest_node(total: dict, labels: tuple[str, ...] = (), state: str = "RUNNING") -> dict:
    """A node of ``/ws/v1/cluster/nodes``, trimmed (the keys the check reads, and a few more)."""
    node = {"rack": "/default-rack", "state": state, "id": "localhost:40473",
            "nodeHostName": "localhost", "version": "3.5.0", "totalResource": total,
            "resourceUtilization": {"nodePhysicalMemoryMB": 9662}}  # fmt: skip
    if labels:
        node["nodeLabels"] = list(labels)
    return node


def nodes_answer(*nodes: dict) -> dict:
    return {"nodes": {"node": list(nodes)}}


#: The sandbox's nodes without GPUs, as its ResourceManager (Hadoop 3.5.0) lists them.
NODES_WITHOUT_GPUS = nodes_answer(
    rest_node(rest_res(8192, 8)), rest_node(rest_res(8192, 8), ("gpu",))
)
#: A --gpus 2 sandbox: the resource type declared everywhere, 2 GPUs on the labelled node.
NODES_WITH_2_GPUS = nodes_answer(
    rest_node(rest_res(8192, 8, 0)), rest_node(rest_res(8192, 8, 2), ("gpu",))
)


def test_resource_value_reads_a_resource_type_from_its_resource_informations():
    assert capacity.resource_value(rest_res(8192, 8, 2), "yarn.io/gpu") == 2
    assert capacity.resource_value(rest_res(8192, 8, 0), "yarn.io/gpu") == 0
    assert capacity.resource_value(rest_res(8192, 8), "yarn.io/gpu") is None
    assert capacity.resource_value(res(8192, 8), "vcores") is None  # Hadoop 2: no list
    one = {"resourceInformations": {"resourceInformation": info("yarn.io/gpu", 4)}}
    assert capacity.resource_value(one, "yarn.io/gpu") == 4
    assert capacity.resource_value(None, "yarn.io/gpu") is None


def test_the_largest_gpu_node_per_partition_counts_running_nodes_only():
    answer = nodes_answer(
        rest_node(rest_res(8192, 8, 0)),
        rest_node(rest_res(8192, 8, 2), ("gpu",)),
        rest_node(rest_res(8192, 8, 1), ("gpu",)),
        rest_node(rest_res(8192, 8, 8), ("gpu",), state="LOST"),
    )
    assert capacity.largest_gpu_nodes(answer) == {"": 0, "gpu": 2}
    assert capacity.largest_gpu_nodes(NODES_WITH_2_GPUS) == {"": 0, "gpu": 2}


def test_a_cluster_whose_nodes_report_no_gpu_type_does_not_schedule_gpus():
    assert capacity.largest_gpu_nodes(NODES_WITHOUT_GPUS) is None
    assert capacity.largest_gpu_nodes({"nodes": None}) is None


def test_a_gpu_count_on_a_cluster_without_the_gpu_type_is_refused_suggesting_the_label():
    specs = {"chief": TaskSpec(1024, 1, gpus=1)}
    with pytest.raises(SpecError) as err:
        capacity.check_gpus(specs, capacity.largest_gpu_nodes(NODES_WITHOUT_GPUS))
    text = str(err.value)
    assert text.startswith("chief asks for 1 yarn.io/gpu, but this cluster does not schedule GPUs")
    assert "--gpu chief" in text and "NodeLabel.GPU" in text


def test_runs_without_gpu_counts_pass_the_gpu_check_on_any_cluster():
    specs = {"chief": TaskSpec(1024, 1, label="gpu"), "worker": TaskSpec(1024, 1, 2)}
    assert capacity.check_gpus(specs, None) is None
    assert capacity.check_gpus(specs, {"": 0}) is None


def test_a_task_asking_more_gpus_than_any_node_has_is_refused_with_the_figures():
    largest = capacity.largest_gpu_nodes(NODES_WITH_2_GPUS)
    with pytest.raises(SpecError) as err:
        capacity.check_gpus({"chief": TaskSpec(1024, 1, label="gpu", gpus=3)}, largest)
    assert str(err.value).startswith(
        "chief: 3 yarn.io/gpu per task does not fit any node in partition 'gpu' (largest: 2 GPUs)"
    )
    with pytest.raises(SpecError, match=r"unlabelled partition \(largest: 0 GPUs\).*--gpu"):
        capacity.check_gpus({"worker": TaskSpec(1024, 1, gpus=1)}, largest)
    assert capacity.check_gpus({"chief": TaskSpec(1024, 1, label="gpu", gpus=2)}, largest) is None


def test_gpu_demand_sums_instances_per_partition():
    specs = {"chief": TaskSpec(1024, 1, label="gpu", gpus=1), "ps": TaskSpec(512, 1),
             "worker": TaskSpec(1024, 1, 3, label="gpu", gpus=2)}  # fmt: skip
    assert capacity.gpu_demand(specs) == {"gpu": 7}
    assert capacity.gpu_demand({"ps": TaskSpec(512, 1)}) == {}


def test_a_run_needing_more_gpus_than_the_queue_may_use_is_refused():
    limits = {"": Limit("", 8192, 8, 8192, 8), "gpu": Limit("gpu", 8192, 8, 8192, 8, max_gpus=2)}
    specs = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2, label="gpu", gpus=2)}
    with pytest.raises(SpecError) as err:
        capacity.check_fits("ml-gpu", specs, limits)
    text = str(err.value)
    assert text.startswith("the run needs 4 yarn.io/gpu in partition 'gpu' (worker 2x2), but queue")
    assert "can use at most 2 there: 4 GPUs > 2 GPUs, so it would wait for ever" in text
    fits = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, 2, label="gpu", gpus=1)}
    assert capacity.check_fits("ml-gpu", fits, limits) is None
    unknown = {**limits, "gpu": Limit("gpu", 8192, 8, 8192, 8)}  # no yarn.io/gpu figure
    assert capacity.check_fits("ml-gpu", specs, unknown) is None


def test_the_scheduler_gives_the_queues_gpu_share_and_use_per_partition():
    gpu_part = {"absoluteCapacity": 50.0, "absoluteMaxCapacity": 100.0,
                "effectiveMinResource": rest_res(4096, 4, 1),
                "effectiveMaxResource": rest_res(8192, 8, 2)}  # fmt: skip
    queue = leaf("ml-gpu", {"": SANDBOX_DEFAULT, "gpu": gpu_part}, ulf=4.0)
    queue["resources"]["resourceUsagesByPartition"].append(
        {"partitionName": "gpu", "used": rest_res(2048, 1, 1)})  # fmt: skip
    limits = capacity.limits_from_scheduler(scheduler(queue), "ml-gpu", {"": (8192, 8)})
    assert (limits["gpu"].max_gpus, limits["gpu"].used_gpus, limits["gpu"].free_gpus) == (2, 1, 1)
    assert limits[""].max_gpus is None and limits[""].free_gpus is None
    queue["userLimitFactor"] = 1.0  # one user: the guaranteed 1 GPU x 1
    limits = capacity.limits_from_scheduler(scheduler(queue), "ml-gpu", {"": (8192, 8)})
    assert limits["gpu"].max_gpus == 1


def test_pending_message_says_tasks_wait_for_gpus_and_how_many_are_in_use():
    limits = {"gpu": Limit("gpu", 8192, 8, 8192, 8, used_memory=2048, used_vcores=2,
                           max_gpus=2, used_gpus=2)}  # fmt: skip
    spec = TaskSpec(1024, 1, label="gpu", gpus=1)
    text = capacity.pending_message("ml-gpu", [("worker:2", spec)], limits)
    assert text == (
        "worker:2 waiting for 1024 MiB/1 vcores/1 GPU in partition 'gpu': queue 'ml-gpu' has no "
        "GPU free for them (waiting for 1 GPU) (2048 of 8192 MiB, 2 of 8 vcores, 2 of 2 GPUs "
        "in use)"
    )
    cpu_only = capacity.pending_message(
        "ml-gpu", [("ps:0", TaskSpec(1024, 1, label="gpu"))], limits
    )
    assert "GPU" not in cpu_only
