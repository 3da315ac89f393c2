"""Container side: each trainer's progress (step, loss, steps per second) in the key-value store.

A :class:`Reporter` writes one task's ``progress/<type:index>`` key (see
:mod:`tfyarn_jupyter.protocol.events`), overwriting it, at most every ``min_interval_s``
seconds and once more when training ends: one key per task however long the
run, and one store write per task every 2 s at most. Training code feeds it
through an Estimator hook (:func:`estimator_hook`), a Keras callback
(:class:`ProgressCallback`) or :func:`report` for plain functions. Each
write also carries the task's resources (a :class:`~.resources.Sampler`'s
figures) and the training's ``max_steps`` when known; :func:`start_ticker`
keeps the resources current for tasks that do not train (evaluator, ps) or
have not started yet, in the same key. The TensorFlow-facing classes are
built on first use: importing this module imports no TensorFlow.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.protocol import events

#: The least time between two writes of one task's progress.
MIN_INTERVAL_S = 2.0
#: How often a task that reports no steps writes its resources.
TICK_INTERVAL_S = 5.0


class Reporter:
    """Throttled progress of one trainer, written through ``put(payload)``."""

    def __init__(
        self,
        put: Callable[[Mapping[str, Any]], None],
        min_interval_s: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sample: Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self._put = put
        self.min_interval_s = min_interval_s
        self._clock = clock
        #: The last write's step and time (or the start of training's): the throttle.
        self._since = (0, clock())
        #: Where the rate counts from: the last write that had new steps.
        self._rate_from = self._since
        self._pending: dict[str, Any] | None = None
        self.writes = 0
        #: The training's last step (Estimator's ``max_steps``, Keras's steps x epochs).
        self.max_steps: int | None = None
        #: Returns the task's resources for each write (``{}`` when not measured).
        self.sample: Callable[[], Mapping[str, Any]] = sample or dict
        #: The training figures last written, repeated by :meth:`tick`'s resource writes.
        self._written: dict[str, Any] = {}
        self._written_at = clock()
        self._lock = threading.Lock()
        #: Called once, at the first step reported (the task's ``first_step`` phase).
        self.on_first_step: Callable[[], None] | None = None

    def restart(self, step: int) -> None:
        """Training (re)starts at ``step`` (a restored checkpoint's): rates count from here."""
        self._since = self._rate_from = (int(step), self._clock())

    def due(self) -> bool:
        """Whether a report now would be written (callers skip costly reads otherwise)."""
        return self._clock() - self._since[1] >= self.min_interval_s

    def report(self, step: int, loss: Any = None, **metrics: Any) -> bool:
        """Record the latest figures; write them if the interval has passed. True if written."""
        if self.on_first_step is not None:
            first, self.on_first_step = self.on_first_step, None
            first()
        self._pending = {"step": int(step), "loss": loss, **metrics}
        if not self.due():
            return False
        return self.flush()

    def flush(self) -> bool:
        """Write the latest figures if they are not written yet (at the end of training)."""
        with self._lock:
            if self._pending is None:
                return False
            now = self._clock()
            step0, t0 = self._rate_from
            payload = self._pending
            elapsed, steps = now - t0, payload["step"] - step0
            if steps > 0 and elapsed > 0:
                payload["steps_per_s"] = steps / elapsed
                self._rate_from = (payload["step"], now)
            else:  # the same step again (the end of training's report): the last rate holds
                payload["steps_per_s"] = self._written.get("steps_per_s", 0.0)
            self._since = (payload["step"], now)
            if self.max_steps is not None:
                payload["max_steps"] = int(self.max_steps)
            self._pending = None
            self._written = dict(payload)
            return self._write(payload, now)

    def tick(self, interval: float = TICK_INTERVAL_S) -> bool:
        """Write the resources (beside the last training figures) if nothing was written for
        ``interval`` seconds: a task that trains writes them with its steps instead."""
        with self._lock:
            now = self._clock()
            if now - self._written_at < interval:
                return False
            return self._write(dict(self._written), now)

    def _write(self, payload: dict[str, Any], now: float) -> bool:
        self._written_at = now
        try:
            payload.update(self.sample())
            self._put(payload)
        except Exception as exc:  # progress is best effort: never fail the training for it
            log(f"progress not written: {exc}")
            return False
        self.writes += 1
        return True


def start_ticker(reporter: Reporter, interval: float = TICK_INTERVAL_S) -> threading.Event:
    """Keep ``reporter``'s resources current from a light daemon thread; set the event to stop."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval / 2):
            reporter.tick(interval)

    threading.Thread(target=loop, name="tfyarn-resources", daemon=True).start()
    return stop


def kv_writer(kv: Any, task: str) -> Callable[[Mapping[str, Any]], None]:
    """``put`` for a :class:`Reporter`: the task's one progress key in skein's store."""
    key = events.progress_key(task)

    def put(payload: Mapping[str, Any]) -> None:
        kv[key] = events.encode(payload)

    return put


_current: Reporter | None = None


def install(reporter: Reporter | None) -> None:
    """Make ``reporter`` the task's own (what :func:`report` and :class:`ProgressCallback` use)."""
    global _current
    _current = reporter


def current() -> Reporter | None:
    return _current


def report(step: int, **metrics: Any) -> None:
    """Report a plain function's progress (``loss=`` and any other figures); at most every 2 s.

    A no-op outside a tfyarn_jupyter task, so the same function runs locally.
    """
    if _current is not None:
        _current.report(step, **metrics)


def number(value: Any) -> Any:
    """A Python number from a tensor, a ParameterServerStrategy RemoteValue or a numpy value."""
    if hasattr(value, "fetch"):
        value = value.fetch()
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "item"):
        value = value.item()
    return value


