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
