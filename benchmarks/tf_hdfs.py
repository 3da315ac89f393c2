"""TensorFlow reading and writing ``hdfs://`` through the plugin, against hdfs-native directly.

Three figures, each as a ratio to the raw client measured in the same repetition
(interleaved, so a busy machine slows both):

- one large file read sequentially: ``tf.data.FixedLengthRecordDataset`` (1 MiB records, no
  parsing: the filesystem's cost alone) against hdfs-native's ``read_range_stream``;
- a set of TFRecord files through ``list_files`` + ``interleave`` (4 at a time, parallel)
  against reading the same files one after the other with hdfs-native;
- a checkpoint written with ``tf.train.Checkpoint.save`` against the same bytes written
  with hdfs-native.

Sizes: 1 GiB, 16 x 64 MiB and 256 MiB (``--smoke``: 64 MiB, 4 x 16 MiB, 32 MiB).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tfyarn_jupyter.hadoop import filesystem, tf_plugin

from .core import Bench

SECTION = "hdfs:// through TensorFlow (plugin) vs hdfs-native"
MIB = 1 << 20


def _sizes(smoke: bool) -> tuple[int, int, int, int]:
    """(large file, TFRecord files, bytes per TFRecord file, checkpoint), in bytes."""
    return (64 * MIB, 4, 16 * MIB, 32 * MIB) if smoke else (1024 * MIB, 16, 64 * MIB, 256 * MIB)


def _write_blob(path: str, size: int) -> None:
    chunk = os.urandom(4 * MIB)
    parts = (chunk[: min(len(chunk), size - i)] for i in range(0, size, len(chunk)))
    filesystem.upload_stream(parts, path, "644")


def _write_tfrecords(folder: str, files: int, size: int) -> list[str]:
    import tensorflow as tf

    record = os.urandom(64 * 1024)
    paths = []
    for i in range(files):
        local = f"/tmp/tfyarn-bench-{uuid.uuid4().hex[:8]}.tfrecord"
        with tf.io.TFRecordWriter(local) as w:
            for _ in range(size // len(record)):
                w.write(record)
        paths.append(f"{folder}/part-{i:03d}.tfrecord")
        filesystem.upload(local, paths[-1], "644")
        os.unlink(local)
    return paths


def _timed_mib_s(size: int, fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return size / MIB / (time.perf_counter() - t0)


def _raw_read(paths: list[str]) -> int:
    got = 0
    for path in paths:
        client, p = filesystem.locate(path)
        reader = client.read(p)
        for chunk in reader.read_range_stream(0, len(reader)):
            got += len(chunk)
    return got


def _tf_large(uri: str) -> int:
    import tensorflow as tf

    ds = tf.data.FixedLengthRecordDataset(uri, record_bytes=MIB, buffer_size=4 * MIB)
    return sum(int(tf.strings.length(r)) for r in ds)


def _tf_records(pattern: str) -> int:
    import tensorflow as tf

    files = tf.data.Dataset.list_files(pattern, shuffle=False)
    ds = files.interleave(tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=4)
    return sum(1 for _ in ds.prefetch(8))


def _tf_checkpoint(uri: str, size: int) -> None:
    import numpy as np
    import tensorflow as tf

    v = tf.Variable(np.zeros(size // 4, dtype=np.float32))
    tf.train.Checkpoint(v=v).write(uri)


def _one_rep(rep: int, base: str, local: Path, sizes: tuple[int, int, int, int]) -> dict:
    """One repetition's figures: each read and write through TensorFlow on ``hdfs://``, with
    hdfs-native on the same files, and TensorFlow on a local copy (its own ceiling here)."""
    large, n_files, file_size, ckpt = sizes
    blob, pattern = f"{base}/large.bin", f"{base}/records/*"
    records = [f"{base}/records/part-{i:03d}.tfrecord" for i in range(n_files)]
    raw = _timed_mib_s(large, lambda: _raw_read([blob]))
    via_tf = _timed_mib_s(large, lambda: _tf_large(blob))
    on_disk = _timed_mib_s(large, lambda: _tf_large(str(local / "large.bin")))
    raw_set = _timed_mib_s(n_files * file_size, lambda: _raw_read(records))
    tf_set = _timed_mib_s(n_files * file_size, lambda: _tf_records(pattern))
    disk_set = _timed_mib_s(n_files * file_size, lambda: _tf_records(f"{local}/records/*"))
    data = os.urandom(ckpt)
    raw_w = _timed_mib_s(ckpt, lambda: filesystem.write_bytes(f"{base}/raw-{rep}.bin", data))
    tf_w = _timed_mib_s(ckpt, lambda: _tf_checkpoint(f"{base}/ckpt-{rep}/c", ckpt))
    disk_w = _timed_mib_s(ckpt, lambda: _tf_checkpoint(f"{local}/ckpt-{rep}/c", ckpt))
    return {
        "large file: hdfs-native": raw,
        "large file: tf.data": via_tf,
        "large file: tf.data on local disk": on_disk,
        "large file: tf.data / hdfs-native": via_tf / raw,
        "TFRecords: hdfs-native, one after another": raw_set,
        "TFRecords: tf.data interleave x4": tf_set,
        "TFRecords: tf.data interleave x4 on local disk": disk_set,
        "TFRecords: tf.data / hdfs-native": tf_set / raw_set,
        "TFRecords: tf.data on HDFS / on local disk": tf_set / disk_set,
        "checkpoint write: hdfs-native": raw_w,
        "checkpoint write: tf.train.Checkpoint": tf_w,
        "checkpoint write: tf.train.Checkpoint on local disk": disk_w,
        "checkpoint write: TensorFlow / hdfs-native": tf_w / raw_w,
        "checkpoint write: TensorFlow on HDFS / on local disk": tf_w / disk_w,
    }


def _local_copies(base: str, local: Path, n_files: int) -> None:
    (local / "records").mkdir(parents=True, exist_ok=True)
    (local / "large.bin").write_bytes(
        filesystem.read_bytes(filesystem.strip_scheme(f"{base}/large.bin"))
    )
    for i in range(n_files):
        name = f"records/part-{i:03d}.tfrecord"
        (local / name).write_bytes(filesystem.read_bytes(filesystem.strip_scheme(f"{base}/{name}")))


def tf_hdfs(bench: Bench) -> None:
    """The figures, one value per repetition; the ratios are what the docs report."""
    import tensorflow as tf

    tf_plugin.register()
    sizes = _sizes(bench.cfg.smoke)
    large, n_files, file_size, ckpt = sizes
    base = filesystem.qualify(f"{filesystem.home()}/.tfyarn/bench/tf-hdfs-{uuid.uuid4().hex[:8]}")
    bench.hdfs_leftovers.append(base)
    _write_blob(f"{base}/large.bin", large)
    _write_tfrecords(f"{base}/records", n_files, file_size)
    local = bench.tmp / "tf_hdfs"
    _local_copies(base, local, n_files)
    rows: dict[str, list[float]] = {}
    for rep in range(bench.cfg.reps):
        measured = _one_rep(rep, base, local, sizes)
        for name, value in measured.items():
            rows.setdefault(name, []).append(value)
        bench.log(f"tf_hdfs rep {rep + 1}: " + ", ".join(
            f"{k.split(':')[0]} {v:.2f}" for k, v in measured.items() if " / " in k))  # fmt: skip
    labels = {
        "large file": f"{large // MIB} MiB, 1 MiB records",
        "TFRecords": f"{n_files} x {file_size // MIB} MiB, 64 KiB records",
        "checkpoint write": f"one {ckpt // MIB} MiB variable",
    }
    for name, values in rows.items():
        unit = "ratio" if " / " in name else "MiB/s"
        bench.row(SECTION, name, unit, values, labels[name.split(":")[0]])
    bench.details["tf_hdfs"] = {"tensorflow": tf.__version__, **labels}
