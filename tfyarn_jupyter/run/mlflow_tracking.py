"""Client side: each run in MLflow, as tf-yarn logs it (the optional ``mlflow`` extra).

On when ``mlflow=True`` (``%%tfyarn --mlflow``), or when it is left to None
and a tracking URI is set (``MLFLOW_TRACKING_URI``, or ``mlflow.set_tracking_uri``
in the notebook). A launch is one MLflow run, in ``MLFLOW_EXPERIMENT_ID`` /
``MLFLOW_EXPERIMENT_NAME`` (else the default experiment), nested under the
notebook's active MLflow run if there is one. It gets the launch's parameters
(topology, resources, queue, TensorFlow's version...), the chief's training
figures by step as the tasks report them, each evaluation's metrics
(``eval_<name>``) by step, the final status, and at the end every task's logs
and the final status as artifacts. The run's driver step feeds it
(:meth:`Tracker.observe`); MLflow failing is logged and never fails the run.
"""

from __future__ import annotations

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
    """One launch's MLflow run, fed by the run's driver step; disabled by its first failure."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.run_id: str | None = None
        self.enabled = True
        self.last_step = -1
        self.eval_steps: set[int] = set()
        self.finished = False

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
        """Create the MLflow run and log the launch's parameters (after its submission)."""
        self._safe("starting the run", self._start, run, options)

    def _start(self, run: Any, options: Any) -> None:
        import mlflow
        from mlflow.entities import Param

        parent = mlflow.active_run()
        tags = {"tfyarn.app_id": run.app_id, "tfyarn.queue": options.queue}
        if parent is not None:
            tags["mlflow.parentRunId"] = parent.info.run_id
        experiment = self._experiment_id(parent)
        created = self.client.create_run(experiment, run_name=f"{options.name} {run.app_id}",
                                         tags=tags)  # fmt: skip
        self.run_id = created.info.run_id
        params = [Param(k, v) for k, v in params_of(run.task_specs, options).items()]
        self.client.log_batch(self.run_id, params=params)
        logger.info("MLflow run %s (experiment %s) for %s", self.run_id, experiment, run.app_id)

    def _experiment_id(self, parent: Any) -> str:
        if os.environ.get("MLFLOW_EXPERIMENT_ID"):
            return os.environ["MLFLOW_EXPERIMENT_ID"]
        name = os.environ.get("MLFLOW_EXPERIMENT_NAME")
        if name:
            found = self.client.get_experiment_by_name(name)
            return found.experiment_id if found else self.client.create_experiment(name)
        return parent.info.experiment_id if parent is not None else "0"

    def observe(self, run: Any, st: Any) -> None:
        """Log what is new in ``st``: training figures, evaluations; at the run's end, the rest."""
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
            self._safe("logging the end", self._finish, run, st)

    def _log_points(self, points: list[tuple]) -> None:
        from mlflow.entities import Metric

        metrics = [Metric(k, v, ms, step) for k, v, step, ms in points]
        self.client.log_batch(self.run_id, metrics=metrics)

    def _finish(self, run: Any, st: Any) -> None:
        from mlflow.entities import Metric

        summary = st.summary() or {}
        t0, now = time.monotonic(), int(time.time() * 1000)
        self.client.set_tag(self.run_id, "tfyarn.final_status", summary.get("final_status", ""))
        self.client.set_tag(self.run_id, "tfyarn.attempts", ",".join(run.attempts))
        if st.failure is not None:
            self.client.set_tag(self.run_id, "tfyarn.failed_task", st.failure.task or "application")
        durations = [Metric("duration_s", float(summary.get("duration_s") or 0.0), now, 0)]
        durations += [Metric(key(f"{t}_duration_s"), float(d.get("duration_s") or 0.0), now, 0)
                      for t, d in summary.get("tasks", {}).items()]  # fmt: skip
        self.client.log_batch(self.run_id, metrics=durations)
        with tempfile.TemporaryDirectory(prefix="tfyarn-mlflow-") as tmp:
            with open(os.path.join(tmp, "tfyarn_status.json"), "w") as fh:
                json.dump(st.to_dict(), fh, indent=1, default=str)
            self.client.log_artifact(self.run_id, os.path.join(tmp, "tfyarn_status.json"))
            logs = os.path.join(tmp, "logs")
            os.makedirs(logs)
            write_logs(run, [t.task for t in st.tasks], logs)
            self.client.log_artifacts(self.run_id, logs, "logs")
        self.client.set_terminated(self.run_id, final_state(st))
        logger.info("MLflow run %s ended %s (its end and %d tasks' logs in %.1fs)", self.run_id,
                    final_state(st), len(st.tasks), time.monotonic() - t0)  # fmt: skip


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
