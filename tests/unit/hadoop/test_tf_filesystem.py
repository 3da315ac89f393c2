"""What each filesystem operation of TensorFlow's hdfs:// plugin does
(tfyarn_jupyter.hadoop.tf_filesystem): the bridge over a fake HDFS client, status codes.
The plugin loaded into a real TensorFlow against the sandbox is
tests/integration/test_tf_hdfs.py."""

from __future__ import annotations

import types

import pytest

from tfyarn_jupyter.hadoop import tf_filesystem as tfs


class FakeReader:
    def __init__(self, data: bytes, calls: list) -> None:
        self.data, self.calls = data, calls

    def __len__(self) -> int:
        return len(self.data)

    def read_range(self, offset: int, n: int) -> bytes:
        self.calls.append(("range", offset, n))
        return self.data[offset : offset + n]

    def read_range_stream(self, offset: int, n: int):
        self.calls.append(("stream", offset, n))
        for i in range(offset, offset + n, 3):  # small chunks: reads span several
            yield self.data[i : min(i + 3, offset + n)]


class FakeWriter:
    def __init__(self, files: dict, path: str, start: bytes = b"") -> None:
        self.files, self.path, self.buf, self.synced = files, path, bytearray(start), 0

    def write(self, data: bytes) -> int:
        self.buf += data
        return len(data)

    def hsync(self) -> None:
        self.synced += 1

    def close(self) -> None:
        self.files[self.path] = bytes(self.buf)


