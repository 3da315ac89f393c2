"""``hdfs://`` wherever TensorFlow opens a file, on the sandbox: in this process, in a kernel
after ``%load_ext tfyarn_jupyter``, and in the tasks of runs that read their data from HDFS
and write their Keras callbacks' files there (TensorFlow 2.15 and 2.21)."""

from __future__ import annotations

import csv
import io
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tfyarn_jupyter import Experiment, KerasExperiment, TaskSpec, submit
from tfyarn_jupyter.core import program
from tfyarn_jupyter.hadoop import filesystem, tf_plugin

from .helpers import unique

pytestmark = [pytest.mark.sandbox, pytest.mark.current_tf]

SMALL = TaskSpec("1G", 1)
RUN_TIMEOUT_S = 600
TF = program.tensorflow_version() or (0, 0)
N_ROWS, N_FEATURES, N_SHARDS = 600, 8, 3


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)
    x = rng.normal(size=(N_ROWS, N_FEATURES)).astype("float32")
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("float32")
    return x, y


def _tfrecords(x: np.ndarray, y: np.ndarray) -> list[bytes]:
    """The rows as serialised ``tf.train.Example``s, one file's bytes per shard."""
    import tensorflow as tf

    shards = []
    for part in np.array_split(np.arange(N_ROWS), N_SHARDS):
        folder = tempfile.TemporaryDirectory()  # the shard's bytes are kept, its file removed
        buf = Path(folder.name) / "shard.tfrecord"
        with tf.io.TFRecordWriter(str(buf)) as w:
            for i in part:
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                    "y": tf.train.Feature(float_list=tf.train.FloatList(value=[y[i]])),
                }))  # fmt: skip
                w.write(ex.SerializeToString())
        shards.append(buf.read_bytes())
        folder.cleanup()
    return shards


@pytest.fixture(scope="module")
def hdfs_data(sandbox) -> Iterator[str]:
    """A CSV and a set of TFRecord files, generated here and uploaded with hdfs-native (not
    with the plugin under test); the folder's ``hdfs://`` URI."""
    path = f"{filesystem.home()}/tfyarn-test/{unique('data')}"
    x, y = _rows()
    text = io.StringIO()
    csv.writer(text).writerows(
        [*map(float, row), float(label)] for row, label in zip(x, y, strict=True)
    )
    filesystem.write_bytes(f"{path}/train.csv", text.getvalue().encode())
    for i, shard in enumerate(_tfrecords(x, y)):
        filesystem.write_bytes(f"{path}/records/part-{i}.tfrecord", shard)
    yield filesystem.qualify(path)
    filesystem.client().delete(path, recursive=True)


def test_tf_data_gfile_checkpoints_and_summaries_open_hdfs_in_this_process(hdfs_data, tmp_path):
    import tensorflow as tf

    tf_plugin.register()
    assert sorted(tf.io.gfile.listdir(hdfs_data)) == ["records", "train.csv"]
    lines = tf.data.TextLineDataset(f"{hdfs_data}/train.csv")
    assert sum(1 for _ in lines) == N_ROWS
    defaults = [tf.float32] * (N_FEATURES + 1)
    csv_rows = tf.data.experimental.CsvDataset(f"{hdfs_data}/train.csv", defaults)
    assert sum(1 for _ in csv_rows) == N_ROWS
    files = tf.data.Dataset.list_files(f"{hdfs_data}/records/*.tfrecord", shuffle=False)
    records = files.interleave(tf.data.TFRecordDataset, cycle_length=N_SHARDS)
    assert sum(1 for _ in records) == N_ROWS

    out = f"{hdfs_data}/written-{unique('p')}"
    v = tf.Variable(np.arange(4.0))
    saved = tf.train.Checkpoint(v=v).save(f"{out}/ckpt/c")
    v.assign(np.zeros(4))
    tf.train.Checkpoint(v=v).restore(saved)
    assert v.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    module = tf.Module()
    module.v = v
    tf.saved_model.save(module, f"{out}/saved")
    assert tf.saved_model.load(f"{out}/saved").v.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    with tf.io.gfile.GFile(f"{out}/note.txt", "w") as fh:
        fh.write("hello")
    assert tf.io.gfile.GFile(f"{out}/note.txt").read() == "hello"
    assert filesystem.read_bytes(filesystem.strip_scheme(f"{out}/note.txt")) == b"hello"
    with pytest.raises(tf.errors.NotFoundError, match="no-such-file"):
        tf.io.gfile.GFile(f"{out}/no-such-file").read()
    tf.io.gfile.rmtree(out)
    assert not tf.io.gfile.exists(out)


