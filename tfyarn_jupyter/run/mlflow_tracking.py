"""Client side: each run in MLflow, as tf-yarn logs it (the optional ``mlflow`` extra).

On when ``mlflow=True`` (``%%tfyarn --mlflow``), or when it is left to None
and a tracking URI is set (``MLFLOW_TRACKING_URI``, or ``mlflow.set_tracking_uri``
in the notebook). As tf-yarn does, a launch logs into the notebook's active
MLflow run (``mlflow.active_run()`` of the thread that launches, taken at
submission) when there is one, and leaves it running: the user started it, the
user ends it. Otherwise it creates a run, in ``MLFLOW_EXPERIMENT_ID`` /
``MLFLOW_EXPERIMENT_NAME`` (else the default experiment), and ends it on every
path: FINISHED, FAILED or KILLED as the launch ended, even when logging its end
(the task logs' upload) failed, and KILLED if the process exits first.

Either run gets the launch's parameters (topology, resources, queue,
TensorFlow's version...), the chief's training figures by step as the tasks
report them, each evaluation's metrics (``eval_<name>``) by step, the final
status (tags ``tfyarn.final_status``, ``tfyarn.run_status``), and at the end
every task's logs and the final status as artifacts. The run's driver step
feeds it (:meth:`Tracker.observe`); MLflow failing is logged and never fails
the run.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import json
import logging
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tfyarn_jupyter.core.spec import SpecError, TaskSpec

logger = logging.getLogger("tfyarn_jupyter")

#: A trainer's progress keys that are not training figures.
NOT_TRAINING = frozenset({"step", "t", "max_steps", "history", "rss_bytes", "cpu_percent",
                          "memory_limit_bytes", "gpu", "eta_s"})  # fmt: skip
#: An evaluation's keys that are not metrics.
NOT_METRICS = frozenset({"step", "t", "global_step"})
#: Tries at ending a run: a server that just refused an upload may have reset the pooled
#: connection, which the next request meets first when MLflow's HTTP retries are off.
END_ATTEMPTS = 2
#: Tasks whose logs are fetched at once at the end (each is a ``yarn logs`` call).
LOG_FETCHERS = 4
_BAD_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def wanted(flag: bool | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a launch logs to MLflow: as asked, else when a tracking URI is set."""
    if flag is not None:
        return bool(flag)
    env = os.environ if environ is None else environ
    if env.get("MLFLOW_TRACKING_URI"):
        return True
    fluent = sys.modules.get("mlflow")  # set_tracking_uri in this kernel, without the variable
    return bool(fluent and fluent.tracking.is_tracking_uri_set())


def tracker_for(flag: bool | None) -> Tracker | None:
    """A tracker when the launch logs to MLflow; refuse ``mlflow=True`` without MLflow."""
    if not wanted(flag):
        return None
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        if flag:
            raise SpecError(
                "mlflow=True (--mlflow), but MLflow is not installed here: "
                "pip install 'tfyarn_jupyter[mlflow]'"
            ) from None
        logger.warning("MLFLOW_TRACKING_URI is set but mlflow is not installed: not logging")
        return None
    return Tracker(MlflowClient())


def key(name: str) -> str:
    """A metric or parameter name MLflow accepts (tf-yarn's ``format_key``: ``:`` -> ``_``)."""
    return _BAD_KEY.sub("_", name.replace(":", "_"))


def tf_version() -> str:
    for dist in ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(dist)
    return ""


def params_of(task_specs: Mapping[str, TaskSpec], options: Any) -> dict[str, str]:
    """The launch's parameters: topology, each type's resources, queue, TensorFlow's version."""
    from tfyarn_jupyter._version import __version__

    out = {
        "topology": ",".join(f"{t}={s.instances}" for t, s in task_specs.items()),
        "queue": options.queue,
        "name": options.name,
        "mode": options.mode,
        "nb_retries": str(options.nb_retries),
        "tensorflow_version": tf_version() or "unknown",
        "tfyarn_jupyter_version": __version__,
        "python_version": ".".join(map(str, sys.version_info[:3])),
    }
    if options.pip_packages:
        out["pip_packages"] = " ".join(options.pip_packages)
    for t, s in task_specs.items():
        out[f"{t}_memory_mib"], out[f"{t}_vcores"] = str(s.memory), str(s.vcores)
        out[f"{t}_instances"], out[f"{t}_label"] = str(s.instances), s.label.value or "cpu"
        if t == "tensorboard":
            out["tb_model_dir"] = s.tb_model_dir or "(the model dir)"
    return {key(k): v[:6000] for k, v in out.items()}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def checkpointing_trainer(progress: Mapping[str, Any]) -> str | None:
    return next((t for t in ("chief:0", "worker:0") if t in progress), None)