class FakeClient:
    """An HDFS of files (path -> bytes) and folders (a set of paths)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.dirs = {"/"}
        self.calls: list = []

    def get_file_info(self, path: str):
        if path in self.dirs:
            return types.SimpleNamespace(isdir=True, length=0, modification_time=5, path=path)
        if path in self.files:
            return types.SimpleNamespace(
                isdir=False, length=len(self.files[path]), modification_time=7, path=path
            )
        raise FileNotFoundError(path)

    def read(self, path: str) -> FakeReader:
        return FakeReader(self.files[path], self.calls)

    def create(self, path: str, options=None) -> FakeWriter:
        return FakeWriter(self.files, path)

    def append(self, path: str) -> FakeWriter:
        return FakeWriter(self.files, path, self.files[path])

    def list_status(self, path: str):
        children = [
            p for p in [*self.files, *self.dirs] if p != path and p.rpartition("/")[0] == path
        ]
        return iter(self.get_file_info(p) for p in sorted(children))

    def mkdirs(self, path: str, create_parent: bool = False) -> None:
        self.dirs.add(path)

    def delete(self, path: str, recursive: bool = False) -> bool:
        self.files.pop(path, None)
        self.dirs.discard(path)
        if recursive:
            for p in [p for p in self.files if p.startswith(path + "/")]:
                del self.files[p]
        return True

    def rename(self, src: str, dst: str, overwrite: bool = False) -> None:
        if dst in self.files and not overwrite:
            raise FileExistsError(dst)
        self.files[dst] = self.files.pop(src)


@pytest.fixture
def hdfs() -> FakeClient:
    return FakeClient()


@pytest.fixture
def bridge(hdfs: FakeClient) -> tfs.Bridge:
    return tfs.Bridge(lambda uri: (hdfs, uri.removeprefix("hdfs://nn")))


def test_a_file_written_through_the_bridge_reads_back_and_tells_its_length(bridge, hdfs):
    h = bridge.open_write("hdfs://nn/d.csv", append=False)
    bridge.write(h, b"1,2\n")
    bridge.write(h, b"3,4\n")
    assert bridge.tell(h) == 8
    bridge.flush(h, sync=True)
    bridge.close(h)
    bridge.release(h)
    assert hdfs.files["/d.csv"] == b"1,2\n3,4\n" and h not in bridge.files
    a = bridge.open_write("hdfs://nn/d.csv", append=True)
    assert bridge.tell(a) == 8
    bridge.write(a, b"5,6\n")
    bridge.close(a)
    r = bridge.open_read("hdfs://nn/d.csv")
    assert bridge.read(r, 0, 100) == b"1,2\n3,4\n5,6\n"


def test_sequential_reads_come_from_one_stream_and_a_jump_is_a_ranged_read(bridge, hdfs):
    hdfs.files["/big"] = bytes(range(100))
    r = bridge.open_read("hdfs://nn/big")
    assert bridge.read(r, 0, 10) == bytes(range(10))
    assert bridge.read(r, 10, 10) == bytes(range(10, 20))  # where the last one ended
    assert bridge.read(r, 20, 7) == bytes(range(20, 27))
    assert bridge.read(r, 50, 5) == bytes(range(50, 55))  # a jump
    assert bridge.read(r, 95, 10) == bytes(range(95, 100))  # short at the end
    assert bridge.read(r, 100, 10) == b""
    assert hdfs.calls == [("range", 0, 10), ("stream", 10, 90), ("range", 50, 5),
                          ("range", 95, 5)]  # fmt: skip


def test_opening_a_folder_or_a_missing_file_for_reading_fails_with_the_right_error(bridge, hdfs):
    hdfs.dirs.add("/d")
    with pytest.raises(tfs.Refused, match="is a directory") as refused:
        bridge.open_read("hdfs://nn/d")
    assert refused.value.code == tfs.FAILED_PRECONDITION
    with pytest.raises(FileNotFoundError):
        bridge.open_read("hdfs://nn/none")


def test_stat_lists_and_folders(bridge, hdfs):
    hdfs.dirs.add("/d")
    hdfs.files["/d/a"] = b"abc"
    hdfs.dirs.add("/d/sub")
    assert bridge.stat("hdfs://nn/d/a") == (3, 7_000_000, False)
    assert bridge.stat("hdfs://nn/d")[2] is True
    assert bridge.list("hdfs://nn/d") == ["a", "sub"]
    with pytest.raises(tfs.Refused, match="not a directory"):
        bridge.list("hdfs://nn/d/a")
    with pytest.raises(FileNotFoundError):
        bridge.exists("hdfs://nn/nothing")
    bridge.exists("hdfs://nn/d/a")
    with pytest.raises(tfs.Refused, match="already exists") as exists:
        bridge.mkdir("hdfs://nn/d", recursive=False)
    assert exists.value.code == tfs.ALREADY_EXISTS
    bridge.mkdir("hdfs://nn/d", recursive=True)  # already there: fine, as makedirs


def test_delete_kinds_refuse_what_tensorflow_refuses(bridge, hdfs):
    hdfs.dirs.update({"/d", "/e"})
    hdfs.files["/d/a"] = b"x"
    with pytest.raises(tfs.Refused, match="is a directory"):
        bridge.remove("hdfs://nn/d", 0)
    with pytest.raises(tfs.Refused, match="not a directory"):
        bridge.remove("hdfs://nn/d/a", 1)
    with pytest.raises(tfs.Refused, match="not empty"):
        bridge.remove("hdfs://nn/d", 1)
    bridge.remove("hdfs://nn/e", 1)
    bridge.remove("hdfs://nn/d", 2)
    assert hdfs.files == {} and "/d" not in hdfs.dirs and "/e" not in hdfs.dirs
    with pytest.raises(FileNotFoundError):
        bridge.remove("hdfs://nn/d", 2)


def test_rename_replaces_the_target_as_posix_does(bridge, hdfs):
    hdfs.files.update({"/a": b"new", "/b": b"old"})
    bridge.rename("hdfs://nn/a", "hdfs://nn/b")
    assert hdfs.files == {"/b": b"new"}


def test_rename_across_filesystems_is_refused():
    one, two = FakeClient(), FakeClient()
    b = tfs.Bridge(lambda uri: (one if "nn1" in uri else two, "/x"))
    with pytest.raises(tfs.Refused, match="across filesystems"):
        b.rename("hdfs://nn1/x", "hdfs://nn2/x")


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (FileNotFoundError("x"), tfs.NOT_FOUND),
        (FileExistsError("x"), tfs.ALREADY_EXISTS),
        (PermissionError("Permission denied: user=mallory"), tfs.PERMISSION_DENIED),
        (IsADirectoryError("x"), tfs.FAILED_PRECONDITION),
        (NotADirectoryError("x"), tfs.FAILED_PRECONDITION),
        (RuntimeError("RPC failed"), tfs.UNKNOWN),
        (tfs.Refused(tfs.FAILED_PRECONDITION, "is a directory"), tfs.FAILED_PRECONDITION),
    ],
)
def test_exceptions_become_tensorflows_status_codes(exc, code):
    assert tfs.status_code(exc) == code


def test_hdfs_refusals_reach_tensorflow_as_permission_denied_with_hdfs_reason(hdfs):
    """hdfs-native raises HDFS's AccessControlException as a RuntimeError; the bridge's
    default error handling makes it a PermissionError that quotes HDFS."""

    def refuse(path):
        raise RuntimeError(
            'RPCError("org.apache.hadoop.security.AccessControlException", "Permission denied: '
            'user=mallory, access=READ, inode=\\"/user/alice/x\\":alice:alice:-rw-------")'
        )

    hdfs.get_file_info = refuse
    bridge = tfs.Bridge(lambda uri: (hdfs, "/user/alice/x"))
    with pytest.raises(PermissionError, match="Permission denied: user=mallory") as denied:
        bridge.open_read("hdfs://nn/user/alice/x")
    assert tfs.status_code(denied.value) == tfs.PERMISSION_DENIED
