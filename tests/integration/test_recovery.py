"""Runs that survive a lost task (issue 25), on the sandbox: a task nothing waits on is
restarted alone, in the same application, by YARN's application master; a trainer that
YARN preempts is restarted with its whole TensorFlow cluster, in the same application,
from the last checkpoint (``container/regroup.py``), on a ``--preemption`` sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
import skein
from tfyarn_sandbox.fixtures import skein_driver, suite_sandbox
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape
from tfyarn_sandbox.site_xml import NM_VCORES, PREEMPTION_GUARANTEES

from tfyarn_jupyter import TaskSpec, submit
from tfyarn_jupyter.core import program, recovery
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.panel.summary import status_html
from tfyarn_jupyter.run import rm_calls
from tfyarn_jupyter.run.result import RunFailed

from .helpers import unique

pytestmark = [pytest.mark.sandbox]

TF = program.tensorflow_version() or (0, 0)
#: tfyarn refuses Keras 3 under MultiWorkerMirrored (keras-team/keras#20585): tf-keras on 2.16+.
LEGACY = {"TF_USE_LEGACY_KERAS": "1"} if TF >= (2, 16) else {}

SMALL = TaskSpec("1G", 1)


def _evaluator_pid(run) -> int | None:
    container = run.source.events.task("evaluator:0").get("container") or {}
    return container.get("pid")


@pytest.mark.tf215_only
def test_a_killed_evaluator_restarts_alone_and_the_chief_never_stops(
    sandbox, skein_client, cancer, cancer_files, runs
):
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('recover')}")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=1500, step_delay_s=0.02)

    run = submit(experiment_fn, {"chief": SMALL, "evaluator": SMALL}, files=cancer_files,
                 name=unique("tfyarn-recover-eval"))  # fmt: skip
    runs.append(run)
    deadline = time.monotonic() + 300
    while True:
        st = run.status()  # reads the tasks' events
        pid = _evaluator_pid(run)
        if pid is not None and (st.progress.get("chief:0") or {}).get("step"):
            break
        assert time.monotonic() < deadline, f"the evaluator never started: {st.pending}"
        time.sleep(1)
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)  # the sandbox's NodeManagers run on this machine
    app = skein_client.connect(run.app_id)
    while True:
        evaluators = app.get_containers(services=["evaluator"], states=list(_states()))
        if len(evaluators) >= 2 and any(str(c.state) == "RUNNING" for c in evaluators):
            break
        assert time.monotonic() - killed_at < 120, evaluators
        time.sleep(1)
    print(f"evaluator back {time.monotonic() - killed_at:.1f} s after it was killed")
    chiefs = app.get_containers(services=["chief"], states=list(_states()))
    result = run.wait(timeout=600)
    assert result.final_status == "SUCCEEDED"
    assert result.attempts == [run.app_id], "the same application: no new attempt"
    assert len(chiefs) == 1 and str(chiefs[0].state) in ("RUNNING", "SUCCEEDED")
    assert result.tasks["chief:0"]["state"] == "succeeded"
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)


def _states():
    from skein.model import ContainerState

    return ContainerState


# -- a worker's container killed whole through YARN ------------------------------------------
def _estimator_run(cancer, model_dir: str):
    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=1200, save_checkpoints_steps=100,
                                 step_delay_s=0.03)  # fmt: skip

    return experiment_fn, {"chief": SMALL, "worker": TaskSpec("1G", 1, instances=2), "ps": SMALL}


def _keras_run(cancer, model_dir: str):
    def experiment_fn():
        import time as _time

        import tensorflow as tf

        exp = cancer.keras_experiment(model_dir, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH)
        pause = tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda *_: _time.sleep(STEP_S))
        exp.train_params["callbacks"] = [pause]
        return exp

    return experiment_fn, {"chief": SMALL, "worker": TaskSpec("1G", 1, instances=2)}


def _all_training(st, trainers: set[str]) -> float | None:
    """When the last of ``trainers`` reached its first step (epoch s; its latest container's)."""
    firsts = [t.phases.get("first_step") for t in st.tasks if t.task in trainers]
    return max(firsts) / 1000 if len(firsts) == len(trainers) and all(firsts) else None


def _seconds(t: float | None, since: float) -> str:
    return f"{t - since:.1f}s" if t is not None else "(not reported)"


@pytest.mark.parametrize("kind", [
    # Four and three containers replaced, followers ending one at a time (exit_gate):
    # the Estimator on TF 2.15, tf-keras on TF 2.21, as issue 25 asks.
    pytest.param("estimator", marks=[pytest.mark.tf215_only]),
    pytest.param("keras", marks=[pytest.mark.current_tf, pytest.mark.tf221_only]),
])  # fmt: skip
def test_a_worker_container_killed_through_yarn_regroups_its_cluster_in_the_same_application(
    kind, sandbox, skein_client, cancer, cancer_files, runs
):
    """``yarn container -signal <worker 1's container> FORCEFUL_SHUTDOWN`` mid-training: an
    Estimator's chief + 2 workers + ps, or Keras MultiWorkerMirrored's chief + 2 workers.
    The whole cluster restarts from its last checkpoint on HDFS, in the same application,
    which ends SUCCEEDED; the restart is in the status (the panel's data), the summary and
    the result, and no retry of the run was spent."""
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('signal')}")
    experiment_fn, specs = (_estimator_run if kind == "estimator" else _keras_run)(
        cancer, model_dir
    )
    trainers = {"chief:0", "worker:0", "worker:1"}
    submitted_at = time.time()
    run = submit(experiment_fn, specs, files=cancer_files, name=unique(f"tfyarn-signal-{kind}"),
                 env=LEGACY if kind == "keras" else {})  # fmt: skip
    runs.append(run)
    # A checkpoint to resume from: an Estimator's every 100 steps, Keras's each epoch.
    first = 150 if kind == "estimator" else STEPS_PER_EPOCH + 2
    wait_until(run, lambda st: ((st.progress.get("chief:0") or {}).get("step") or 0) >= first,
               timeout=400, what="a checkpoint")  # fmt: skip
    before = run.status()
    container = {t.task: t.container_id for t in before.tasks}["worker:1"]
    signalled = subprocess.run(
        ["yarn", "container", "-signal", container, "FORCEFUL_SHUTDOWN"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert signalled.returncode == 0, signalled.stderr[-2000:]
    killed_at, signalled_at = time.monotonic(), time.time()

    wait_until(run, lambda st: any(r["cause"] == "container killed" for r in restarts(run)),
               timeout=180, what="worker:1's replacement")  # fmt: skip
    print(f"FIGURE replaced {time.monotonic() - killed_at:.1f}s after the signal")
    result = run.wait(timeout=900)
    st = run.status()
    records = run.source.events.restarts
    print(f"FIGURE restarts {records}")
    assert result.final_status == "SUCCEEDED"
    assert result.attempts == [run.app_id] and run.attempt == 0, "no run-level retry spent"
    assert run.restarts == [] and run.budget.retries == 0
    # The figures: the regroup against a new application (this run's own warm launch,
    # without the time a run-level retry takes to see the failure), and the steps lost.
    regroup_s = _seconds(_all_training(st, trainers), signalled_at)
    launch_s = _seconds(_all_training(before, trainers), submitted_at)
    print(f"FIGURE every trainer training again {regroup_s} after the signal; a new application"
          f" (this run's launch): every trainer's first step {launch_s} after submit")  # fmt: skip
    print("FIGURE steps lost " + ", ".join(
        f"{t}: {rs[0]['step'] - rs[0]['resumed_step']}" for t, rs in sorted(records.items())
        if rs[0].get("step") is not None and rs[0].get("resumed_step") is not None))  # fmt: skip
    # Every task of the cluster restarted once: worker:1 for its loss, the others with it.
    assert set(records) == trainers | ({"ps:0"} if "ps" in specs else set()), records
    assert {t: [r["cause"] for r in rs] for t, rs in records.items()} == {
        t: ["container killed" if t == "worker:1" else "peer restarted"] for t in records
    }
    # The chief had trained past a checkpoint (a worker may not have reported a step yet).
    chief = records["chief:0"][0]
    assert chief["step"] >= first
    print(f"FIGURE chief from step {chief['step']} resumed at {chief['resumed_step']}")
    # The trainers resumed from a checkpoint of the first generation, not from scratch.
    assert all(records[t][0].get("resumed_step", 0) > 0 for t in trainers), records
    tasks = {t["task"]: t for t in st.to_dict()["tasks"]}
    assert tasks["worker:1"]["restarts"] == 1
    assert tasks["worker:1"]["restart_cause"] == "container killed"
    assert "container killed" in status_html(st)
    assert [r["cause"] for r in result.task_restarts["worker:1"]] == ["container killed"]
    assert result.tasks["chief:0"]["state"] == "succeeded"
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)


# -- a trainer preempted by YARN ---------------------------------------------------------
#: Each trainer takes 3 of the unlabelled node's 8 vcores: with the application master the
#: run holds 7, over queue ``low``'s guarantee of 4, so ``high`` asking for its own 4 makes
#: YARN's preemption monitor take one trainer back.
TRAINER = TaskSpec("1G", 3)
EPOCHS, STEPS_PER_EPOCH, STEP_S = 8, 20, 0.25


@pytest.fixture(scope="module")
def preemption_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A ``--preemption`` sandbox (queues ``low`` and ``high``), exported: the session's when
    it is one, else one of this module's own whose cluster data (the environment, some
    12 GB) is removed at the module's end."""
    root = tmp_path_factory.mktemp("recovery") / "box"
    with suite_sandbox(root, Shape(preemption=True)) as box:
        yield box


