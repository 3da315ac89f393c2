"""A run on YARN: launch it (``submit``, ``run_on_yarn``), watch it, drive it, stop it.

``submit`` returns a :class:`Run` at once. Reading a run (``status()``)
never changes it; :meth:`Run.advance` is the driver step, called by
``wait()`` and by the panel's poller: it acknowledges ended tasks, writes
the event log when the run ends, and resubmits a failed attempt while
retries are left. A detached run nobody watches is not retried.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import skein

from tfyarn_jupyter.core import memory as resources
from tfyarn_jupyter.core import recovery
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import TaskSpec, validate_task_specs
from tfyarn_jupyter.core.state import ENDED_APP, RunStatus, changes, redact_env
from tfyarn_jupyter.hadoop import resourcemanager
from tfyarn_jupyter.protocol import causes, contract
from tfyarn_jupyter.run import mlflow_tracking
from tfyarn_jupyter.run import skein_app as appspec
from tfyarn_jupyter.run.polling import StatusSource, app_info, task_specs_of
from tfyarn_jupyter.run.result import (
    RunFailed,
    RunResult,
    event_log_path,
    failure_of,
    make_result,
    read_event_log,
    write_event_log,
)
from tfyarn_jupyter.ship.shipped import ShippedEnv

logger = logging.getLogger("tfyarn_jupyter")

_live_runs: weakref.WeakSet[Run] = weakref.WeakSet()


@atexit.register
def _kill_undetached_runs() -> None:
    """No orphans: when the kernel exits, end the runs it launched (unless detached)."""
    for run in list(_live_runs):
        if not run.detached:
            with contextlib.suppress(Exception):
                run.cancel()


def _heartbeat_loop(ref: weakref.ref[Run], stop: threading.Event) -> None:
    landed_for = ""  # the attempt whose master has the heartbeat; until then, retry soon
    while True:
        run = ref()
        # The whole run, not the current attempt: a failed attempt that will be
        # retried has ended too, and its successor needs the heartbeat.
        if run is None or run.ended:
            return
        landed_for = run.app_id if run.source.heartbeat() else landed_for
        soon = landed_for != run.app_id
        del run
        if stop.wait(contract.FIRST_HEARTBEAT_RETRY_S if soon else contract.HEARTBEAT_INTERVAL_S):
            return


class Run:
    """A run on YARN, live or finished: poll it, wait for it, stop it, read its logs."""

    def __init__(
        self,
        client: skein.Client,
        app_id: str,
        task_specs: Mapping[str, TaskSpec],
        *,
        prepared: appspec.Prepared | None = None,
        nb_retries: int = 0,
        detached: bool = False,
        heartbeat: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.task_specs = dict(task_specs)
        self.attempts = [app_id]
        self.nb_retries = nb_retries
        #: What is left to spend on new attempts: the user's retries, and restarts for
        #: containers YARN took back or lost with their node (:mod:`.core.recovery`).
        self.budget = recovery.Budget(nb_retries, recovery.preemptions_bound(env or {}))
        #: Each new attempt and why: ``{"attempt", "task", "cause", "spent", "why", "t"}``.
        self.restarts: list[dict[str, Any]] = []
        self._final = False  # no new attempt will come: given up, or cancelled
        self.detached = detached
        self.phases = dict(prepared.phases) if prepared else {}
        self.env_report: ShippedEnv | None = prepared.env_report if prepared else None
        self.submitted_at = time.time()
        self._prepared = prepared
        self._env = redact_env(env or {})
        self._lock = threading.RLock()
        self._source = StatusSource(client, app_id, self.task_specs)
        self._persisted: set[str] = set()
        self._result: RunResult | None = None
        self._heartbeat_stop = threading.Event()
        #: Logs the run to MLflow from the driver step (:mod:`.mlflow_tracking`), or None.
        self.tracker: mlflow_tracking.Tracker | None = None
        #: Tasks whose memory was logged as critical (once per task).
        self._memory_warned: set[str] = set()
        #: When a new attempt decided on after a lost container is due (``time.monotonic``).
        self._resubmit_at: float | None = None
        _live_runs.add(self)
        if heartbeat and not detached:
            self._start_heartbeat()

    # -- identity --
    @property
    def app_id(self) -> str:
        return self.attempts[-1]

    @property
    def attempt(self) -> int:
        return len(self.attempts) - 1

    @property
    def spec(self) -> skein.ApplicationSpec | None:
        """The application spec submitted (None for a run this process did not launch)."""
        return self._prepared.spec if self._prepared else None

    @property
    def source(self) -> StatusSource:
        """What reads the current attempt's state from YARN."""
        return self._source

    def __repr__(self) -> str:
        return f"<Run {self.app_id} attempt={self.attempt}>"

    def _repr_html_(self) -> str:
        from tfyarn_jupyter.panel.summary import status_html

        return status_html(self.status())

    def _start_heartbeat(self) -> None:
        stop = self._heartbeat_stop
        threading.Thread(
            target=_heartbeat_loop, args=(weakref.ref(self), stop), name="tfyarn-heartbeat",
            daemon=True,
        ).start()  # fmt: skip
        weakref.finalize(self, stop.set)

    # -- reading --
    @property
    def last_status(self) -> RunStatus | None:
        return self._source.last

    @property
    def resourcemanager_unreachable(self) -> str:
        """While the ResourceManager does not answer (a restart, a failover to its standby):
        since when and why, the view then coming from the application master; else ""."""
        return self._source.report.message()

    def status(self) -> RunStatus:
        """One fresh snapshot (three calls whatever the run's size); it changes nothing."""
        with self._lock:
            st = self._source.poll()
            st.attempt = self.attempt
            return st

    @property
    def tensorboard_url(self) -> str | None:
        """The tensorboard task's page through the ResourceManager's proxy, while it serves."""
        last = self._source.last
        return last.tensorboard_url if last is not None else None

    @property
    def ended(self) -> bool:
        """The run (not only the current attempt) is over: it succeeded or has no retry left.

        Under the driver's lock: between spending a retry and submitting it, an ended attempt
        with no retry left would read as the run's end (and stop the heartbeat thread)."""
        with self._lock:
            last = self._source.last
            if not self._source.ended or self._resubmit_at is not None:
                return False
            if self._final or (last is not None and last.succeeded):
                return True
            if last is None:  # nothing read yet to tell why it ended
                return self.budget.retries <= 0
            return self._decision(last)[2].give_up  # no new attempt will be made

    # -- driving --
    def advance(self) -> RunStatus:
        """The driver step: read, acknowledge ended tasks, keep the event log, retry a failure."""
        with self._lock:
            prev = self._source.last
            st = self.status()
            for line in changes(prev, st):
                logger.info(line)
            if st.tensorboard_url and st.tensorboard_url != (prev and prev.tensorboard_url):
                logger.info("%s TensorBoard: %s", st.app.app_id, st.tensorboard_url)
            self._warn_memory(st)
            self._source.acknowledge()
            self._source.publish_capacity()
            if st.ended and st.app.app_id not in self._persisted:
                self._persisted.add(st.app.app_id)
                self._persist(st)
            if st.ended and not st.succeeded and not self._final and self._resubmit_at is None:
                self._decide_retry(st)
            due = self._resubmit_at
            if due is not None and not self._final and time.monotonic() >= due:
                self._resubmit_at = None
                self._retry()
                st = self.status()
            if self.tracker is not None:
                self.tracker.observe(self, st)
            return st

    def _warn_memory(self, st: RunStatus) -> None:
        """Log once per task that its memory neared the limit past which YARN kills it."""
        for task, level in resources.memory_warnings(st).items():
            if level == "critical" and task not in self._memory_warned:
                self._memory_warned.add(task)
                p = st.progress.get(task, {})
                logger.warning(
                    "%s %s uses %.0f MiB, over %d%% of its memory limit: YARN kills it past it",
                    st.app.app_id, task, p.get("rss_bytes", 0) / 2**20, resources.CRITICAL * 100,
                )  # fmt: skip

    def _persist(self, st: RunStatus) -> None:
        write_event_log(st, self.task_specs, self._source.events, self.attempts, self._env)

    def _decision(self, st: RunStatus) -> tuple[str, causes.Cause, recovery.Decision]:
        """What a failed attempt calls for (reads only): the lost task, why, and the decision:
        a container YARN preempted or lost with its node spends a restart, a task's own
        failure a retry (:mod:`.core.recovery`); the losses the application restarted
        itself come out of the same bound."""
        lost = next((t for t in st.tasks if t.task == (st.failure and st.failure.task)), None)
        lost = lost or next((t for t in st.tasks if t.state in ("failed", "killed")), None)
        task = lost.task if lost else "the application"
        cause, _ = causes.read_yarn(lost.exit_message if lost else st.app.diagnostics)
        topology = {t: s.instances for t, s in self.task_specs.items()}
        kind = self._prepared.contract.program if self._prepared else contract.UNKNOWN
        inside = recovery.losses_restarted(self._source.events.restarts)
        decision = recovery.decide_attempt(
            task, cause, contract.known_strategy(kind, topology), topology, self.budget, inside
        )
        return task, cause, decision

    def _decide_retry(self, st: RunStatus) -> None:
        """Give up, or spend from the budget, record the restart and set when the new attempt
        is due: at once, or after a backoff when the cluster took a container back."""
        task, cause, decision = self._decision(st)
        if decision.give_up:
            self._final = True
            logger.info("%s %s: not tried again", self.app_id, decision.why)
            return
        self.budget = decision.left
        record = {"attempt": self.attempt + 1, "task": task, "cause": cause.value,
                  "spent": decision.spends, "why": decision.why, "t": time.time()}  # fmt: skip
        self.restarts.append(record)
        wait = recovery.backoff_after(self.restarts)
        self._resubmit_at = time.monotonic() + wait
        logger.info("%s %s (a new attempt in %.0f s: %s left)", self.app_id, decision.why,
                    wait, decision.left)  # fmt: skip

    def _retry(self) -> None:
        assert self._prepared is not None
        prep = self._prepared
        spec = appspec.with_attempt(prep.spec, prep.contract, self.attempt + 1)
        app_id = resourcemanager.submit_spec(self.client, spec)
        self.attempts.append(app_id)
        self._source = StatusSource(self.client, app_id, self.task_specs)

    def wait(self, timeout: float | None = None, interval: float = 1.0) -> RunResult:
        """Drive the run until it (and its retries) ended; raise :class:`RunFailed` on failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.advance()
            if self.ended:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"{self.app_id} still {st.app.state} after {timeout}s")
            time.sleep(interval)
        self._heartbeat_stop.set()
        self._result = make_result(st, self._source.events, self.attempts, self.restarts)
        if not st.succeeded:
            raise failure_of(st, self.app_id)
        return self._result

    @property
    def result(self) -> RunResult | None:
        return self._result

    # -- actions --
    def cancel(self) -> None:
        """Kill the application (checkpoints already written stay in ``model_dir``)."""
        self._final = True
        self._resubmit_at = None
        self._heartbeat_stop.set()
        if self._source.ended:
            return
        self.client.kill_application(self.app_id)
        if self.tracker is not None:  # no driver step may come to tell MLflow (an interrupt)
            self.tracker.close("KILLED")

    def kill_task(self, task: str) -> None:
        """Kill one task's container (``"worker:1"``)."""
        self._source.kill_task(task)

    def logs(self, task: str | None = None, tail: int = 65536):
        """The task's stdout/stderr (a :class:`~.logs.TaskLogs`): live, else aggregated."""
        return self._source.logs(task, tail=tail)

    @property
    def env(self) -> dict[str, str]:
        """The environment the tasks got, secrets masked."""
        return dict(self._env)


