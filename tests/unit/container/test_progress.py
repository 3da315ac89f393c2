"""Progress from inside the tasks: throttled to one write per 2 s, one key per task.

The clock is a fake, so the throttle is checked exactly; the Keras callback's and
the Estimator hook's logic run against fakes of what Keras and a session give them.
"""

from __future__ import annotations

import itertools
import time
import types

import numpy as np
import pytest

from tfyarn_jupyter.container import progress
from tfyarn_jupyter.container.progress import EstimatorProgress, KerasProgress, Reporter
from tfyarn_jupyter.protocol import events


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def written() -> list[dict]:
    return []


@pytest.fixture
def reporter(clock, written) -> Reporter:
    return Reporter(lambda payload: written.append(dict(payload)), clock=clock)


@pytest.fixture(autouse=True)
def no_installed_reporter():
    yield
    progress.install(None)


# -- the throttle -----------------------------------------------------------------------------
def test_a_report_is_written_only_once_two_seconds_have_passed(reporter, clock, written):
    for step in range(1, 16):  # 0.125 s apart: 1.875 s in all
        clock.now += 0.125
        assert reporter.report(step, loss=1.0) is False
    assert written == []
    clock.now += 0.125
    assert reporter.report(16, loss=0.5) is True
    assert [(w["step"], w["loss"]) for w in written] == [(16, 0.5)]


def test_writes_stay_two_seconds_apart_however_often_training_reports(reporter, clock, written):
    for step in range(1, 10_001):  # 100 steps a second for 100 s
        clock.now += 0.01
        reporter.report(step)
    assert 49 <= len(written) <= 50
    gaps = [b["step"] - a["step"] for a, b in itertools.pairwise(written)]
    assert min(gaps) >= 200  # 2 s of 100 steps a second


def test_steps_per_second_count_from_the_last_write(reporter, clock, written):
    clock.now += 2.0
    reporter.report(10)
    clock.now += 4.0
    reporter.report(30)
    assert [w["steps_per_s"] for w in written] == [5.0, 5.0]


def test_the_same_step_reported_again_keeps_the_last_rate_not_zero(reporter, clock, written):
    clock.now += 2.0
    reporter.report(10, loss=0.5)
    clock.now += 3.0
    reporter.report(10, loss=0.4)  # the end of training's report, after the last step's
    assert reporter.report(10, loss=0.3) is False, "the throttle holds for the same step too"
    assert [(w["step"], w["steps_per_s"]) for w in written] == [(10, 5.0), (10, 5.0)]
    clock.now += 2.0
    reporter.report(20)  # the window counts from the last write that had new steps
    assert written[-1]["steps_per_s"] == 2.0


def test_a_restart_counts_the_rate_from_the_restored_step(reporter, clock, written):
    clock.now += 30.0  # a slow start (restore, graph building) is not training
    reporter.restart(500)
    assert not reporter.due()
    clock.now += 2.0
    reporter.report(520)
    assert written[-1]["steps_per_s"] == 10.0


def test_flush_writes_the_latest_figures_once_whatever_the_interval(reporter, clock, written):
    clock.now += 2.0
    reporter.report(4, loss=0.4)
    clock.now += 0.5
    reporter.report(5, loss=0.3, accuracy=0.9)
    assert reporter.flush() is True
    assert reporter.flush() is False
    assert written[-1]["step"] == 5 and written[-1]["accuracy"] == 0.9
    assert len(written) == 2


def test_a_failed_write_never_fails_the_training(clock, capsys):
    def broken(_payload):
        raise ConnectionError("the application master is gone")

    rep = Reporter(broken, clock=clock)
    clock.now += 3
    assert rep.report(1) is False
    assert "progress not written: the application master is gone" in capsys.readouterr().err


# -- the footprint ----------------------------------------------------------------------------
def test_a_long_run_keeps_one_overwritten_key_per_task(clock):
    kv: dict[str, bytes] = {}
    tasks = ["chief:0", "worker:0", "worker:1"]
    reporters = [Reporter(progress.kv_writer(kv, t), clock=clock) for t in tasks]
    for step in range(1, 28_801):  # an hour, one step an eighth of a second
        clock.now += 0.125
        for rep in reporters:
            rep.report(step, loss=1 / step)
    for rep in reporters:  # the end of training
        rep.flush()
    assert set(kv) == {events.progress_key(t) for t in tasks}
    assert all(rep.writes <= 3600 / 2 + 1 for rep in reporters)
    latest = events.parse(kv).progress
    assert {t: p["step"] for t, p in latest.items()} == {t: 28_800 for t in tasks}
    assert all(len(value) < 200 for value in kv.values())


