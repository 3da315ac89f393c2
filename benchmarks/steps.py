"""The benchmark's experiment and its step-timing hook: the code that runs in the containers.

Both launchers ship it: tfyarn's runs (:mod:`benchmarks.launches`) and
tf-yarn 0.7.0's driver (:mod:`benchmarks.tfyarn070_driver`), so that both
sides time training steps the same way. The containers can import
``tfyarn_jupyter`` (ours) or ``tf_yarn`` (tf-yarn's), never ``benchmarks``:
:func:`ship_by_value` has cloudpickle put this module's code in the payload.
Hence only the standard library at the top; TensorFlow and the quickstart's
``cancer`` module (shipped with ``files=``) are imported where they are used.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def ship_by_value() -> None:
    """Pickle this module's functions by value: the containers have no ``benchmarks``."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])


def task_name() -> str:
    """``chief-0``, ``worker-1``… from ``TF_CONFIG``; ``local-0`` outside a cluster."""
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = tf_config.get("task") or {}
    return f"{task.get('type', 'local')}-{task.get('index', 0)}"


def read_steps(prefix: str, task: str) -> dict[str, Any]:
    """What :func:`step_hook` wrote for ``task`` (``{}`` if it wrote nothing)."""
    try:
        return json.loads(Path(f"{prefix}.{task}.json").read_text())
    except (OSError, ValueError):
        return {}


def step_hook(stats_prefix: str) -> Any:
    """A training hook that writes each step's time to ``<stats_prefix>.<task>.json``."""
    import tensorflow as tf

    class StepTimes(tf.estimator.SessionRunHook):
        def begin(self) -> None:
            self.ends: list[float] = []
            self.durations: list[float] = []
            self._before = 0.0

        def before_run(self, run_context: Any) -> None:
            self._before = time.time()

        def after_run(self, run_context: Any, run_values: Any) -> None:
            now = time.time()
            self.ends.append(now)
            self.durations.append(now - self._before)

        def end(self, session: Any) -> None:
            record = {
                "first_step": self.ends[0] if self.ends else None,
                "last_step": self.ends[-1] if self.ends else None,
                "steps": len(self.ends),
                "durations": self.durations,
            }
            Path(f"{stats_prefix}.{task_name()}.json").write_text(json.dumps(record))

    return StepTimes()


def bench_experiment(model_dir: str, max_steps: int, stats_prefix: str) -> Any:
    """notebooks/cancer.py's experiment, with a hook timing each training step."""
    import cancer  # shipped with files={"cancer.py": ...}

    exp = cancer.experiment(model_dir, max_steps=max_steps)
    hooks = (*(exp.train_spec.hooks or ()), step_hook(stats_prefix))
    return exp._replace(train_spec=exp.train_spec._replace(hooks=hooks))


def local_train(model_dir: str, max_steps: int, stats_prefix: str) -> None:
    """The same estimator trained in this process, as the local baseline."""
    import tensorflow as tf

    os.environ.pop("TF_CONFIG", None)
    exp = bench_experiment(model_dir, max_steps, stats_prefix)
    tf.estimator.train_and_evaluate(exp.estimator, exp.train_spec, exp.eval_spec)
