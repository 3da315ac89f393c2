"""HDFS access for the client: the environment cache, payloads and event logs.

Speaks HDFS's own RPC through ``hdfs-native`` (Rust, no JVM): it reads
``HADOOP_CONF_DIR``, authenticates with the user's Kerberos ticket (or a task's
delegation tokens), fails over between the NameNodes of a nameservice, and a warm
"is the environment already there?" costs a fraction of a millisecond (a tenth of a
WebHDFS request; ``benchmarks/hdfs_clients.py``). viewfs paths are resolved here,
through :mod:`.client_conf`, to the nameservice that holds them, so a mount table
with no fallback link works too.
"""

from __future__ import annotations

import builtins
import contextlib
import getpass
import os
import posixpath
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import hdfs_native

from tfyarn_jupyter.hadoop import conf as client_conf
from tfyarn_jupyter.hadoop.conf import ClientConf, ClusterConfigError, parse_ccache_principal

#: Bytes per read of an upload's source: large enough that a GiB is few calls' worth
#: of Python work, small enough to keep memory flat.
CHUNK = 4 * 2**20
#: What identifies the caller to HDFS: a client made for one is never used for another.
IDENTITY_VARS = ("HADOOP_USER_NAME", "KRB5CCNAME", "KRB5_CONFIG", "HADOOP_TOKEN_FILE_LOCATION")


class HdfsError(OSError):
    """An HDFS operation failed: the message says on which path and why."""


class HdfsNotFound(HdfsError, FileNotFoundError):
    """The path does not exist."""


class HdfsPermissionDenied(HdfsError, PermissionError):
    """HDFS refused the current user (``Permission denied: user=..., access=...``)."""


# -- the configuration and the user -------------------------------------------------------
def read_conf(name: str) -> dict[str, str]:
    """Properties of ``$HADOOP_CONF_DIR/<name>`` (e.g. ``hdfs-site.xml``)."""
    path = _conf_dir() / name
    if not path.exists():
        raise ClusterConfigError(f"{path} does not exist: is HADOOP_CONF_DIR={path.parent} right?")
    return _parse_xml(str(path), path.stat().st_mtime_ns)


def _conf_dir() -> Path:
    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    if not conf_dir:
        raise ClusterConfigError(
            "HADOOP_CONF_DIR is not set: point it at your cluster's Hadoop client "
            'configuration, or at the sandbox with eval "$(tfyarn-sandbox env)"'
        )
    return Path(conf_dir)


@lru_cache(maxsize=32)
def _parse_xml(path: str, _mtime_ns: int) -> dict[str, str]:
    return client_conf.parse_xml(path)


def conf() -> ClientConf:
    """The client configuration of ``HADOOP_CONF_DIR`` (``hdfs-site.xml`` may be absent),
    read again when a file changes (two ``stat`` calls: every HDFS operation asks)."""
    conf_dir = str(_conf_dir())
    stamps = []
    for name in ("core-site.xml", "hdfs-site.xml"):
        try:
            stamps.append(os.stat(f"{conf_dir}/{name}").st_mtime_ns)
        except FileNotFoundError:
            stamps.append(-1)
    return _conf(conf_dir, *stamps)


@lru_cache(maxsize=8)
def _conf(conf_dir: str, core_stamp: int, hdfs_stamp: int) -> ClientConf:
    core = read_conf("core-site.xml")  # names the file if it is missing
    hdfs_site = _parse_xml(f"{conf_dir}/hdfs-site.xml", hdfs_stamp) if hdfs_stamp >= 0 else {}
    return ClientConf(core, hdfs_site)


def _kerberos() -> bool:
    with contextlib.suppress(ClusterConfigError, ET.ParseError, OSError):
        return conf().kerberos
    return False


def hadoop_user() -> str:
    """Who HDFS and YARN see: the Kerberos principal's short name on a secure cluster,
    else ``HADOOP_USER_NAME`` or the login user (as Hadoop and hdfs-native pick it)."""
    if _kerberos():
        return kerberos_user()
    return os.environ.get("HADOOP_USER_NAME") or getpass.getuser()


def kerberos_user() -> str:
    """The short name of the ticket cache's principal (``alice`` for ``alice@REALM``)."""
    principal = ccache_principal()
    if not principal:
        cache = os.environ.get("KRB5CCNAME") or f"/tmp/krb5cc_{os.getuid()}"
        raise ClusterConfigError(
            f"no Kerberos ticket (cache {cache}): run `kinit` (or `kinit -kt <keytab> "
            "<principal>`) before using the cluster"
        )
    return re.split(r"[/@]", principal, maxsplit=1)[0]


