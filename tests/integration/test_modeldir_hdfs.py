"""hdfs:// model dirs against the sandbox's real HDFS, and with real TensorFlow training.

Push, pull and wait_for_new through hdfs_native; an Estimator (TF 2.15) trained
in ``ModelDir.local`` with the saving listener, pulled into a fresh ModelDir and
restored from there (the Keras roles' checkpoints are in test_current_tf.py). Prints the
seconds from a checkpoint saved to it being on HDFS, per checkpoint size.
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tfyarn_jupyter.container import checkpoints as modeldir
from tfyarn_jupyter.container.checkpoints import TMP_MARK, Index, ModelDir
from tfyarn_jupyter.hadoop import filesystem

pytestmark = [pytest.mark.sandbox, pytest.mark.current_tf]


@pytest.fixture
def hdfs(sandbox):
    import hdfs_native

    return hdfs_native.Client()


@pytest.fixture
def remote(hdfs) -> Iterator[str]:
    """A fresh ``hdfs://`` URI under HDFS's /tmp, deleted afterwards."""
    path = f"/tmp/tfyarn-modeldir-{uuid.uuid4().hex[:8]}"
    yield filesystem.default_fs() + path
    hdfs.delete(path, recursive=True)


def listing(hdfs, uri: str) -> dict[str, int]:
    root = filesystem.strip_scheme(uri)
    return {posixpath.relpath(s.path, root): s.length
            for s in hdfs.list_status(root, recursive=True) if not s.isdir}  # fmt: skip


def read(hdfs, uri: str, name: str) -> bytes:
    with hdfs.read(posixpath.join(filesystem.strip_scheme(uri), name)) as r:
        return r.read()


def save(folder: str, step: int, size: int = 1000) -> str:
    """A checkpoint as TensorFlow's Saver writes it: data, index, then the index file."""
    prefix = os.path.join(folder, f"model.ckpt-{step}")
    Path(prefix + ".data-00000-of-00001").write_bytes(os.urandom(size))
    Path(prefix + ".index").write_bytes(os.urandom(100))
    Path(folder, "checkpoint").write_text(f'model_checkpoint_path: "{prefix}"\n')
    return prefix


class FailingIndex:
    """The real client, failing when the index is created: a push killed before its commit."""

    def __init__(self, client) -> None:
        self.client = client

    def create(self, path: str, *args):
        if posixpath.basename(path).startswith(".checkpoint" + TMP_MARK):
            raise OSError("killed before the commit")
        return self.client.create(path, *args)

    def __getattr__(self, name: str):
        return getattr(self.client, name)


def test_push_pull_and_wait_for_new_round_trip_through_hdfs(hdfs, remote, tmp_path):
    chief = ModelDir(remote, tmp_path / "chief")
    assert chief.remote and chief.pull() is None  # nothing there yet
    save(chief.local, 100)
    Path(chief.local, "events.out.tfevents.1.host").write_bytes(b"events")
    assert chief.push_checkpoint() == os.path.join(chief.local, "model.ckpt-100")
    names = listing(hdfs, remote)
    assert set(names) == {"checkpoint", "events.out.tfevents.1.host",
                          "model.ckpt-100.data-00000-of-00001", "model.ckpt-100.index"}  # fmt: skip
    assert Index.parse(read(hdfs, remote, "checkpoint").decode()).latest == "model.ckpt-100"

    evaluator = ModelDir(remote, tmp_path / "evaluator")
    first = evaluator.wait_for_new(None, 10, poll_s=0.1)
    assert first == os.path.join(evaluator.local, "model.ckpt-100")
    assert (
        Path(first + ".index").read_bytes()
        == Path(chief.local, "model.ckpt-100.index").read_bytes()
    )
    assert evaluator.wait_for_new(first, 0.3, poll_s=0.1) is None

    def later() -> None:
        time.sleep(0.5)
        save(chief.local, 200)
        chief.push_checkpoint()

    thread = threading.Thread(target=later)
    thread.start()
    second = evaluator.wait_for_new(first, 30, poll_s=0.1)
    thread.join()
    assert second == os.path.join(evaluator.local, "model.ckpt-200")

    killed = ModelDir(remote, tmp_path / "killed", client=FailingIndex(hdfs))
    killed.pull()
    save(killed.local, 300)
    with pytest.raises(OSError, match="killed"):
        killed.push_checkpoint()
    fresh = ModelDir(remote, tmp_path / "fresh")
    assert fresh.pull() == os.path.join(fresh.local, "model.ckpt-200")  # the last complete one
    assert not [n for n in listing(hdfs, remote) if TMP_MARK in n]


def test_seconds_from_a_checkpoint_saved_to_it_being_on_hdfs(hdfs, remote, tmp_path, capsys):
    md = ModelDir(remote, tmp_path / "chief")
    figures = []
    for step, mib in enumerate((0.01, 1, 16, 64), start=1):
        save(md.local, step, size=int(mib * 2**20))
        md.push_checkpoint()
        assert md.last_push_s is not None and md.last_push_s > 0
        figures.append((mib, md.last_push_s))
    assert listing(hdfs, remote)["model.ckpt-4.data-00000-of-00001"] == 64 * 2**20
    with capsys.disabled():
        for mib, seconds in figures:
            print(
                f"\ncheckpoint {mib:6.2f} MiB: on HDFS {seconds:.3f} s after it was saved", end=""
            )
        print()


@pytest.mark.tf215_only
def test_an_estimator_trains_into_hdfs_and_a_fresh_model_dir_restores_from_it(
    hdfs, remote, tmp_path, cancer
):
    import tensorflow as tf

    x_train, y_train, x_test, y_test = cancer.load_data()

    def estimator(model_dir: str):
        return tf.estimator.DNNClassifier(
            hidden_units=[8], n_classes=2,
            feature_columns=[tf.feature_column.numeric_column("x", shape=(x_train.shape[1],))],
            optimizer=lambda: tf.keras.optimizers.legacy.Adam(0.01),
            config=tf.estimator.RunConfig(model_dir=model_dir, save_checkpoints_steps=20),
        )  # fmt: skip

    md = ModelDir(remote, tmp_path / "chief")
    est = estimator(md.local)
    est.train(cancer.input_fn(x_train, y_train, train=True), max_steps=60,
              saving_listeners=[modeldir.estimator_listener(md)])  # fmt: skip
    md.push_all()
    assert Index.parse(read(hdfs, remote, "checkpoint").decode()).latest == "model.ckpt-60"
    assert "graph.pbtxt" in listing(hdfs, remote) and md.last_push_s is not None

    fresh = ModelDir(remote, tmp_path / "resumed")
    prefix = fresh.pull()
    resumed = estimator(fresh.local)
    assert resumed.latest_checkpoint() == prefix == os.path.join(fresh.local, "model.ckpt-60")
    assert resumed.get_variable_value("global_step") == 60
    metrics = resumed.evaluate(cancer.input_fn(x_test, y_test, train=False))
    assert metrics["global_step"] == 60 and metrics["accuracy"] > 0.8
