"""A client's Hadoop configuration, read from plain dicts (no files, no cluster).

Production clusters address HDFS through a nameservice with two NameNodes
(``dfs.nameservices``, ``dfs.ha.namenodes.<ns>``), often through viewfs
(``fs.defaultFS=viewfs://<cluster>/`` and ``fs.viewfs.mounttable.<cluster>.link./x``),
with Kerberos and sometimes HTTPS only. :class:`ClientConf` answers what the client
and the application spec need from ``core-site.xml`` and ``hdfs-site.xml``: the
default filesystem, which HDFS a path lives on (:meth:`ClientConf.resolve`), the
NameNodes' web addresses, and which filesystems the tasks need delegation tokens for
(:meth:`ClientConf.token_targets`); and, from a ticket cache's bytes, whom Kerberos
says the user is (:func:`parse_ccache_principal`). Kept pure so every shape is unit tested;
:func:`parse_xml` and :func:`load` are the only file reading, shared by the client and the
tasks (which resolve viewfs model dirs with it).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import posixpath
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

#: The filesystems this client (and the tasks' hdfs-native) reach.
SCHEMES = ("hdfs", "viewfs")
#: Hadoop's NameNode RPC port when an ``hdfs://host`` names none.
DEFAULT_RPC_PORT = 8020
_MOUNT_PREFIX = "fs.viewfs.mounttable."


class ClusterConfigError(RuntimeError):
    """The Hadoop client configuration is missing or incomplete."""


@dataclasses.dataclass(frozen=True)
class NameNode:
    """One NameNode: its id in the nameservice (``""`` without HA) and its addresses."""

    id: str
    rpc: str
    http: str | None = None
    https: str | None = None


@dataclasses.dataclass(frozen=True)
class MountTable:
    """A viewfs mount table: viewfs folder -> target URI, and the fallback for the rest."""

    cluster: str
    links: Mapping[str, str]
    fallback: str | None = None

    def resolve(self, path: str) -> str:
        """The target URI of viewfs ``path`` (the longest link that contains it wins)."""
        path = posixpath.normpath("/" + path.lstrip("/"))
        best = max((link for link in self.links if _within(path, link)), key=len, default=None)
        if best is not None:
            return _join(self.links[best], path[len(best.rstrip("/")) :])
        if self.fallback:
            return _join(self.fallback, path)
        raise ClusterConfigError(
            f"viewfs://{self.cluster}{path} is in no mount point of viewfs://{self.cluster}/ "
            f"(links: {', '.join(sorted(self.links)) or 'none'}): use a path under one of "
            f"them, or add {_MOUNT_PREFIX}{self.cluster}.link.<folder> to core-site.xml"
        )


def _within(path: str, folder: str) -> bool:
    folder = folder.rstrip("/") or "/"
    return folder == "/" or path == folder or path.startswith(folder + "/")


def _join(target: str, rest: str) -> str:
    """``target`` URI + a path below it (``rest`` is ``""`` or starts with ``/``)."""
    parts = urlsplit(target)
    base = parts.path.rstrip("/")
    path = (base + rest) or "/"
    return f"{parts.scheme}://{parts.netloc}{path}"


@dataclasses.dataclass(frozen=True)
class ClientConf:
    """What the client needs from ``core-site.xml`` (``core``) and ``hdfs-site.xml``."""

    core: Mapping[str, str]
    hdfs: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def get(self, key: str, default: str = "") -> str:
        """A property, ``hdfs-site.xml`` over ``core-site.xml`` (as Hadoop loads them)."""
        return (self.hdfs.get(key) or self.core.get(key) or default).strip()

    # -- the default filesystem and security -------------------------------------------------
    @property
    def default_fs(self) -> str:
        """``fs.defaultFS`` without its trailing slash: ``hdfs://<ns or host:port>`` or
        ``viewfs://<cluster>``."""
        fs = self.core.get("fs.defaultFS", "").strip()
        parts = urlsplit(fs)
        if parts.scheme not in SCHEMES or not parts.netloc:
            raise ClusterConfigError(
                f"fs.defaultFS is {fs!r}, not an hdfs:// or viewfs:// URI with an authority: "
                "set it in core-site.xml of HADOOP_CONF_DIR to your cluster's filesystem"
            )
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def authentication(self) -> str:
        """``hadoop.security.authentication``: ``simple`` or ``kerberos``."""
        return self.core.get("hadoop.security.authentication", "simple").strip().lower()

    @property
    def kerberos(self) -> bool:
        return self.authentication == "kerberos"

    @property
    def https(self) -> bool:
        """Whether the NameNodes' web endpoints are HTTPS only (``dfs.http.policy``)."""
        return self.get("dfs.http.policy", "HTTP_ONLY").upper() == "HTTPS_ONLY"

    # -- nameservices ------------------------------------------------------------------------
    @property
    def nameservices(self) -> tuple[str, ...]:
        raw = self.get("dfs.nameservices")
        return tuple(n.strip() for n in raw.split(",") if n.strip())

    def namenodes(self, authority: str) -> list[NameNode]:
        """The NameNodes behind ``authority``: a nameservice's, or the one at ``host:port``."""
        if authority in self.nameservices:
            ids = [i.strip() for i in self.get(f"dfs.ha.namenodes.{authority}").split(",")]
            ids = [i for i in ids if i]
            if not ids:
                raise ClusterConfigError(
                    f"nameservice {authority!r} names no NameNodes: "
                    f"set dfs.ha.namenodes.{authority} in hdfs-site.xml"
                )
            return [self._namenode(authority, i) for i in ids]
        if ":" not in authority:
            authority = f"{authority}:{DEFAULT_RPC_PORT}"
        single = NameNode(
            "",
            authority,
            self.get("dfs.namenode.http-address") or None,
            self.get("dfs.namenode.https-address") or None,
        )
        return [single]

    def _namenode(self, ns: str, nn: str) -> NameNode:
        rpc = self.get(f"dfs.namenode.rpc-address.{ns}.{nn}")
        if not rpc:
            raise ClusterConfigError(
                f"NameNode {nn} of nameservice {ns} has no address: "
                f"set dfs.namenode.rpc-address.{ns}.{nn} in hdfs-site.xml"
            )
        http = self.get(f"dfs.namenode.http-address.{ns}.{nn}") or None
        https = self.get(f"dfs.namenode.https-address.{ns}.{nn}") or None
        return NameNode(nn, rpc, http, https)

    def web_urls(self, authority: str) -> list[str]:
        """WebHDFS base URLs of ``authority``'s NameNodes, HTTPS when the policy says so."""
        urls = []
        for nn in self.namenodes(authority):
            addr = nn.https if self.https else nn.http
            if addr:
                urls.append(f"{'https' if self.https else 'http'}://{addr}")
        if not urls:
            key = "https-address" if self.https else "http-address"
            raise ClusterConfigError(
                f"no dfs.namenode.{key} for {authority} in hdfs-site.xml (dfs.http.policy is "
                f"{self.get('dfs.http.policy', 'HTTP_ONLY')})"
            )
        return urls

    # -- viewfs --------------------------------------------------------------------------------
    @functools.cached_property
    def _mount_entries(self) -> dict[str, dict[str, str]]:
        """Cluster -> its ``link.<folder>``/``linkFallback`` properties (read once)."""
        out: dict[str, dict[str, str]] = {}
        for key, value in self.core.items():
            if key.startswith(_MOUNT_PREFIX):
                cluster, _, rest = key[len(_MOUNT_PREFIX) :].partition(".")
                out.setdefault(cluster, {})[rest] = value.strip()
        return out

    def mount_table(self, cluster: str) -> MountTable:
        """The mount table of ``viewfs://<cluster>/`` (``default`` for ``viewfs:///``)."""
        cluster = cluster or "default"
        entries = self._mount_entries.get(cluster, {})
        links = {k[len("link.") :]: v for k, v in entries.items() if k.startswith("link.")}
        fallback = entries.get("linkFallback") or None
        if not links and not fallback:
            raise ClusterConfigError(
                f"viewfs://{cluster}/ has no mount table: add "
                f"{_MOUNT_PREFIX}{cluster}.link.<folder> properties to core-site.xml"
            )
        return MountTable(cluster, links, fallback)

    def resolve(self, uri: str) -> tuple[str, str]:
        """``(filesystem, path)`` that ``uri`` (or a bare path on the default filesystem)
        lives on: viewfs resolved through its mount table to ``hdfs://<authority>``."""
        if "://" not in uri:
            uri = self.default_fs + posixpath.normpath("/" + uri.lstrip("/"))
        for _ in range(8):  # a viewfs link may point at another viewfs
            parts = urlsplit(uri)
            if parts.scheme == "viewfs":
                uri = self.mount_table(parts.netloc).resolve(parts.path or "/")
                continue
            if parts.scheme != "hdfs" or not parts.netloc:
                raise ClusterConfigError(
                    f"{uri} is not on HDFS: tfyarn reads and writes hdfs:// and viewfs:// paths"
                )
            return f"hdfs://{parts.netloc}", posixpath.normpath(parts.path or "/")
        raise ClusterConfigError(f"{uri}: viewfs mount tables point at each other in a loop")

    # -- delegation tokens ----------------------------------------------------------------------
    def token_targets(self, extra: Iterable[str] = ()) -> list[str]:
        """The filesystems the tasks need delegation tokens for, each once: the default
        filesystem, every target of the default (and any ``extra``) viewfs mount table, and
        ``extra`` itself. Tasks have no ticket: a filesystem left out is unreachable."""
        wanted = [self.default_fs, *extra]
        out: list[str] = []
        for fs in wanted:
            parts = urlsplit(fs.strip())
            if not parts.scheme:
                raise ClusterConfigError(f"file system {fs!r} is not a URI such as hdfs://ns")
            root = f"{parts.scheme}://{parts.netloc}"
            out.append(root)
            if parts.scheme == "viewfs":
                table = self.mount_table(parts.netloc)
                targets = [*table.links.values(), *([table.fallback] if table.fallback else [])]
                for target in targets:
                    t = urlsplit(target)
                    out.append(f"{t.scheme}://{t.netloc}")
        return list(dict.fromkeys(out))