def test_a_kernel_reads_hdfs_with_tensorflow_after_load_ext(hdfs_data, tmp_path):
    from .test_notebook import Kernel

    kernel = Kernel(tmp_path)
    try:
        kernel.run("%load_ext tfyarn_jupyter")
        kernel.run("import sys; assert 'tensorflow' not in sys.modules, 'loaded TensorFlow early'")
        out = kernel.run(
            "import tensorflow as tf\n"
            f"print(sorted(tf.io.gfile.listdir({hdfs_data!r})))\n"
            f"print(sum(1 for _ in tf.data.TextLineDataset({hdfs_data + '/train.csv'!r})))\n"
        )
    finally:
        kernel.close()
    text = "".join(o.get("text", "") for o in out if o.get("name") == "stdout")
    assert "train.csv" in text and f"\n{N_ROWS}\n" in f"\n{text}"


def test_a_keras_run_reads_its_data_from_hdfs_and_writes_its_callbacks_there(hdfs_data, runs):
    out, data = f"{hdfs_data}/keras-{unique('run')}", hdfs_data
    # Keras 3 saves weights as .weights.h5 (through a local file it copies with tf.io.gfile);
    # tf.keras 2 opens a .h5 with h5py itself, so there its TensorFlow format is the one that
    # goes to HDFS.
    weights = "weights-{epoch}.weights.h5" if TF >= (2, 16) else "weights-{epoch}"

    def experiment_fn():
        """Trains on the TFRecords, validates on the CSV, both read from HDFS; its checkpoint
        and TensorBoard callbacks write to HDFS."""
        import tensorflow as tf

        def parse(record):
            spec = {"x": tf.io.FixedLenFeature([N_FEATURES], tf.float32),
                    "y": tf.io.FixedLenFeature([1], tf.float32)}  # fmt: skip
            ex = tf.io.parse_single_example(record, spec)
            return ex["x"], ex["y"]

        def train_data():
            files = tf.data.Dataset.list_files(f"{data}/records/*.tfrecord", shuffle=False)
            ds = files.interleave(tf.data.TFRecordDataset, cycle_length=N_SHARDS).map(parse)
            return ds.repeat().batch(32)

        def validation_data():
            ds = tf.data.experimental.CsvDataset(
                f"{data}/train.csv", [tf.float32] * (N_FEATURES + 1)
            )
            return ds.map(lambda *c: (tf.stack(c[:-1]), c[-1])).batch(64)

        model = tf.keras.Sequential([
            tf.keras.Input(shape=(N_FEATURES,)),
            tf.keras.layers.Dense(8, activation="relu"),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ])  # fmt: skip
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        callbacks = [
            tf.keras.callbacks.ModelCheckpoint(f"{out}/{weights}", save_weights_only=True),
            tf.keras.callbacks.TensorBoard(f"{out}/tensorboard"),
        ]
        return KerasExperiment(
            model=model,
            model_dir=f"{out}/model",
            train_params={
                "epochs": 2,
                "steps_per_epoch": 10,
                "verbose": 2,
                "callbacks": callbacks,
                "validation_data": validation_data(),
            },
            input_data_fn=train_data,
            validation_data_fn=validation_data,
        )

    run = submit(experiment_fn, {"chief": SMALL}, name=unique("tfyarn-hdfs-keras"))
    runs.append(run)
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert result.final_status == "SUCCEEDED", result
    names = set(filesystem.client().list(filesystem.strip_scheme(out)))
    saved = {weights.format(epoch=e) + ("" if TF >= (2, 16) else ".index") for e in (1, 2)}
    assert {*saved, "tensorboard"} <= names, names
    logs = filesystem.client().list(filesystem.strip_scheme(f"{out}/tensorboard/train"))
    assert any(n.startswith("events.out.tfevents") for n in logs), logs


