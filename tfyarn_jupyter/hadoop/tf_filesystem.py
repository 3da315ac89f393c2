"""``hdfs://`` and ``viewfs://`` for TensorFlow: what each filesystem operation does.

TensorFlow's hdfs:// plugin (``tf_hdfs_plugin.cc``, built and registered by
:mod:`.tf_plugin`) forwards every operation to a :class:`Bridge`, which speaks HDFS's RPC
through hdfs-native (:mod:`.filesystem`: the user's Kerberos ticket or a task's
delegation tokens, HA nameservices, viewfs mount tables) and answers as TensorFlow's
filesystem contract asks (status codes, a folder opened as a file refused...). A read
that continues where the previous one ended comes from one stream from the DataNodes.
docs/data.md says how it works, what it costs and what it does not cover.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import posixpath
import threading
from collections.abc import Callable, Iterator
from typing import Any

# TensorFlow's status codes (tensorflow/c/tf_status.h).
OK, UNKNOWN, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED = 0, 2, 5, 6, 7
FAILED_PRECONDITION, OUT_OF_RANGE, UNIMPLEMENTED = 9, 11, 12


class Refused(Exception):
    """An operation TensorFlow's contract refuses (a folder opened as a file...), with the
    status code the contract names. Not an ``OSError``, so no HDFS error handling rewords it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- the callbacks ----------------------------------------------------------------------
def status_code(exc: BaseException) -> int:
    """TensorFlow's code for an exception of hdfs-native or :mod:`.filesystem`."""
    if isinstance(exc, Refused):
        return exc.code
    if isinstance(exc, FileNotFoundError):
        return NOT_FOUND
    if isinstance(exc, FileExistsError):
        return ALREADY_EXISTS
    if isinstance(exc, PermissionError):
        return PERMISSION_DENIED
    if isinstance(exc, (NotADirectoryError, IsADirectoryError)):
        return FAILED_PRECONDITION
    return UNKNOWN