@pytest.fixture(scope="module")
def box_client(preemption_box: Sandbox) -> Iterator[skein.Client]:
    with skein_driver(preemption_box, "recovery") as client:
        yield client


def high_guarantee() -> skein.ApplicationSpec:
    """Queue ``high``'s guarantee (half the unlabelled node, with its master) in sleeping
    containers."""
    instances = int(NM_VCORES * PREEMPTION_GUARANTEES["high"] // 100) - 1
    service = skein.Service(
        resources=skein.Resources(memory=512, vcores=1),
        script="sleep 600",
        instances=instances,
        allow_failures=True,
    )
    return skein.ApplicationSpec(name=unique("tfyarn-high"), queue="high",
                                 services={"sleep": service}, max_attempts=1)  # fmt: skip


# Once, on TensorFlow 2.15 (tf.keras) beside the bound test, on the same --preemption
# sandbox: the preemption is YARN's whatever the version, and the regroup of a Keras
# cluster on TensorFlow 2.21 (tf-keras) is the signal test's keras case.
@pytest.mark.tf215_only
def test_a_preempted_trainer_restarts_with_its_cluster_in_the_same_application(
    preemption_box, box_client, cancer, cancer_files, runs
):
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('preempt')}")

    def experiment_fn():
        import time as _time

        import tensorflow as tf

        exp = cancer.keras_experiment(model_dir, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH)
        pause = tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda *_: _time.sleep(STEP_S))
        exp.train_params["callbacks"] = [pause]
        return exp

    t0 = time.monotonic()
    run = submit(experiment_fn, {"chief": TRAINER, "worker": TRAINER}, files=cancer_files,
                 queue="low", name=unique("tfyarn-preempt"), skein_client=box_client,
                 env=LEGACY)  # fmt: skip
    runs.append(run)
    preempted_at = preempt_a_trainer(run, box_client)
    print(f"FIGURE preempted {preempted_at - t0:.1f}s after the submission")

    def regrouped(st) -> bool:
        records = restarts(run)
        return len(records) >= 2 and all("resumed_step" in r for r in records)

    wait_until(run, regrouped, timeout=300, what="both trainers back")
    print(f"FIGURE regrouped {time.monotonic() - preempted_at:.1f}s after the preemption")
    records = restarts(run)
    result = run.wait(timeout=600)
    print(f"FIGURE restarts {records}")
    assert result.final_status == "SUCCEEDED"
    assert result.attempts == [run.app_id] and run.attempt == 0, "no run-level retry spent"
    assert run.restarts == [] and run.budget.retries == 0
    causes = sorted(r["cause"] for r in records)
    assert causes == ["peer restarted", "preempted"], records
    (lost_task,) = [r for r in records if r["cause"] == "preempted"]
    assert lost_task["exit_status"] == -102 and lost_task["step"] > 0
    assert all(r["resumed_step"] >= STEPS_PER_EPOCH for r in records), records
    assert result.tasks["chief:0"]["state"] == "succeeded"
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)