@pytest.mark.tf215_only
def test_an_estimator_reads_its_csv_from_hdfs(hdfs_data, runs):
    out = f"{hdfs_data}/estimator-{unique('run')}"

    def experiment_fn():
        import tensorflow as tf

        def input_fn():
            ds = tf.data.experimental.CsvDataset(
                f"{hdfs_data}/train.csv", [tf.float32] * (N_FEATURES + 1)
            )
            return ds.map(lambda *c: ({"x": tf.stack(c[:-1])}, c[-1])).repeat().batch(32)

        estimator = tf.estimator.LinearClassifier(
            [tf.feature_column.numeric_column("x", shape=(N_FEATURES,))],
            config=tf.estimator.RunConfig(model_dir=out, save_checkpoints_steps=20),
        )
        return Experiment(
            estimator,
            tf.estimator.TrainSpec(input_fn, max_steps=40),
            tf.estimator.EvalSpec(input_fn, steps=5, start_delay_secs=0, throttle_secs=1),
        )

    run = submit(experiment_fn, {"chief": SMALL}, name=unique("tfyarn-hdfs-est"))
    runs.append(run)
    assert run.wait(timeout=RUN_TIMEOUT_S).final_status == "SUCCEEDED"
    assert "checkpoint" in filesystem.client().list(filesystem.strip_scheme(out))


@pytest.mark.tf215_only
def test_model_to_estimator_writes_its_first_checkpoint_into_an_hdfs_model_dir(hdfs_data):
    """What tf-yarn's keras example does in the notebook, before anything is submitted."""
    import tensorflow as tf

    tf_plugin.register()
    model_dir = f"{hdfs_data}/m2e-{unique('dir')}"
    model = tf.keras.Sequential([tf.keras.Input(shape=(N_FEATURES,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    estimator = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=model_dir)
    assert estimator.model_dir == model_dir
    names = set(filesystem.client().list(filesystem.strip_scheme(f"{model_dir}/keras")))
    assert any(n.startswith("keras_model.ckpt") for n in names), names


def test_files_on_hdfs_are_localised_into_each_containers_folder(hdfs_data, runs, app_names):
    """``files={"train.csv": "hdfs://..."}``: YARN copies it beside the task, which reads it
    as a local file; a source that is not on HDFS is refused before anything is submitted."""
    from tfyarn_jupyter import SpecError, distributed

    def count_rows() -> None:
        import tfyarn_jupyter

        with open("train.csv") as fh:
            rows = sum(1 for _ in fh)
        tfyarn_jupyter.report(step=rows, loss=0.0)
        assert rows == N_ROWS, rows

    files = {"train.csv": f"{hdfs_data}/train.csv"}
    run = distributed.submit(count_rows, {"chief": SMALL}, files=files,
                             name=unique("tfyarn-hdfs-files"))  # fmt: skip
    runs.append(run)
    result = run.wait(timeout=RUN_TIMEOUT_S)
    assert result.final_status == "SUCCEEDED"
    name = unique("tfyarn-hdfs-files-missing")
    with pytest.raises(SpecError, match="does not exist"):
        distributed.submit(count_rows, {"chief": SMALL}, name=name,
                           files={"x.csv": f"{hdfs_data}/no-such.csv"})  # fmt: skip
    assert name not in app_names()
