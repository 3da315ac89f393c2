"""HDFS access for the client: the environment cache, payloads and event logs.

Talks WebHDFS (through the ``hdfs`` package) to the NameNode named in
``HADOOP_CONF_DIR``: one HTTP request per check, no JVM to start, so a warm
launch's "is the environment already there?" costs milliseconds.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import posixpath
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path

from hdfs import HdfsError, InsecureClient


class ClusterConfigError(RuntimeError):
    """The Hadoop client configuration is missing or incomplete."""


def hadoop_user() -> str:
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def read_conf(name: str) -> dict[str, str]:
    """Properties of ``$HADOOP_CONF_DIR/<name>`` (e.g. ``hdfs-site.xml``)."""
    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    if not conf_dir:
        raise ClusterConfigError(
            "HADOOP_CONF_DIR is not set: point it at your cluster's Hadoop client "
            'configuration, or at the sandbox with eval "$(tfyarn-sandbox env)"'
        )
    path = Path(conf_dir) / name
    if not path.exists():
        raise ClusterConfigError(f"{path} does not exist: is HADOOP_CONF_DIR={conf_dir} right?")
    root = ET.parse(path).getroot()
    return {
        (p.findtext("name") or "").strip(): (p.findtext("value") or "").strip()
        for p in root.iter("property")
    }


def default_fs() -> str:
    fs = read_conf("core-site.xml").get("fs.defaultFS", "")
    if not fs.startswith("hdfs://"):
        raise ClusterConfigError(f"fs.defaultFS is {fs!r}, not an hdfs:// URI")
    return fs.rstrip("/")


@lru_cache(maxsize=8)
def _client(url: str, user: str) -> InsecureClient:
    return InsecureClient(url, user=user)


def client() -> InsecureClient:
    """A WebHDFS client for the default filesystem, as the current Hadoop user."""
    addr = read_conf("hdfs-site.xml").get("dfs.namenode.http-address")
    if not addr:
        raise ClusterConfigError("dfs.namenode.http-address is not set in hdfs-site.xml")
    return _client(f"http://{addr}", hadoop_user())


def home() -> str:
    return f"/user/{hadoop_user()}"


def qualify(path: str) -> str:
    """``/user/x/f`` to ``hdfs://nn:port/user/x/f`` (what skein and YARN want)."""
    if path.startswith("hdfs://"):
        return path
    return default_fs() + posixpath.normpath(path)


def strip_scheme(path: str) -> str:
    if path.startswith("hdfs://"):
        rest = path[len("hdfs://") :]
        return "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    return path


def exists(path: str) -> bool:
    return client().status(strip_scheme(path), strict=False) is not None


#: Bytes per read of an upload's source: large enough that a GiB is few requests' worth
#: of Python work, small enough to keep memory flat.
CHUNK = 4 * 2**20


def upload_stream(chunks: Iterable[bytes], path: str, permission: str = "600") -> str:
    """Write a stream of chunks to ``path`` atomically: a temporary name, then a rename.

    The chunks go out as one chunked WebHDFS request while they are produced, so
    a producer (``tar`` writing the environment) and the upload overlap. If the
    producer raises, the request is still ended cleanly, so that the DataNode has
    closed the partial file before it is deleted (an aborted request leaves the
    DataNode creating it after the delete), and then the error propagates.
    """
    c = client()
    path = strip_scheme(path)
    c.makedirs(posixpath.dirname(path), permission="700")
    tmp = f"{path}.part-{os.getpid()}"
    failed: list[Exception] = []

    def until_failure() -> Iterator[bytes]:
        try:
            yield from chunks
        except Exception as exc:
            failed.append(exc)

    try:
        c.write(tmp, data=until_failure(), overwrite=True, permission=permission)
    except BaseException:
        with contextlib.suppress(Exception):
            c.delete(tmp)
        raise
    if failed:
        c.delete(tmp)
        raise failed[0]
    c.delete(path)
    c.rename(tmp, path)
    return qualify(path)


def upload(local: str | os.PathLike, path: str, permission: str = "600") -> str:
    """Upload a local file atomically (see :func:`upload_stream`)."""
    with open(local, "rb") as f:
        return upload_stream(iter(lambda: f.read(CHUNK), b""), path, permission)


def write_bytes(path: str, data: bytes, permission: str = "600") -> str:
    c = client()
    path = strip_scheme(path)
    c.makedirs(posixpath.dirname(path), permission="700")
    c.write(path, data, overwrite=True, permission=permission)
    return qualify(path)


def read_bytes(path: str) -> bytes:
    with client().read(strip_scheme(path)) as reader:
        return reader.read()


def permission(path: str) -> str:
    return client().status(strip_scheme(path))["permission"]


__all__ = [
    "ClusterConfigError",
    "HdfsError",
    "client",
    "default_fs",
    "exists",
    "hadoop_user",
    "home",
    "permission",
    "qualify",
    "read_bytes",
    "upload",
    "upload_stream",
    "write_bytes",
]