def preempt_a_trainer(run, box_client: skein.Client) -> float:
    """Once the run's chief finished an epoch (a checkpoint on HDFS to resume from), queue
    ``high`` asks for its guarantee until YARN's preemption monitor takes a trainer of the
    run back; then ``high`` goes, leaving room for a replacement. When it was preempted."""
    wait_until(run, lambda st: ((st.progress.get("chief:0") or {}).get("step") or 0)
               >= STEPS_PER_EPOCH + 2, timeout=400, what="an epoch")  # fmt: skip
    app = box_client.connect(run.app_id)

    def preempted() -> list:
        try:
            lost = app.get_containers(services=["chief", "worker"], states=["FAILED"])
            return [(c.id, c.exit_message) for c in lost]
        except skein.exceptions.ConnectionError:
            # A run allowed no restart ends within a second of the loss: its master may be
            # gone before a look at its containers saw the preempted one (seen in CI).
            report = box_client.application_report(run.app_id)
            return [("the application ended", str(report.final_status))]

    high = box_client.submit(high_guarantee())
    try:
        print(f"FIGURE preempted {wait_for(preempted, timeout=120, what='a trainer preempted')}")
        return time.monotonic()
    finally:
        box_client.kill_application(high)


@pytest.mark.tf215_only
def test_a_run_past_its_bound_on_lost_containers_ends_failed_saying_why_with_no_new_attempt(
    preemption_box, box_client, cancer, cancer_files, runs
):
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('bound')}")

    def experiment_fn():
        import time as _time

        import tensorflow as tf

        exp = cancer.keras_experiment(model_dir, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH)
        pause = tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda *_: _time.sleep(STEP_S))
        exp.train_params["callbacks"] = [pause]
        return exp

    # No restart for a lost container at all: the first preemption is past the bound.
    run = submit(experiment_fn, {"chief": TRAINER, "worker": TRAINER}, files=cancer_files,
                 queue="low", name=unique("tfyarn-bound"), skein_client=box_client,
                 env={recovery.PREEMPTIONS_VAR: "0"})  # fmt: skip
    runs.append(run)
    preempted_at = preempt_a_trainer(run, box_client)
    with pytest.raises(RunFailed) as failed:
        run.wait(timeout=300)
    print(f"FIGURE ended FAILED {time.monotonic() - preempted_at:.1f}s after the preemption")
    st = failed.value.status
    said = f"{failed.value}\n{st.app.diagnostics}"
    print(f"FIGURE said {said!r}")
    assert st.app.final_status == "FAILED"
    assert "more than the run's 0 restarts for lost containers" in said
    assert run.attempts == [run.app_id] and run.restarts == [], "no new application"
    assert run.budget == recovery.Budget(retries=0, preemptions=0)
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)


