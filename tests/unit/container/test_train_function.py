"""Function mode: ranks, world size and master for each task, from TensorFlow's cluster."""

from __future__ import annotations

import json

import pytest

from tfyarn_jupyter.container.train_function import TaskInfo, info_of, rank_env, task_info

CLUSTER = {"chief": ["c:1000"], "worker": ["w0:1001", "w1:1002"], "ps": ["p:1003"]}


@pytest.mark.parametrize(
    ("task", "rank"),
    [(("chief", 0), 0), (("worker", 0), 1), (("worker", 1), 2), (("ps", 0), -1),
     (("evaluator", 0), -1)],
)  # fmt: skip
def test_ranks_count_the_chief_then_the_workers(task, rank):
    info = info_of(CLUSTER, *task)
    assert (info.rank, info.world_size, info.master_addr, info.master_port) == (rank, 3, "c", 1000)
    assert info.task == f"{task[0]}:{task[1]}" and info.is_chief == (rank == 0)


def test_without_a_chief_worker_0_is_rank_0_and_the_master():
    info = info_of({"worker": ["w0:7", "w1:8"]}, "worker", 1)
    assert (info.rank, info.world_size, info.master_addr, info.master_port) == (1, 2, "w0", 7)
    assert rank_env(info_of({"worker": ["w0:7", "w1:8"]}, "worker", 0)) == {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "w0",
        "MASTER_PORT": "7",
        "LOCAL_RANK": "0",
    }


def test_task_info_reads_tf_config_and_is_refused_outside_a_task():
    env = {"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})}
    assert task_info(env) == TaskInfo("worker", 1, 2, 3, "c", 1000, 0, CLUSTER)
    with pytest.raises(RuntimeError, match="only known inside a tfyarn_jupyter task"):
        task_info({})


def test_task_info_reports_the_gpus_the_task_was_given():
    env = {"TF_CONFIG": json.dumps({"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})}
    assert task_info(env).gpus == ()
    assert task_info({**env, "CUDA_VISIBLE_DEVICES": "1,3"}).gpus == ("1", "3")
    assert task_info({**env, "NVIDIA_VISIBLE_DEVICES": "GPU-8d1c"}).gpus == ("GPU-8d1c",)