def ccache_principal() -> str | None:
    """The default principal of the Kerberos ticket cache, or None if there is none.

    A ``FILE:`` cache is read directly (microseconds); any other kind asks ``klist``."""
    name = os.environ.get("KRB5CCNAME") or f"FILE:/tmp/krb5cc_{os.getuid()}"
    kind, _, rest = name.partition(":") if ":" in name else ("FILE", "", name)
    if kind == "FILE":
        try:
            return parse_ccache_principal(Path(rest).read_bytes())
        except (OSError, ValueError):
            return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["klist"], capture_output=True, text=True, timeout=10).stdout
        if m := re.search(r"^Default principal:\s*(\S+)", out, re.M):
            return m[1]
    return None


def default_fs() -> str:
    """``fs.defaultFS`` without the trailing slash: ``hdfs://...`` or ``viewfs://...``."""
    return conf().default_fs


def home() -> str:
    return f"/user/{hadoop_user()}"


def token_targets(file_systems: Iterable[str] = ()) -> list[str]:
    """What skein's ``file_systems`` should be: on a Kerberos cluster, the default
    filesystem, every viewfs mount target and ``file_systems`` (the tasks have no ticket,
    only these delegation tokens); on simple authentication, ``file_systems`` as given
    (no tokens exist there)."""
    if _kerberos():
        return conf().token_targets(file_systems)
    return list(file_systems)


# -- paths --------------------------------------------------------------------------------
def qualify(path: str) -> str:
    """``/user/x/f`` to ``<fs.defaultFS>/user/x/f`` (what skein and YARN want); a URI as is."""
    if "://" in path:
        return path
    return default_fs() + posixpath.normpath(path)


def strip_scheme(path: str) -> str:
    """The path part of a URI of any scheme (``viewfs://c/user/x`` -> ``/user/x``)."""
    if "://" not in path:
        return path
    return urlsplit(path).path or "/"


# -- clients ------------------------------------------------------------------------------
@lru_cache(maxsize=16)
def _native(fs: str, conf_dir: str, _identity: tuple[str | None, ...]) -> hdfs_native.Client:
    return hdfs_native.Client(fs, config_dir=conf_dir)


def locate(path: str) -> tuple[hdfs_native.Client, str]:
    """An hdfs-native client for the HDFS that holds ``path`` (bare: the default
    filesystem; viewfs: through the mount table), and the path on it."""
    fs, resolved = conf().resolve(path)
    identity = tuple(os.environ.get(v) for v in IDENTITY_VARS)
    return _native(fs, str(_conf_dir()), identity), resolved


_RPC_ERROR = re.compile(r'RPCError\("([\w.$]+)", "(.*?)(?:\\n|"\))', re.S)


@contextlib.contextmanager
def errors(path: str) -> Iterator[None]:
    """Turn hdfs-native's exceptions into :class:`HdfsError`\\ s that name ``path``."""
    try:
        yield
    except HdfsError:
        raise
    except FileNotFoundError as exc:
        raise HdfsNotFound(f"{path}: no such file or directory on HDFS") from exc
    except FileExistsError as exc:
        raise HdfsError(f"{path}: already exists on HDFS") from exc
    except (RuntimeError, OSError) as exc:
        text = str(exc)
        if m := _RPC_ERROR.search(text):
            cls, msg = m[1], m[2].replace('\\"', '"')
            if cls.endswith("AccessControlException"):
                raise HdfsPermissionDenied(f"{path}: {msg}") from exc
            if cls.endswith("FileNotFoundException"):
                raise HdfsNotFound(f"{path}: {msg}") from exc
            raise HdfsError(f"{path}: {cls.rsplit('.', 1)[-1]}: {msg}") from exc
        if "GSSAPI" in text or "No Kerberos credentials" in text:
            raise HdfsError(
                f"{path}: HDFS refused the Kerberos login ({text[:300]}): run `kinit` to get "
                "a ticket, and check KRB5CCNAME and KRB5_CONFIG"
            ) from exc
        raise HdfsError(f"{path}: {text[:500]}") from exc


# -- operations ---------------------------------------------------------------------------
def exists(path: str) -> bool:
    c, p = locate(path)
    with errors(path):
        try:
            c.get_file_info(p)
        except FileNotFoundError:
            return False
    return True


def upload_stream(chunks: Iterable[bytes], path: str, permission: str = "600") -> str:
    """Write a stream of chunks to ``path`` atomically: a temporary name, then a rename.

    Each chunk goes to the DataNodes as it is produced, so a producer (``tar``
    writing the environment) and the upload overlap. If the producer (or HDFS)
    raises, the partial file is closed and deleted, and the error propagates.
    Folders made on the way are ``700``: other users see nothing of them.
    """
    c, p = locate(path)
    tmp = f"{p}.part-{os.getpid()}"
    with errors(path):
        c.mkdirs(posixpath.dirname(p), 0o700, create_parent=True)
        try:
            opts = hdfs_native.WriteOptions(overwrite=True, permission=int(permission, 8))
            with c.create(tmp, opts) as writer:
                for chunk in chunks:
                    writer.write(chunk)
        except BaseException:
            with contextlib.suppress(Exception):
                c.delete(tmp)
            raise
        c.rename(tmp, p, overwrite=True)
    return qualify(path)