def restarts(run) -> list[dict]:
    """Every restart record the run's tasks wrote, as the client last read them."""
    return [r for rs in run.source.events.restarts.values() for r in rs]


def wait_until(run, done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        st = run.advance()
        if done(st):
            return
        assert not st.ended, f"{run.app_id} ended {st.app.state} before {what}: {st.failure}"
        assert time.monotonic() < deadline, f"not after {timeout}s: {what} ({st.pending})"
        time.sleep(1.0)


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (out := check()):
        assert time.monotonic() < deadline, f"not after {timeout}s: {what}"
        time.sleep(0.5)
    return out


@pytest.mark.tf215_only
def test_a_run_trains_through_a_resourcemanager_restart_and_says_it_is_unreachable_meanwhile(
    preemption_box, box_client, cancer, cancer_files, runs
):
    model_dir = filesystem.qualify(f"{filesystem.home()}/tfyarn-test/{unique('rm-restart')}")

    def experiment_fn():  # about 60 s of training, whatever the machine's speed
        return cancer.experiment(model_dir, max_steps=3000, step_delay_s=0.02)

    run = submit(experiment_fn, {"chief": SMALL}, files=cancer_files, queue="low",
                 name=unique("tfyarn-rm-restart"), skein_client=box_client)  # fmt: skip
    runs.append(run)
    wait_until(run, lambda st: ((st.progress.get("chief:0") or {}).get("step") or 0) > 0,
               timeout=400, what="the chief training")  # fmt: skip
    before = run.status().progress["chief:0"]["step"]
    polls: list[tuple[float, str, int]] = []  # (seconds the poll took, the note, the step)

    def poll() -> str:
        t = time.monotonic()
        st = run.advance()
        step = (st.progress.get("chief:0") or {}).get("step") or 0
        polls.append((time.monotonic() - t, run.resourcemanager_unreachable, step))
        assert not st.ended, polls
        time.sleep(1.0)
        return polls[-1][1]

    # Down long enough (25 s) for polls to give up waiting on it (8 s each), then back.
    with preemption_box.daemon_stopped("resourcemanager"):
        away = time.monotonic() + 25
        while time.monotonic() < away:
            poll()
    deadline = time.monotonic() + 180
    while poll():  # until the note clears: YARN's view is back
        assert time.monotonic() < deadline, polls[-5:]
    down = [p for p in polls if p[1]]
    print(f"FIGURE rm-restart: {len(down)} of {len(polls)} polls without the ResourceManager, "
          f"the longest poll {max(p[0] for p in polls):.1f}s; first note: "
          f"{down[0][1] if down else None}")  # fmt: skip
    assert down, f"no poll saw the ResourceManager unreachable: {polls}"
    assert max(p[0] for p in polls) < rm_calls.CALL_TIMEOUT_S + 10  # never frozen for minutes
    assert max(p[2] for p in down) > before, "the master's view stopped while YARN's was away"
    result = run.wait(timeout=600)
    assert result.final_status == "SUCCEEDED"
    assert result.attempts == [run.app_id] and run.attempt == 0
    filesystem.client().delete(filesystem.strip_scheme(model_dir), recursive=True)
