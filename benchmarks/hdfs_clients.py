"""HDFS client candidates side by side (issue 12): what a launch costs on HDFS.

The warm existence check of the environment's archive and the upload of a new one,
for each candidate, interleaved per repetition on the same data:

- on the default sandbox (simple authentication, one NameNode): WebHDFS through the
  ``hdfs`` package (the client before issue 12) and hdfs-native (today's
  :mod:`tfyarn_jupyter.hadoop.filesystem`);
- on the secure sandbox (Kerberos, two NameNodes, viewfs), as ``alice`` with her
  ticket, when ``TFYARN_SECURE_SANDBOX_DIR`` names a running one: WebHDFS with SPNEGO
  (``requests-gssapi``, the active NameNode found by trying each) and hdfs-native.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from tfyarn_jupyter.hadoop import filesystem

from .core import Bench

CHUNK = 8 << 20
SECTION = "HDFS clients (issue 12)"
#: A candidate: (existence check, upload of ``size`` bytes) on one path.
Ops = tuple[Callable[[], object], Callable[[], object]]


def _chunks(total: int) -> Iterator[bytes]:
    block = os.urandom(CHUNK)
    for _ in range(total // CHUNK):
        yield block


def _webhdfs_ops(client, path: str, size: int) -> Ops:
    """The ``hdfs`` package's client: a status, and a streamed write + rename (the
    former :func:`filesystem.upload_stream`)."""
    remote = filesystem.strip_scheme(path)

    def upload() -> None:
        client.makedirs(os.path.dirname(remote), permission="700")
        client.write(f"{remote}.part", data=_chunks(size), overwrite=True, permission="600")
        client.delete(remote)
        client.rename(f"{remote}.part", remote)

    return (lambda: client.status(remote, strict=False)), upload


def _native_ops(path: str, size: int) -> Ops:
    return (lambda: filesystem.exists(path)), (
        lambda: filesystem.upload_stream(_chunks(size), path)
    )


def webhdfs_simple(path: str, size: int) -> Ops:
    from hdfs import InsecureClient

    return _webhdfs_ops(InsecureClient(filesystem.client().url, user=filesystem.hadoop_user()),
                        path, size)  # fmt: skip


def webhdfs_spnego(path: str, size: int) -> Ops:
    """WebHDFS with SPNEGO: the hadoop.auth cookie keeps warm checks from renegotiating."""
    import requests
    from hdfs import Client
    from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

    session = requests.Session()
    session.auth = HTTPSPNEGOAuth(mutual_authentication=OPTIONAL)
    fs, _ = filesystem.conf().resolve(filesystem.home())
    for url in filesystem.conf().web_urls(fs.removeprefix("hdfs://")):
        client = Client(url, session=session)
        with contextlib.suppress(Exception):  # a standby NameNode answers StandbyException
            client.status("/")
            return _webhdfs_ops(client, path, size)
    raise RuntimeError(f"no active NameNode answered WebHDFS for {fs}")


@contextlib.contextmanager
def _as_secure_alice() -> Iterator[bool]:
    """This process as ``alice`` on the secure sandbox, if one is running (else False)."""
    from tfyarn_sandbox.sandbox import Sandbox

    root = os.environ.get("TFYARN_SECURE_SANDBOX_DIR")
    box = Sandbox(Path(root)) if root else None
    if box is None or not box.status().get("ready"):
        yield False
        return
    saved, env = dict(os.environ), {**os.environ, **box.env("alice")}
    for name in box.unset_vars("alice"):
        env.pop(name, None)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield True
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _measure(
    make: Callable[[str, int], Ops], path: str, size: int, checks: int
) -> tuple[float, float]:
    check, upload = make(path, size)
    check()  # connect, authenticate, warm
    t0 = time.perf_counter()
    for _ in range(checks):
        check()
    ms = (time.perf_counter() - t0) / checks * 1000
    t0 = time.perf_counter()
    upload()
    mib_s = size / (1 << 20) / (time.perf_counter() - t0)
    with contextlib.suppress(Exception):
        filesystem.delete(path)
    return ms, mib_s


CANDIDATES: list[tuple[str, bool, Callable[[str, int], Ops]]] = [
    ("default sandbox: WebHDFS (hdfs, before issue 12)", False, webhdfs_simple),
    ("default sandbox: hdfs-native (today)", False, _native_ops),
    ("secure sandbox: WebHDFS + SPNEGO (requests-gssapi)", True, webhdfs_spnego),
    ("secure sandbox: hdfs-native (Kerberos, HA, viewfs)", True, _native_ops),
]


def hdfs_clients(bench: Bench) -> None:
    size = (64 if bench.cfg.smoke else 512) << 20
    checks = 20 if bench.cfg.smoke else 200
    results: dict[str, dict[str, list[float]]] = {}
    for rep in range(bench.cfg.reps):
        for name, secure, make in CANDIDATES:
            with contextlib.ExitStack() as stack:
                if secure and not stack.enter_context(_as_secure_alice()):
                    if rep == 0:
                        note = f"{name}: no secure sandbox (set TFYARN_SECURE_SANDBOX_DIR)"
                        bench.log(note)
                        bench.notes.append(note)
                    continue
                path = f"{filesystem.home()}/.tfyarn/bench/hdfs-{uuid.uuid4().hex[:8]}.bin"
                try:
                    ms, mib_s = _measure(make, path, size, checks)
                except Exception as exc:
                    bench.failed(f"{name}: {type(exc).__name__}: {exc}")
                    continue
            got = results.setdefault(name, {"check": [], "upload": []})
            got["check"].append(ms)
            got["upload"].append(mib_s)
            bench.log(f"{name} rep {rep + 1}: check {ms:.2f} ms, upload {mib_s:.0f} MiB/s")
    for name, got in results.items():
        bench.row(SECTION, f"{name}: warm existence check", "ms", got["check"], f"mean of {checks}")
        bench.row(SECTION, f"{name}: upload", "MiB/s", got["upload"], f"{size >> 20} MiB, streamed")