def upload(local: str | os.PathLike, path: str, permission: str = "600") -> str:
    """Upload a local file atomically (see :func:`upload_stream`)."""
    with open(local, "rb") as f:
        return upload_stream(iter(lambda: f.read(CHUNK), b""), path, permission)


def write_bytes(path: str, data: bytes, permission: str = "600") -> str:
    """Write ``data`` to ``path`` atomically (see :func:`upload_stream`)."""
    return upload_stream([data], path, permission)


def read_bytes(path: str) -> bytes:
    c, p = locate(path)
    with errors(path), c.read(p) as reader:
        return reader.read()


def permission(path: str) -> str:
    """The octal permission of ``path`` as HDFS shows it (``"600"``)."""
    st = status(path)
    assert st is not None  # strict: a missing path raised
    return str(st["permission"])


def status(path: str, strict: bool = True) -> dict[str, Any] | None:
    """WebHDFS-style status of ``path`` (``length``, ``modificationTime`` in ms,
    ``permission`` as an octal string, ``owner``, ``group``, ``type``); None if it does
    not exist and not ``strict``."""
    c, p = locate(path)
    with errors(path):
        try:
            st = c.get_file_info(p)
        except FileNotFoundError:
            if strict:
                raise
            return None
    return {
        "length": st.length,
        "modificationTime": st.modification_time,
        "permission": f"{st.permission:o}",
        "owner": st.owner,
        "group": st.group,
        "type": "DIRECTORY" if st.isdir else "FILE",
    }


def listdir(path: str) -> list[str]:
    """The names in folder ``path``, sorted."""
    c, p = locate(path)
    with errors(path):
        return sorted(posixpath.basename(st.path) for st in c.list_status(p))


def delete(path: str, recursive: bool = False) -> bool:
    """Delete ``path``; False if there was nothing to delete."""
    c, p = locate(path)
    with errors(path):
        return bool(c.delete(p, recursive))


class Hdfs:
    """The subset of the ``hdfs`` package's client that scripts and tests use, on
    hdfs-native: ``status``, ``list``, ``walk``, ``read``, ``delete``, ``makedirs``."""

    def status(self, path: str, strict: bool = True) -> dict[str, Any] | None:
        return status(path, strict)

    def list(self, path: str) -> list[str]:
        return listdir(path)

    def delete(self, path: str, recursive: bool = False) -> bool:
        return delete(path, recursive)

    def makedirs(self, path: str, permission: str = "700") -> None:
        c, p = locate(path)
        with errors(path):
            c.mkdirs(p, int(permission, 8), create_parent=True)

    @contextlib.contextmanager
    def read(self, path: str) -> Iterator[hdfs_native.FileReader]:
        c, p = locate(path)
        with errors(path), c.read(p) as reader:
            yield reader

    def walk(self, path: str) -> Iterator[tuple[str, builtins.list[str], builtins.list[str]]]:
        """``(folder, subfolders, files)`` from ``path`` down, like ``os.walk``."""
        c, p = locate(path)
        with errors(path):
            entries = list(c.list_status(p))
        dirs = sorted(posixpath.basename(e.path) for e in entries if e.isdir)
        files = sorted(posixpath.basename(e.path) for e in entries if not e.isdir)
        yield path, dirs, files
        for d in dirs:
            yield from self.walk(posixpath.join(path, d))

    @property
    def url(self) -> str:
        """The WebHDFS URL of the default filesystem's first NameNode (for tools that
        speak WebHDFS, such as the tests' second user on the simple-auth sandbox)."""
        fs, _ = conf().resolve(home())
        return conf().web_urls(urlsplit(fs).netloc)[0]


def client() -> Hdfs:
    """The current user's HDFS (see :class:`Hdfs`)."""
    return Hdfs()


__all__ = [
    "ClusterConfigError",
    "Hdfs",
    "HdfsError",
    "HdfsNotFound",
    "HdfsPermissionDenied",
    "client",
    "conf",
    "default_fs",
    "delete",
    "exists",
    "hadoop_user",
    "home",
    "listdir",
    "locate",
    "permission",
    "qualify",
    "read_bytes",
    "status",
    "strip_scheme",
    "token_targets",
    "upload",
    "upload_stream",
    "write_bytes",
]
