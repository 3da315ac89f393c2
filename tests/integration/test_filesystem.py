"""HDFS access through WebHDFS (tfyarn_jupyter.filesystem) against the sandbox's NameNode."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tfyarn_jupyter import filesystem


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