def submit(
    experiment_fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], **options: Any
) -> Run:
    """Launch a run and return its handle at once.

    ``options`` are :class:`~.options.LaunchOptions`' fields (tf-yarn's
    ``files``, ``env``, ``queue``, ``pip_packages``, ``file_systems``,
    ``nb_retries``, and ``name``, ``acls``, ``pyenv_archive``, ``detach``…),
    or ``options=LaunchOptions(...)`` itself.
    """
    specs = validate_task_specs(task_specs)
    opts = options.pop("options", None) or LaunchOptions.from_keywords(options)
    tracker = mlflow_tracking.tracker_for(opts.mlflow)
    t0 = time.perf_counter()
    prep = appspec.prepare(experiment_fn, specs, opts)
    try:
        client = opts.skein_client or resourcemanager.get_client(opts.principal, opts.keytab)
        t1 = time.perf_counter()
        app_id = resourcemanager.submit_spec(
            client, appspec.with_attempt(prep.spec, prep.contract, 0)
        )
        prep.phases["submit"] = time.perf_counter() - t1
        prep.phases["total"] = time.perf_counter() - t0
    except BaseException:
        prep.workdir.cleanup()
        raise
    if not opts.nb_retries:
        # No retry will resubmit the payload and sources: their folder can go now. A
        # retried run keeps it until its handle goes (TemporaryDirectory's finalizer).
        prep.workdir.cleanup()
    run = Run(client, app_id, prep.task_specs, prepared=prep, nb_retries=opts.nb_retries,
              detached=opts.detach, heartbeat=not opts.detach, env=opts.env)  # fmt: skip
    logger.info("submitted %s to queue %s (%s)", app_id, opts.queue, opts.name)
    if tracker is not None:
        tracker.start(run, opts)
        run.tracker = tracker
    if opts.detach:
        with contextlib.suppress(Exception):
            run.source.mark_detached()
    return run