# -- report() for plain functions -------------------------------------------------------------
def test_report_is_a_no_op_outside_a_task():
    progress.report(step=3, loss=0.1)  # nothing installed: nothing happens, nothing raises


def test_report_goes_to_the_tasks_reporter(reporter, clock, written):
    progress.install(reporter)
    clock.now += 2
    progress.report(step=7, loss=0.25, auc=0.8)
    assert written == [{"step": 7, "loss": 0.25, "auc": 0.8, "steps_per_s": 3.5}]


def test_numbers_come_out_of_tensors_remote_values_and_numpy():
    tensor = types.SimpleNamespace(numpy=lambda: np.float32(0.5))
    remote = types.SimpleNamespace(fetch=lambda: np.int64(12))
    assert progress.number(tensor) == 0.5 and isinstance(progress.number(tensor), float)
    assert progress.number(remote) == 12 and isinstance(progress.number(remote), int)
    assert progress.number(1.5) == 1.5


# -- the Keras callback's logic ---------------------------------------------------------------
class Iterations:
    def __init__(self) -> None:
        self.value, self.reads = 0, 0

    def numpy(self):
        self.reads += 1
        return np.int64(self.value)


def keras(reporter) -> tuple[KerasProgress, Iterations]:
    iterations = Iterations()
    cb = KerasProgress(reporter)
    cb.model = types.SimpleNamespace(optimizer=types.SimpleNamespace(iterations=iterations))
    return cb, iterations


def test_the_keras_callback_reads_the_step_only_when_a_report_is_due(reporter, clock, written):
    cb, iterations = keras(reporter)
    cb.on_train_begin()
    reads_at_start = iterations.reads
    for batch in range(20):
        iterations.value += 1
        clock.now += 0.25
        loss = types.SimpleNamespace(fetch=lambda b=batch: 1.0 / (b + 1))  # a RemoteValue
        cb.on_train_batch_end(batch, {"loss": loss, "accuracy": np.float32(0.75), "size": 32})
    assert iterations.reads - reads_at_start == len(written) == 2
    assert written[0]["step"] == 8 and written[0]["loss"] == 1 / 8
    assert written[0]["accuracy"] == 0.75 and "size" not in written[0]


def test_the_keras_callback_reports_the_final_step_at_the_end(reporter, clock, written):
    cb, iterations = keras(reporter)
    iterations.value = 100  # restored
    cb.on_train_begin()
    iterations.value = 110
    clock.now += 0.5
    cb.on_train_end({"loss": 0.2})
    assert written == [{"step": 110, "loss": 0.2, "steps_per_s": 20.0}]


def test_the_keras_callback_uses_the_tasks_reporter_and_is_silent_outside_a_task(
    reporter, clock, written
):
    cb, iterations = keras(None)
    cb.on_train_begin()
    cb.on_train_end({"loss": 1.0})
    assert written == []
    progress.install(reporter)
    iterations.value = 3
    cb.on_train_end({"loss": 1.0})
    assert written[-1]["step"] == 3


# -- the Estimator hook's logic ---------------------------------------------------------------
def test_the_estimator_hook_reports_the_step_after_each_run_and_the_final_one(
    reporter, clock, written
):
    hook = EstimatorProgress(reporter)
    hook.fetches = {"step": "global_step:0", "loss": "loss:0"}
    hook.after_create_session(types.SimpleNamespace(run=lambda _: np.int64(0)), None)
    for step in range(0, 30):  # the step fetched as each run starts
        clock.now += 0.125
        values = types.SimpleNamespace(results={"step": np.int64(step), "loss": np.float32(0.5)})
        hook.after_run(None, values)
    assert [w["step"] for w in written] == [16]
    hook.end(types.SimpleNamespace(run=lambda _: np.int64(30)))
    assert written[-1] == {"step": 30, "loss": 0.5, "steps_per_s": 8.0}


def test_the_estimators_loss_is_the_last_of_the_losses_collection_else_its_summary():
    summary = types.SimpleNamespace(type="ScalarSummary", name="loss", inputs=["tag", "total"])
    other = types.SimpleNamespace(type="ScalarSummary", name="accuracy", inputs=["tag", "acc"])

    def graph(losses):
        return types.SimpleNamespace(
            get_collection=lambda name: losses if name == "losses" else [],
            get_operations=lambda: [other, summary],
        )

    assert progress.find_loss(graph(["head_loss", "spec_loss"])) == "spec_loss"
    assert progress.find_loss(graph([])) == "total"


