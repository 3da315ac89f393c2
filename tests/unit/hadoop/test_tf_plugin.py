"""Building and loading TensorFlow's hdfs:// plugin (tfyarn_jupyter.hadoop.tf_plugin): the
compiler's command, the cache key, where a shipped build is found, errors as statuses."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from tfyarn_jupyter.hadoop import tf_filesystem as tfs
from tfyarn_jupyter.hadoop import tf_plugin


def test_the_build_links_tensorflows_framework_and_keys_on_its_files(tmp_path):
    tf_dir = tmp_path / "tensorflow"
    header = tf_dir / "include/tensorflow/c/experimental/filesystem/filesystem_interface.h"
    header.parent.mkdir(parents=True)
    header.write_text("// header")
    (tf_dir / "libtensorflow_framework.so.2").write_bytes(b"\x7fELF")
    cmd = tf_plugin.compile_command(tf_dir, tmp_path / "out.so", "g++")
    assert cmd[0] == "g++" and str(tf_plugin.SOURCE) in cmd and f"-I{tf_dir / 'include'}" in cmd
    assert "-l:libtensorflow_framework.so.2" in cmd and "-shared" in cmd
    key = tf_plugin.build_key(tf_dir)
    header.write_text("// another TensorFlow's header")
    assert tf_plugin.build_key(tf_dir) != key


def test_a_shipped_build_in_the_containers_folder_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(tf_plugin.PLUGIN_VAR, raising=False)
    (tmp_path / tf_plugin.TF_HDFS_PLUGIN).write_bytes(b"so")
    assert tf_plugin.find_or_build() == tmp_path / tf_plugin.TF_HDFS_PLUGIN
    named = tmp_path / "elsewhere.so"
    named.write_bytes(b"so")
    monkeypatch.setenv(tf_plugin.PLUGIN_VAR, str(named))
    assert tf_plugin.find_or_build() == named


def test_no_tensorflow_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(tf_plugin.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(tf_plugin.PluginError, match="TensorFlow is not installed"):
        tf_plugin.tensorflow_dir()


def test_the_plugins_source_ships_in_the_package():
    assert (
        Path(tf_plugin.SOURCE).is_file() and "TF_InitPlugin" in Path(tf_plugin.SOURCE).read_text()
    )


class FakeLib:
    """The plugin library's two helpers the callbacks use, recording what they were given."""

    def __init__(self) -> None:
        self.statuses: list[tuple[int, int, bytes]] = []

    def tfyarn_set_status(self, status: ctypes.c_void_p, code: int, message: bytes) -> None:
        self.statuses.append((status.value or 0, code, message))


def test_an_operation_that_raises_sets_tensorflows_status_and_returns_its_error_value():
    lib = FakeLib()

    def open_read(status: int, uri: bytes) -> int:
        raise FileNotFoundError("hdfs://nn/x: no such file or directory on HDFS")

    call = tf_plugin._guarded(lib, open_read, 0)
    assert call(1234, b"hdfs://nn/x") == 0
    assert lib.statuses == [
        (1234, tfs.NOT_FOUND, b"FileNotFoundError: hdfs://nn/x: no such file or directory on HDFS")
    ]


def test_a_short_read_at_the_end_of_a_file_is_out_of_range_with_the_bytes_it_got():
    lib, bridge = FakeLib(), tfs.Bridge(lambda uri: (None, uri), errors=lambda uri: _nothing())
    bridge.read_into = lambda handle, offset, n, buffer: 3  # type: ignore[method-assign]
    read = tf_plugin._operations(bridge, lib)["read"][0]
    assert read(99, 1, 0, 10, 0) == 3
    assert lib.statuses == [(99, tfs.OUT_OF_RANGE, b"read past the end")]


def _nothing():
    import contextlib

    return contextlib.nullcontext()