def run_on_yarn(
    experiment_fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], **options: Any
) -> RunResult:
    """Train ``experiment_fn``'s Experiment on YARN and wait for the end (the seed's API).

    Takes :func:`submit`'s keywords; interrupting it cancels the run.
    """
    run = submit(experiment_fn, task_specs, **options)
    try:
        return run.wait()
    except KeyboardInterrupt:
        run.cancel()
        raise


def attach(app_id: str) -> Run:
    """A handle on a run launched earlier (another kernel, detached, or finished).

    A live run's topology comes from its application master; a finished
    run's final state from the event log it left on HDFS.
    """
    client = resourcemanager.get_client()
    state = app_info(client.application_report(app_id)).state
    if state in ENDED_APP:
        record = read_event_log(app_id)
        if record is None:
            raise RunFailed(
                f"{app_id} ended {state} and left no tfyarn event log "
                f"({event_log_path(app_id)}): was it launched by tfyarn_jupyter?"
            )
        specs = {t: TaskSpec.from_dict(d) for t, d in record["task_specs"].items()}
        run = Run(client, app_id, specs, heartbeat=False, detached=True)
        run.source.restore(record)
        return run
    # Attaching does not take ownership: the new kernel leaves the run running on exit.
    return Run(client, app_id, task_specs_of(client, app_id), heartbeat=True, detached=True)