# -- the Kerberos ticket cache ------------------------------------------------------------
def parse_ccache_principal(data: bytes) -> str:
    """``name@REALM`` of a MIT file ccache (versions 3 and 4, big-endian)."""
    version = int.from_bytes(data[:2], "big")
    if version not in (0x0503, 0x0504):
        raise ValueError(f"unsupported ccache version {version:#06x}")
    pos = 2 + (2 + int.from_bytes(data[2:4], "big") if version == 0x0504 else 0)
    count = int.from_bytes(data[pos + 4 : pos + 8], "big")
    if not 0 < count <= 16:
        raise ValueError(f"a principal of {count} components: not a ccache")
    pos += 8
    strings = []
    for _ in range(count + 1):  # the realm, then each component
        n = int.from_bytes(data[pos : pos + 4], "big")
        strings.append(data[pos + 4 : pos + 4 + n].decode())
        pos += 4 + n
    if pos > len(data):
        raise ValueError("truncated ccache")
    return "/".join(strings[1:]) + "@" + strings[0]


__all__ = ["ClientConf", "ClusterConfigError", "MountTable", "NameNode", "parse_ccache_principal"]


def parse_xml(path: str) -> dict[str, str]:
    """The properties of a Hadoop ``*-site.xml`` file."""
    root = ET.parse(path).getroot()
    return {
        (p.findtext("name") or "").strip(): (p.findtext("value") or "").strip()
        for p in root.iter("property")
    }


def load(conf_dir: str) -> ClientConf:
    """The configuration of a ``HADOOP_CONF_DIR`` folder (``hdfs-site.xml`` may be absent)."""
    hdfs_site = f"{conf_dir}/hdfs-site.xml"
    return ClientConf(
        parse_xml(f"{conf_dir}/core-site.xml"),
        parse_xml(hdfs_site) if os.path.exists(hdfs_site) else {},
    )