class KerasProgress:
    """The Keras callback's logic: the optimizer's step count and the batch logs, when due."""

    model: Any  # set by Keras (``set_model``)

    def __init__(self, reporter: Reporter | None = None) -> None:
        self.reporter = reporter

    def _reporter(self) -> Reporter | None:
        return self.reporter if self.reporter is not None else _current

    def _step(self) -> int:
        return int(number(self.model.optimizer.iterations))

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        rep = self._reporter()
        if rep is not None:
            rep.restart(self._step())
            rep.max_steps = keras_max_steps(getattr(self, "params", None)) or rep.max_steps

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        rep = self._reporter()
        if rep is not None and rep.due():
            rep.report(self._step(), **figures(logs))

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        rep = self._reporter()
        if rep is not None:
            rep.report(self._step(), **figures(logs))
            rep.flush()


def keras_max_steps(params: Mapping[str, Any] | None) -> int | None:
    """The optimizer's step count at the end of ``fit``: steps per epoch x epochs (Keras counts
    the steps of every epoch, the ones before ``initial_epoch`` too), None when unknown."""
    steps, epochs = (params or {}).get("steps"), (params or {}).get("epochs")
    if isinstance(steps, int) and isinstance(epochs, int) and steps > 0 and epochs > 0:
        return steps * epochs
    return None


def figures(logs: Any) -> dict[str, Any]:
    """Keras's logs as numbers (the batch's index and size left out).

    Under ParameterServerStrategy the logs may be one ``RemoteValue`` of the
    whole dict: it is fetched. What cannot be read is left out: progress never
    fails training.
    """
    if logs is not None and not isinstance(logs, Mapping) and hasattr(logs, "fetch"):
        try:
            logs = logs.fetch()
        except Exception:
            return {}
    if not isinstance(logs, Mapping):
        return {}
    return {k: number(v) for k, v in logs.items() if k not in ("batch", "size")}


@functools.cache
def _keras_callback_class() -> type:
    import tensorflow as tf

    class _ProgressCallback(KerasProgress, tf.keras.callbacks.Callback):
        def __init__(self, reporter: Reporter | None = None) -> None:
            tf.keras.callbacks.Callback.__init__(self)
            KerasProgress.__init__(self, reporter)
            # The logs may stay tensors (RemoteValues under ParameterServerStrategy): read
            # only when a report is due, and batch hooks are allowed with a ps.
            self._supports_tf_logs = True

    _ProgressCallback.__name__ = _ProgressCallback.__qualname__ = "ProgressCallback"
    return _ProgressCallback


class ProgressCallback:
    """A Keras callback reporting the task's step, loss and metrics (what a task adds to fit).

    ``ProgressCallback()`` is an instance of the ``tf.keras`` callback class in
    use (Keras 2, 3 or tf-keras). For plain functions that call ``fit``
    themselves; outside a tfyarn_jupyter task it reports nothing.
    """

    def __new__(cls, reporter: Reporter | None = None) -> Any:
        return _keras_callback_class()(reporter)


class EstimatorProgress:
    """The Estimator hook's logic: fetch the global step and the loss with each training step."""

    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.fetches: dict[str, Any] = {}
        self.loss: Any = None

    def begin(self) -> None:
        import tensorflow as tf

        v1 = tf.compat.v1
        self.fetches = {"step": v1.train.get_global_step()}
        loss = find_loss(v1.get_default_graph())
        if loss is not None:
            self.fetches["loss"] = loss

    def after_create_session(self, session: Any, coord: Any) -> None:
        self.reporter.restart(int(session.run(self.fetches["step"])))

    def after_run(self, run_context: Any, run_values: Any) -> None:
        # The step is read as the run starts: this run's training step makes it one more.
        results = run_values.results
        self.loss = number(results.get("loss"))
        self.reporter.report(int(results["step"]) + 1, loss=self.loss)

    def end(self, session: Any) -> None:
        self.reporter.report(int(session.run(self.fetches["step"])), loss=self.loss)
        self.reporter.flush()


def find_loss(graph: Any) -> Any:
    """The Estimator's training loss: the last of the graph's ``losses`` collection (where
    ``Estimator.train`` puts its spec's loss), else the input of its ``loss`` summary."""
    losses = graph.get_collection("losses")
    if losses:
        return losses[-1]
    for op in graph.get_operations():
        if op.type == "ScalarSummary" and op.name.rsplit("/", 1)[-1] == "loss":
            return op.inputs[1]
    return None


def estimator_hook(reporter: Reporter, max_steps: int | None = None) -> Any:
    """A ``SessionRunHook`` that reports the trainer's progress (added to ``train_spec.hooks``);
    ``max_steps`` is the ``TrainSpec``'s."""
    import tensorflow as tf

    if max_steps:
        reporter.max_steps = int(max_steps)

    class ProgressHook(EstimatorProgress, tf.compat.v1.train.SessionRunHook):
        def before_run(self, run_context: Any) -> Any:
            return tf.compat.v1.train.SessionRunArgs(self.fetches)

    return ProgressHook(reporter)