def training_points(progress: Mapping[str, Mapping[str, Any]], after: int) -> list[tuple]:
    """``(key, value, step, ms)`` of the checkpointing trainer's figures past step ``after``."""
    task = checkpointing_trainer(progress)
    p = progress.get(task, {}) if task else {}
    step = p.get("step")
    if not isinstance(step, int) or step <= after:
        return []
    ms = int(float(p.get("t") or time.time()) * 1000)
    out = []
    for k, v in sorted(p.items()):
        value = _number(v)
        if k not in NOT_TRAINING and value is not None:
            out.append((key(k), value, step, ms))
    return out


def evaluation_points(metrics: Iterable[Mapping[str, Any]], seen: set[int]) -> list[tuple]:
    """``(eval_<name>, value, step, ms)`` of the evaluations whose step is not in ``seen``."""
    out = []
    for m in metrics:
        step = m.get("step")
        if not isinstance(step, int) or step in seen:
            continue
        ms = int(float(m.get("t") or time.time()) * 1000)
        for k, v in sorted(m.items()):
            value = _number(v)
            if k not in NOT_METRICS and value is not None:
                out.append((key(f"eval_{k}"), value, step, ms))
    return out


def final_state(st: Any) -> str:
    """MLflow's run status for a run's end."""
    if st.succeeded:
        return "FINISHED"
    return "KILLED" if st.app.state == "KILLED" else "FAILED"


class Tracker:
    """One launch's MLflow run, fed by the run's driver step; disabled by its first failure.

    ``owned``: the tracker created the run, and so ends it (:meth:`close`); a run
    the user had active is only logged into.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self.run_id: str | None = None
        self.owned = False
        self.enabled = True
        self.last_step = -1
        self.eval_steps: set[int] = set()
        self.finished = False
        #: The status the tracker ended its own run with, once it did.
        self.ended_as: str | None = None

    def _safe(self, what: str, fn: Any, *args: Any) -> Any:
        if not self.enabled:
            return None
        try:
            return fn(*args)
        except Exception as exc:  # MLflow away or refusing: training goes on without it
            self.enabled = False
            logger.warning("MLflow: %s failed, not logging this run any more: %s", what, exc)
            return None

    def start(self, run: Any, options: Any) -> None:
        """Take the active MLflow run, else create one; log the launch's parameters."""
        self._safe("starting the run", self._start, run, options)

    def _start(self, run: Any, options: Any) -> None:
        import mlflow
        from mlflow.entities import Param, RunTag

        active = mlflow.active_run()  # thread-local: the launching thread's, as tf-yarn reads it
        tags = {"tfyarn.app_id": run.app_id, "tfyarn.queue": options.queue}
        if active is None:
            name = f"{options.name} {run.app_id}"
            created = self.client.create_run(self._experiment_id(), run_name=name, tags=tags)
            self.run_id, self.owned = created.info.run_id, True
            _OPEN.add(self)  # from here on, ended whatever happens
            logged: Mapping[str, str] = {}
            tags = {}  # given to create_run
        else:
            self.run_id = active.info.run_id
            logged = self.client.get_run(self.run_id).data.params
        params = new_params(params_of(run.task_specs, options), logged)
        self.client.log_batch(
            self.run_id,
            params=[Param(k, v) for k, v in params.items()],
            tags=[RunTag(k, v) for k, v in tags.items()],
        )
        whose = "created" if self.owned else "the active run"
        logger.info("MLflow run %s (%s) for %s", self.run_id, whose, run.app_id)

    def _experiment_id(self) -> str:
        if os.environ.get("MLFLOW_EXPERIMENT_ID"):
            return os.environ["MLFLOW_EXPERIMENT_ID"]
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME")
        if name:
            found = self.client.get_experiment_by_name(name)
            return found.experiment_id if found else self.client.create_experiment(name)
        return "0"

    def observe(self, run: Any, st: Any) -> None:
        """Log what is new in ``st``: training figures, evaluations; at the run's end, the rest.

        At the end the run the tracker created is ended (:meth:`close`) whatever
        logging the end did, raised, or was skipped for an earlier failure.
        """
        if self.run_id is None or self.finished:
            return
        train = training_points(st.progress, self.last_step)
        evals = evaluation_points(st.metrics, self.eval_steps)
        if train or evals:
            self._safe("logging metrics", self._log_points, train + evals)
            if self.enabled:
                self.last_step = train[0][2] if train else self.last_step
                self.eval_steps |= {step for _, _, step, _ in evals}
        if run.ended:
            self.finished = True
            try:
                self._safe("logging the end", self._finish, run, st)
            finally:
                self.close(final_state(st))

    def close(self, status: str, why: str = "") -> None:
        """End the run the tracker created as ``status``, once; never the user's; never raises.

        Tried even when the tracker was disabled: a run not ended stays RUNNING
        in MLflow forever. ``why``, when given, is tagged ``tfyarn.ended_by``.
        """
        if not self.owned or self.ended_as is not None:
            return
        self.ended_as = status
        _OPEN.discard(self)
        for attempt in range(END_ATTEMPTS):
            try:
                if why:
                    self.client.set_tag(self.run_id, "tfyarn.ended_by", why)
                self.client.set_terminated(self.run_id, status)
                logger.info("MLflow run %s ended %s", self.run_id, status)
                return
            except Exception as exc:  # after END_ATTEMPTS, nothing more this process can do
                tried = f"attempt {attempt + 1} of {END_ATTEMPTS}"
                logger.warning(
                    "MLflow: ending run %s %s failed (%s): %s", self.run_id, status, tried, exc
                )

    def _log_points(self, points: list[tuple]) -> None:
        from mlflow.entities import Metric

        metrics = [Metric(k, v, ms, step) for k, v, step, ms in points]
        self.client.log_batch(self.run_id, metrics=metrics)

    def _finish(self, run: Any, st: Any) -> None:
        from mlflow.entities import Metric, RunTag

        summary = st.summary() or {}
        t0, now = time.monotonic(), int(time.time() * 1000)
        tags = {
            "tfyarn.final_status": summary.get("final_status", ""),
            "tfyarn.run_status": final_state(st),
            "tfyarn.attempts": ",".join(run.attempts),
        }
        if st.failure is not None:
            tags["tfyarn.failed_task"] = st.failure.task or "application"
        durations = [Metric("duration_s", float(summary.get("duration_s") or 0.0), now, 0)]
        durations += [Metric(key(f"{t}_duration_s"), float(d.get("duration_s") or 0.0), now, 0)
                      for t, d in summary.get("tasks", {}).items()]  # fmt: skip
        tag_list = [RunTag(k, v) for k, v in tags.items()]
        self.client.log_batch(self.run_id, metrics=durations, tags=tag_list)
        with tempfile.TemporaryDirectory(prefix="tfyarn-mlflow-") as tmp:
            with open(os.path.join(tmp, "tfyarn_status.json"), "w") as fh:
                json.dump(st.to_dict(), fh, indent=1, default=str)
            self.client.log_artifact(self.run_id, os.path.join(tmp, "tfyarn_status.json"))
            logs = os.path.join(tmp, "logs")
            os.makedirs(logs)
            write_logs(run, [t.task for t in st.tasks], logs)
            self.client.log_artifacts(self.run_id, logs, "logs")
        took = time.monotonic() - t0
        logger.info(
            "MLflow run %s: its end, %d tasks' logs in %.1fs", self.run_id, len(st.tasks), took
        )