# -- no TensorFlow on the client ------------------------------------------------------------
def test_the_packages_task_side_names_load_without_tensorflow(fresh_python):
    code = (
        "import sys, tfyarn_jupyter as t\n"
        "t.report(step=1, loss=0.5)\n"
        "assert t.task_info and t.TaskInfo and t.ProgressCallback\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow imported'\n"
    )
    fresh_python(code)


def test_logs_that_are_one_remote_value_are_fetched_and_unreadable_ones_left_out():
    from tfyarn_jupyter.container.progress import figures

    class Remote:  # a ParameterServerStrategy RemoteValue of the whole logs dict
        def __init__(self, value):
            self.value = value

        def fetch(self):
            if isinstance(self.value, Exception):
                raise self.value
            return self.value

    assert figures(Remote({"loss": 0.5, "batch": 3})) == {"loss": 0.5}
    assert figures(Remote(RuntimeError("worker gone"))) == {}
    assert figures(object()) == {}


# -- max_steps and resources ------------------------------------------------------------------
def test_each_write_carries_max_steps_and_the_tasks_resources(clock, written):
    samples = iter(
        [{"rss_bytes": 100, "cpu_percent": None}, {"rss_bytes": 120, "cpu_percent": 50.0}]
    )
    rep = Reporter(written.append, clock=clock, sample=lambda: next(samples))
    rep.max_steps = 600
    clock.now += 2.0
    rep.report(10, loss=0.9)
    clock.now += 2.0
    rep.report(20, loss=0.8)
    assert [(w["step"], w["max_steps"], w["rss_bytes"], w["cpu_percent"]) for w in written] == [
        (10, 600, 100, None),
        (20, 600, 120, 50.0),
    ]


def test_a_task_without_steps_writes_its_resources_from_the_ticker_only_when_idle(clock, written):
    rss = itertools.count(1000, 10)
    rep = Reporter(written.append, clock=clock, sample=lambda: {"rss_bytes": next(rss)})
    clock.now += 4.9
    assert rep.tick(5.0) is False  # nothing written for 4.9 s only
    clock.now += 0.1
    assert rep.tick(5.0) is True
    assert written == [{"rss_bytes": 1000}]  # an evaluator, a ps: resources alone
    clock.now += 2.0
    rep.report(7, loss=0.5)  # training began: its writes carry the resources
    clock.now += 3.0
    assert rep.tick(5.0) is False
    clock.now += 2.0
    assert rep.tick(5.0) is True  # training stalled: the last figures, fresh resources
    assert written[-1]["step"] == 7 and written[-1]["loss"] == 0.5
    assert [w["rss_bytes"] for w in written] == [1000, 1010, 1020]


def test_the_ticker_thread_writes_and_stops(written):
    rep = Reporter(written.append, sample=lambda: {"rss_bytes": 1})
    stop = progress.start_ticker(rep, interval=0.05)
    deadline = time.monotonic() + 5
    while len(written) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    time.sleep(0.1)
    count = len(written)
    time.sleep(0.2)
    assert 2 <= count == len(written)


def test_keras_max_steps_is_steps_per_epoch_times_epochs():
    assert progress.keras_max_steps({"steps": 50, "epochs": 4, "verbose": 0}) == 200
    assert progress.keras_max_steps({"steps": None, "epochs": 4}) is None
    assert progress.keras_max_steps(None) is None


def test_the_keras_callback_takes_max_steps_from_fits_params(reporter, clock, written):
    cb, iterations = keras(reporter)
    cb.params = {"steps": 25, "epochs": 8}
    cb.on_train_begin()
    iterations.value = 200
    cb.on_train_end({"loss": 0.1})
    assert written[-1]["max_steps"] == 200 and written[-1]["step"] == 200


def test_the_first_step_is_announced_once():
    from tfyarn_jupyter.container.progress import Reporter

    seen: list[str] = []
    reporter = Reporter(lambda figures: None, min_interval_s=0)
    reporter.on_first_step = lambda: seen.append("first")
    reporter.report(step=1, loss=1.0)
    reporter.report(step=2, loss=0.5)
    assert seen == ["first"]
