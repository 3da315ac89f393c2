"""The container side's roles train for real, as local processes (no YARN, no cluster).

Each test starts a run's tasks as processes (:mod:`.local_cluster`) that run
:func:`tfyarn_jupyter.container.main.main` with a file-backed stand-in for skein's
key-value store, so what they publish (addresses, events, progress, metrics) is
the store's content. Runs in both test environments: TensorFlow 2.15 (tf.keras 2,
Estimators) and 2.21 (Keras 3 on a single trainer, tf-keras for the strategies
Keras 3 cannot train with: see ``contract.KERAS_UNSUPPORTED``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tfyarn_jupyter.protocol import events

from .local_cluster import run_tasks

pytestmark = [pytest.mark.current_tf]

tf = pytest.importorskip("tensorflow")
TF = tuple(int(p) for p in tf.__version__.split(".")[:2])
#: tf-keras where TensorFlow's own Keras is Keras 3 (which cannot train with these strategies).
LEGACY = {"TF_USE_LEGACY_KERAS": "1"} if TF >= (2, 16) else {}
TRAINED = 10  # 2 epochs of 5 steps


def keras_fn(model_dir: str, epochs: int = 2, steps_per_epoch: int = 5):
    def experiment_fn():
        import cancer

        return cancer.keras_experiment(model_dir, epochs=epochs, steps_per_epoch=steps_per_epoch)

    return experiment_fn


def assert_succeeded(run) -> None:
    assert all(code == 0 for code in run.codes.values()), run.failures()
    assert all(not run.events.traceback(t) for t in run.codes)
    assert all("stop" in run.events.task(t) for t in run.codes)


def assert_trained(run, trainers: list[str], step: int) -> None:
    ev = run.events
    for t in trainers:
        assert {"start", "train_start", "train_stop", "stop"} <= set(ev.task(t)), (t, ev.task(t))
        p = ev.progress[t]
        assert p["step"] == step and p["steps_per_s"] > 0 and p["loss"] is not None, (t, p)
    others = {t: p for t, p in ev.progress.items() if t not in trainers}
    assert all(p.get("step") is None for p in others.values()), others  # resources only


def assert_clean_node_tmp(run) -> None:
    """Nothing in the node's temporary folder; autograph's modules went to the containers'."""
    assert list(run.node_tmp.iterdir()) == []
    generated = [p for wd in run.workdirs.values() for p in (wd / "tmp").glob("__autograph_*")]
    assert generated, "autograph wrote no module: the check above proves nothing"


def test_multi_worker_mirrored_trains_a_chief_and_two_workers(tmp_path: Path):
    model_dir = tmp_path / "model"
    topology = {"chief": 1, "worker": 2}
    run = run_tasks(tmp_path, topology, keras_fn(str(model_dir)), program="keras", env=LEGACY)
    assert_succeeded(run)
    assert_trained(run, ["chief:0", "worker:0", "worker:1"], TRAINED)
    assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"ckpt-{TRAINED}")
    for w in ("worker_0", "worker_1"):  # their collective saves went to a scratch folder, gone
        assert not list((tmp_path / w / "tmp").glob("checkpoints-*"))
    assert_clean_node_tmp(run)


def test_parameter_server_trains_with_a_chief_a_worker_and_a_ps(tmp_path: Path):
    model_dir = tmp_path / "model"
    topology = {"chief": 1, "worker": 1, "ps": 1}
    run = run_tasks(tmp_path, topology, keras_fn(str(model_dir)), program="keras", env=LEGACY)
    assert_succeeded(run)
    assert_trained(run, ["chief:0"], TRAINED)
    for served in ("worker:0", "ps:0"):
        assert "train_start" not in run.events.task(served)
    assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"ckpt-{TRAINED}")


def test_the_evaluator_publishes_metrics_and_a_second_run_resumes(tmp_path: Path):
    """TensorFlow's own Keras (3 on 2.21) on a chief alone; the program kind left unknown."""
    model_dir = tmp_path / "model"
    topology = {"chief": 1, "evaluator": 1}
    run = run_tasks(tmp_path / "first", topology, keras_fn(str(model_dir)))
    assert_succeeded(run)
    assert_trained(run, ["chief:0"], TRAINED)
    metrics = run.events.metrics
    assert metrics and metrics[-1]["step"] == TRAINED, metrics
    assert {"loss", "accuracy"} <= set(metrics[-1])
    assert {"eval_start", "eval_stop"} <= set(run.events.task("evaluator:0"))

    again = run_tasks(tmp_path / "again", {"chief": 1}, keras_fn(str(model_dir), epochs=3))
    assert_succeeded(again)
    assert f"restored {model_dir}/ckpt-{TRAINED}" in again.output("chief:0")
    assert_trained(again, ["chief:0"], TRAINED + 5)  # the optimizer's step count restored too


def test_a_function_runs_on_workers_only_with_its_rank_and_reports_progress(tmp_path: Path):
    def train():
        import tfyarn_jupyter

        info = tfyarn_jupyter.task_info()
        with open("info.json", "w") as fh:
            json.dump({**{k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR",
                                                      "MASTER_PORT", "LOCAL_RANK")},
                       "rank": info.rank, "task": info.task}, fh)  # fmt: skip
        for step in range(1, 4):
            tfyarn_jupyter.report(step=step, loss=1.0 / step)

    run = run_tasks(tmp_path, {"worker": 2}, train, mode="function", program="function")
    assert_succeeded(run)
    infos = [json.loads((run.workdirs[f"worker:{i}"] / "info.json").read_text()) for i in (0, 1)]
    assert [(i["RANK"], i["rank"], i["task"]) for i in infos] == [
        ("0", 0, "worker:0"),
        ("1", 1, "worker:1"),
    ]
    master = events.decode(run.kv[events.task_key("worker:0", "init")])["address"]
    assert {(i["WORLD_SIZE"], f"{i['MASTER_ADDR']}:{i['MASTER_PORT']}") for i in infos} == {
        ("2", master)
    }
    for t in ("worker:0", "worker:1"):
        assert run.events.progress[t]["step"] == 3 and run.events.progress[t]["loss"] == 1 / 3


@pytest.mark.tf215_only  # tf.estimator was removed in TensorFlow 2.16
def test_an_estimator_reports_progress_through_its_hook(tmp_path: Path):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        import cancer

        return cancer.experiment(model_dir, max_steps=40, save_checkpoints_steps=20)

    run = run_tasks(tmp_path, {"chief": 1, "evaluator": 1}, experiment_fn, program="estimator")
    assert_succeeded(run)
    assert_trained(run, ["chief:0"], 40)
    assert run.events.metrics[-1]["step"] == 40


@pytest.mark.tf221_only  # Keras 3 comes with TensorFlow 2.16 and later
def test_keras_3_refuses_multi_worker_mirrored_and_names_tf_keras(tmp_path: Path):
    run = run_tasks(tmp_path, {"chief": 1, "worker": 1}, keras_fn(str(tmp_path / "m")),
                    program="keras", timeout_s=120)  # fmt: skip
    for t in ("chief:0", "worker:0"):
        assert run.codes[t] == 1
        tb = run.events.traceback(t)
        assert "StrategyError: multi worker mirrored training with Keras 3" in tb, tb
        assert "TF_USE_LEGACY_KERAS" in tb
