"""HDFS through hdfs-native (tfyarn_jupyter.hadoop.filesystem) against the sandbox's NameNode.

The secure sandbox (Kerberos, HA, viewfs) has its own: test_secure_filesystem.py.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tfyarn_jupyter.hadoop import filesystem


@pytest.fixture
def hdfs_dir(sandbox) -> Iterator[str]:
    """A fresh folder under the user's HDFS home, deleted afterwards."""
    path = f"{filesystem.home()}/.tfyarn/test-fs-{uuid.uuid4().hex[:8]}"
    try:
        yield path
    finally:
        filesystem.client().delete(path, recursive=True)


def test_streamed_upload_round_trips_in_chunks_and_is_private(hdfs_dir):
    chunks = [os.urandom(1 << 20) for _ in range(5)] + [b"tail"]
    uri = filesystem.upload_stream(iter(chunks), f"{hdfs_dir}/data.bin")
    assert uri == filesystem.qualify(f"{hdfs_dir}/data.bin")
    assert filesystem.read_bytes(uri) == b"".join(chunks)
    assert filesystem.permission(uri) == "600"
    assert filesystem.client().list(hdfs_dir) == ["data.bin"]  # no .part- file left


def test_a_failing_producer_leaves_neither_the_file_nor_a_partial_one(hdfs_dir):
    def chunks() -> Iterator[bytes]:
        yield b"x" * (1 << 20)
        raise RuntimeError("producer broke")

    with pytest.raises(Exception, match="producer broke"):
        filesystem.upload_stream(chunks(), f"{hdfs_dir}/data.bin")
    assert not filesystem.exists(f"{hdfs_dir}/data.bin")
    assert filesystem.client().list(hdfs_dir) == []


def test_upload_replaces_an_existing_file_atomically(hdfs_dir, tmp_path):
    local = tmp_path / "f.txt"
    local.write_bytes(b"first")
    filesystem.upload(local, f"{hdfs_dir}/f.txt")
    local.write_bytes(b"second version")
    filesystem.upload(local, f"{hdfs_dir}/f.txt")
    assert filesystem.read_bytes(f"{hdfs_dir}/f.txt") == b"second version"
    assert filesystem.client().list(hdfs_dir) == ["f.txt"]


def test_missing_paths_and_strangers_get_hdfs_errors_by_kind(hdfs_dir, monkeypatch):
    assert filesystem.exists(hdfs_dir) is False
    with pytest.raises(filesystem.HdfsNotFound, match=f"{hdfs_dir}/nope"):
        filesystem.read_bytes(f"{hdfs_dir}/nope")
    assert filesystem.status(f"{hdfs_dir}/nope", strict=False) is None
    uri = filesystem.write_bytes(f"{hdfs_dir}/secret", b"mine")
    assert filesystem.exists(uri) and filesystem.status(hdfs_dir)["permission"] == "700"
    # Another user (simple authentication: HADOOP_USER_NAME) is refused by the NameNode.
    monkeypatch.setenv("HADOOP_USER_NAME", "tfyarn-stranger")
    with pytest.raises(filesystem.HdfsPermissionDenied, match="user=tfyarn-stranger"):
        filesystem.read_bytes(uri)
    monkeypatch.undo()
    assert filesystem.read_bytes(uri) == b"mine"


def test_walk_lists_folders_top_down(hdfs_dir):
    for name in ("a/x", "a/b/y", "z"):
        filesystem.write_bytes(f"{hdfs_dir}/{name}", name.encode())
    assert list(filesystem.client().walk(hdfs_dir)) == [
        (hdfs_dir, ["a"], ["z"]),
        (f"{hdfs_dir}/a", ["b"], ["x"]),
        (f"{hdfs_dir}/a/b", [], ["y"]),
    ]