#: The runs trackers of this process created and have not ended yet.
_OPEN: set[Tracker] = set()


@atexit.register
def _end_open_runs() -> None:
    """The process exiting before a run's end was seen: end its MLflow run KILLED.

    Registered before ``launch``'s own exit hook, so it runs after it (the
    undetached YARN runs are killed first); otherwise nothing would end them.
    """
    for tracker in list(_OPEN):
        tracker.close("KILLED", "the process exited before the run ended")


def new_params(params: Mapping[str, str], logged: Mapping[str, str]) -> dict[str, str]:
    """``params`` less those the run already has: MLflow refuses to change a parameter.

    A different value already logged (by the user, or an earlier launch into the
    same active run) is kept, with a warning, rather than failing all logging.
    """
    for k in sorted(k for k, v in params.items() if logged.get(k, v) != v):
        logger.warning("MLflow: parameter %s is already %r, not %r", k, logged[k], params[k])
    return {k: v for k, v in params.items() if k not in logged}


def write_logs(run: Any, tasks: list[str], folder: str) -> None:
    """Each task's stdout and stderr as ``<type>_<index>.stdout.log`` / ``.stderr.log``."""

    def one(task: str) -> None:
        try:
            logs = run.logs(task)
            texts = {"stdout": logs.stdout, "stderr": logs.stderr}
        except Exception as exc:  # never started, or YARN has no logs of it
            texts = {"stderr": f"(no logs of {task}: {exc})\n"}
        for stream, text in texts.items():
            with open(os.path.join(folder, f"{key(task)}.{stream}.log"), "w") as fh:
                fh.write(text)

    with ThreadPoolExecutor(max_workers=LOG_FETCHERS) as pool:
        list(pool.map(one, tasks))
