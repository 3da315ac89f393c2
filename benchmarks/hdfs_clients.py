"""HDFS client candidates side by side: today's WebHDFS (``hdfs``) and ``hdfs-native``.

What a launch costs on HDFS: the warm existence check of the environment's
archive and the upload of a new one. Both clients run interleaved against the
same NameNode, on the same data.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

from tfyarn_jupyter import filesystem

from .core import Bench

CHUNK = 8 << 20


def _chunks(total: int) -> Iterator[bytes]:
    block = os.urandom(CHUNK)
    for _ in range(total // CHUNK):
        yield block


def _webhdfs(path: str, size: int) -> tuple[Callable[[], object], Callable[[], object]]:
    client = filesystem.client()
    remote = filesystem.strip_scheme(path)
    return (lambda: client.status(remote, strict=False)), (
        lambda: filesystem.upload_stream(_chunks(size), remote)
    )


def _native(path: str, size: int) -> tuple[Callable[[], object], Callable[[], object]]:
    import hdfs_native

    client = hdfs_native.Client(filesystem.default_fs())
    remote = filesystem.strip_scheme(path)

    def check() -> object:
        try:
            return client.get_file_info(remote)
        except FileNotFoundError:
            return None

    def upload() -> None:
        with client.create(remote, hdfs_native.WriteOptions(overwrite=True)) as writer:
            for chunk in _chunks(size):
                writer.write(chunk)

    return check, upload


def hdfs_clients(bench: Bench) -> None:
    size = (64 if bench.cfg.smoke else 512) << 20
    checks = 20 if bench.cfg.smoke else 200
    base = f"{filesystem.home()}/.tfyarn/bench/hdfs-{uuid.uuid4().hex[:8]}"
    results: dict[str, dict[str, list[float]]] = {}
    for rep in range(bench.cfg.reps):
        for name, make in (("WebHDFS (hdfs)", _webhdfs), ("hdfs-native", _native)):
            path = f"{base}-{rep}-{name[:3]}.bin"
            check, upload = make(path, size)
            check()  # connect, warm
            t0 = time.perf_counter()
            for _ in range(checks):
                check()
            ms = (time.perf_counter() - t0) / checks * 1000
            t0 = time.perf_counter()
            upload()
            mib_s = size / (1 << 20) / (time.perf_counter() - t0)
            bench.hdfs_delete(path)
            got = results.setdefault(name, {"check": [], "upload": []})
            got["check"].append(ms)
            got["upload"].append(mib_s)
            bench.log(f"{name} rep {rep + 1}: check {ms:.2f} ms, upload {mib_s:.0f} MiB/s")
    sec = "HDFS clients (issue 12)"
    for name, got in results.items():
        bench.row(sec, f"{name}: warm existence check", "ms", got["check"], f"mean of {checks}")
        bench.row(sec, f"{name}: upload", "MiB/s", got["upload"], f"{size >> 20} MiB, streamed")