class StreamingReader:
    """One file open for reading. A read that starts where the previous one ended comes
    from one stream from the DataNodes; any other read is a ranged read."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.size = len(reader)
        self.lock = threading.Lock()
        self._stream: Iterator[bytes] | None = None
        self._pending = memoryview(b"")
        self._end = -1  # where the previous read ended

    def read(self, offset: int, n: int) -> bytes:
        out = bytearray()
        self.read_into(offset, n, lambda at, part: out.extend(part))
        return bytes(out)

    def read_into(self, offset: int, n: int, sink: Callable[[int, Any], None]) -> int:
        """Hand the bytes ``[offset, offset + n)`` (fewer at the end of the file) to
        ``sink(position in the read, bytes-like)`` as they arrive; how many there were."""
        with self.lock:
            if offset >= self.size or n <= 0:
                return 0
            n = min(n, self.size - offset)
            if offset != self._end:
                self._stream, self._pending = None, memoryview(b"")
                self._end = offset + n
                sink(0, self.reader.read_range(offset, n))
                return n
            if self._stream is None:
                self._stream = iter(self.reader.read_range_stream(offset, self.size - offset))
            done = 0
            while done < n:
                if not self._pending:
                    self._pending = memoryview(next(self._stream))
                take = self._pending[: n - done]
                sink(done, take)
                self._pending = self._pending[len(take) :]
                done += len(take)
            self._end = offset + n
            return n


class Bridge:
    """The Python side of the plugin: open files by handle, and one method per operation.

    ``locate(uri) -> (client, path)`` finds the HDFS client for a URI (by default
    :func:`.filesystem.locate`: nameservices, viewfs, the caller's credentials);
    ``errors(uri)`` turns hdfs-native's exceptions into ones that say what HDFS said
    (by default :func:`.filesystem.errors`: a refusal is a ``PermissionError``).
    """

    def __init__(
        self,
        locate: Callable[[str], tuple[Any, str]] | None = None,
        errors: Callable[[str], contextlib.AbstractContextManager[Any]] | None = None,
    ) -> None:
        if locate is None or errors is None:
            from tfyarn_jupyter.hadoop import filesystem

            locate = locate or filesystem.locate
            errors = errors or filesystem.errors
        self.locate, self.errors = locate, errors
        self.files: dict[int, Any] = {}
        self._ids = itertools.count(1)

    def _open(self, obj: Any) -> int:
        handle = next(self._ids)
        self.files[handle] = obj
        return handle

    def open_read(self, uri: str) -> int:
        with self.errors(uri):
            client, path = self.locate(uri)
            if client.get_file_info(path).isdir:
                raise Refused(FAILED_PRECONDITION, f"{uri} is a directory")
            return self._open(StreamingReader(client.read(path)))

    def read(self, handle: int, offset: int, n: int) -> bytes:
        return self.files[handle].read(offset, n)

    def read_into(self, handle: int, offset: int, n: int, buffer: int) -> int:
        """Read into the C buffer at address ``buffer``: each part copied once, as it comes."""

        if n <= 0:
            return 0
        dst = memoryview((ctypes.c_char * n).from_address(buffer)).cast("B")

        def sink(at: int, part: Any) -> None:
            dst[at : at + len(part)] = part

        return int(self.files[handle].read_into(offset, n, sink))

    def open_write(self, uri: str, append: bool) -> int:
        with self.errors(uri):
            import hdfs_native

        client, path = self.locate(uri)
        if append and self._exists(client, path):
            writer, start = client.append(path), client.get_file_info(path).length
        else:
            writer, start = client.create(path, hdfs_native.WriteOptions(overwrite=True)), 0
        return self._open([writer, start])

    def write(self, handle: int, data: bytes) -> None:
        entry = self.files[handle]
        entry[0].write(data)
        entry[1] += len(data)

    def tell(self, handle: int) -> int:
        return int(self.files[handle][1])

    def flush(self, handle: int, sync: bool) -> None:
        if sync:
            self.files[handle][0].hsync()

    def close(self, handle: int) -> None:
        entry = self.files.get(handle)
        if entry is not None and entry[0] is not None:
            writer, entry[0] = entry[0], None
            writer.close()

    def release(self, handle: int) -> None:
        self.files.pop(handle, None)

    @staticmethod
    def _exists(client: Any, path: str) -> bool:
        try:
            client.get_file_info(path)
            return True
        except FileNotFoundError:
            return False

    def exists(self, uri: str) -> None:
        with self.errors(uri):
            client, path = self.locate(uri)
            client.get_file_info(path)  # FileNotFoundError: NOT_FOUND

    def stat(self, uri: str) -> tuple[int, int, bool]:
        with self.errors(uri):
            client, path = self.locate(uri)
            st = client.get_file_info(path)
            return int(st.length), int(st.modification_time) * 1_000_000, bool(st.isdir)

    def list(self, uri: str) -> list[str]:
        with self.errors(uri):
            client, path = self.locate(uri)
            if not client.get_file_info(path).isdir:
                raise Refused(FAILED_PRECONDITION, f"{uri} is not a directory")
            return [posixpath.basename(st.path.rstrip("/")) for st in client.list_status(path)]

    def mkdir(self, uri: str, recursive: bool) -> None:
        with self.errors(uri):
            client, path = self.locate(uri)
            if not recursive and self._exists(client, path):
                raise Refused(ALREADY_EXISTS, f"{uri} already exists")
            client.mkdirs(path, create_parent=recursive)

    def remove(self, uri: str, kind: int) -> None:
        """``kind``: 0 a file, 1 an empty folder, 2 a folder and everything in it."""
        with self.errors(uri):
            client, path = self.locate(uri)
            isdir = client.get_file_info(path).isdir  # FileNotFoundError: NOT_FOUND
            if kind == 0 and isdir:
                raise Refused(FAILED_PRECONDITION, f"{uri} is a directory")
            if kind == 1 and not isdir:
                raise Refused(FAILED_PRECONDITION, f"{uri} is not a directory")
            if kind == 1 and next(iter(client.list_status(path)), None) is not None:
                raise Refused(FAILED_PRECONDITION, f"{uri} is not empty")
            client.delete(path, recursive=kind == 2)

    def rename(self, src: str, dst: str) -> None:
        with self.errors(src):
            client, src_path = self.locate(src)
            dst_client, dst_path = self.locate(dst)
            if dst_client is not client:
                raise Refused(UNIMPLEMENTED, f"cannot rename across filesystems: {src} -> {dst}")
            # TensorFlow's rename replaces a file at the target, as POSIX's does.
            client.rename(src_path, dst_path, overwrite=True)
