"""The quickstart's model: a small DNN classifier on scikit-learn's bundled breast-cancer data.

Two forms of the same model: an Estimator ``Experiment`` (TensorFlow 2.15)
and a ``KerasExperiment`` (TensorFlow 2.15 through 2.21, Keras 2 or 3).
The seed's wine-quality data cannot be downloaded here, so the quickstart
uses a data set that ships with scikit-learn (569 samples, 30 features,
two classes; the majority class is 63 % of it). Imported by the notebook
and, through the ``%%tfyarn`` magic, shipped to the containers with it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from tfyarn_jupyter import Experiment, KerasExperiment

N_TRAIN = 450


def load_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardised features, shuffled with a fixed seed, split train / test.

    Read from the CSV file scikit-learn ships (what ``load_breast_cancer`` reads), found
    without importing scikit-learn: every task of a run loads the data, and importing
    ``sklearn.datasets`` would cost each about 0.7 CPU-s (as much as building its model)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        raise ImportError("the quickstart's data ships with scikit-learn: pip install scikit-learn")
    csv = Path(spec.origin).parent / "datasets" / "data" / "breast_cancer.csv"
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)  # the first line: sizes and class names
    x, y = rows[:, :-1], rows[:, -1]
    x = ((x - x.mean(0)) / x.std(0)).astype("float32")
    order = np.random.RandomState(0).permutation(len(x))
    x, y = x[order], y[order].astype("int32")
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]


def majority_rate() -> float:
    """Accuracy of always predicting the most frequent class on the test split."""
    _, _, _, y_test = load_data()
    share = float(np.mean(y_test))
    return max(share, 1 - share)


def input_fn(x: np.ndarray, y: np.ndarray, train: bool, batch_size: int = 32):
    import tensorflow as tf

    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if train:
            ds = ds.shuffle(len(x), seed=0).repeat()
        return ds.batch(batch_size)

    return fn


def experiment(
    model_dir: str,
    max_steps: int = 400,
    hidden_units: tuple[int, ...] = (16, 8),
    save_checkpoints_steps: int = 100,
    fail_on_attempt: int | None = None,
    step_delay_s: float = 0.0,
) -> Any:
    """The Experiment an ``experiment_fn`` returns; ``fail_on_attempt`` is for fault tests,
    ``step_delay_s`` (a pause after each step) for tests that watch training while it runs:
    it sets a least training time that no machine's speed shortens."""
    import os

    import tensorflow as tf

    if (
        fail_on_attempt is not None
        and int(os.environ.get("TFYARN_ATTEMPT", "0")) == fail_on_attempt
    ):
        raise RuntimeError(f"failing on purpose on attempt {fail_on_attempt}")
    x_train, y_train, x_test, y_test = load_data()
    estimator = tf.estimator.DNNClassifier(
        hidden_units=list(hidden_units),
        feature_columns=[tf.feature_column.numeric_column("x", shape=(x_train.shape[1],))],
        n_classes=2,
        optimizer=lambda: tf.keras.optimizers.legacy.Adam(0.01),
        config=tf.estimator.RunConfig(
            model_dir=model_dir,
            save_checkpoints_steps=save_checkpoints_steps,
            log_step_count_steps=50,
        ),
    )
    return Experiment(
        estimator,
        tf.estimator.TrainSpec(
            input_fn(x_train, y_train, train=True),
            max_steps=max_steps,
            hooks=[_pause_hook(step_delay_s)] if step_delay_s > 0 else [],
        ),
        tf.estimator.EvalSpec(
            input_fn(x_test, y_test, train=False), steps=None, start_delay_secs=0, throttle_secs=1
        ),
    )


def _pause_hook(seconds: float) -> Any:
    """An Estimator hook that sleeps ``seconds`` after every training step."""
    import time

    import tensorflow as tf

    class Pause(tf.estimator.SessionRunHook):
        def after_run(self, run_context: Any, run_values: Any) -> None:
            time.sleep(seconds)

    return Pause()


def keras_experiment(
    model_dir: str,
    epochs: int = 4,
    steps_per_epoch: int = 25,
    batch_size: int = 32,
    hidden_units: tuple[int, ...] = (16, 8),
) -> Any:
    """The KerasExperiment an ``experiment_fn`` returns: built inside the task's strategy scope."""
    import tensorflow as tf

    x_train, y_train, x_test, y_test = load_data()
    layers = [tf.keras.Input(shape=(x_train.shape[1],))]
    layers += [tf.keras.layers.Dense(n, activation="relu") for n in hidden_units]
    model = tf.keras.Sequential([*layers, tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"]
    )

    def train_data():
        ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        return ds.shuffle(len(x_train), seed=0).repeat().batch(batch_size)

    def validation_data():
        return tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size)

    return KerasExperiment(
        model=model,
        model_dir=model_dir,
        train_params={"epochs": epochs, "steps_per_epoch": steps_per_epoch, "verbose": 2},
        input_data_fn=train_data,
        target_data_fn=None,
        validation_data_fn=validation_data,
    )
