"""The client's view of HDFS (tfyarn_jupyter.hadoop.filesystem): its pure parts, no NameNode.

The Hadoop configuration is written into ``tmp_path`` and ``HADOOP_CONF_DIR``
points there; nothing here sends a request.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tfyarn_sandbox.site_xml import to_xml

from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.hadoop.filesystem import ClusterConfigError

NAMENODE = "hdfs://nn.example:8020"


@pytest.fixture
def conf_dir(tmp_path, monkeypatch) -> Path:
    """A client configuration naming a NameNode, with ``HADOOP_CONF_DIR`` pointing at it."""
    (tmp_path / "core-site.xml").write_bytes(to_xml({"fs.defaultFS": NAMENODE + "/"}))
    (tmp_path / "hdfs-site.xml").write_bytes(
        to_xml({"dfs.namenode.http-address": "nn.example:9870"})
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    return tmp_path


# -- the user ------------------------------------------------------------------------------
def test_hadoop_user_is_hadoop_user_name_when_set(monkeypatch):
    monkeypatch.setenv("HADOOP_USER_NAME", "bob")
    assert filesystem.hadoop_user() == "bob"
    assert filesystem.home() == "/user/bob"


@pytest.mark.parametrize("value", [None, ""])
def test_hadoop_user_is_the_login_user_otherwise(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("HADOOP_USER_NAME", raising=False)
    else:
        monkeypatch.setenv("HADOOP_USER_NAME", value)
    monkeypatch.setattr(filesystem.getpass, "getuser", lambda: "carol")
    assert filesystem.hadoop_user() == "carol"
    assert filesystem.home() == "/user/carol"


# -- reading the configuration ---------------------------------------------------------------
def test_read_conf_strips_names_and_values(tmp_path, monkeypatch):
    (tmp_path / "x-site.xml").write_text(
        "<configuration>"
        "<property><name> a.b </name><value>\n  1\n</value></property>"
        "<property><name>empty</name></property>"
        "</configuration>"
    )
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    assert filesystem.read_conf("x-site.xml") == {"a.b": "1", "empty": ""}


def test_read_conf_without_hadoop_conf_dir_says_what_to_set(monkeypatch):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    with pytest.raises(ClusterConfigError, match=r"HADOOP_CONF_DIR is not set.*tfyarn-sandbox env"):
        filesystem.read_conf("core-site.xml")


def test_read_conf_of_a_missing_file_names_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(ClusterConfigError, match=r"core-site\.xml does not exist"):
        filesystem.read_conf("core-site.xml")


def test_default_fs_drops_the_trailing_slash(conf_dir):
    assert filesystem.default_fs() == NAMENODE


@pytest.mark.parametrize("fs", ["file:///", "s3a://bucket", "", "hdfs:///"])
def test_default_fs_must_be_hdfs_or_viewfs(tmp_path, monkeypatch, fs):
    (tmp_path / "core-site.xml").write_bytes(to_xml({"fs.defaultFS": fs} if fs else {}))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(ClusterConfigError, match="not an hdfs:// or viewfs:// URI"):
        filesystem.default_fs()


def test_conf_reads_core_and_hdfs_site(conf_dir):
    conf = filesystem.conf()
    assert conf.default_fs == NAMENODE
    assert conf.web_urls("nn.example:8020") == ["http://nn.example:9870"]


def test_conf_needs_no_hdfs_site(conf_dir):
    (conf_dir / "hdfs-site.xml").unlink()
    assert filesystem.conf().hdfs == {}


def test_a_changed_file_is_read_again(conf_dir):
    assert filesystem.default_fs() == NAMENODE
    (conf_dir / "core-site.xml").write_bytes(to_xml({"fs.defaultFS": "viewfs://c/"}))
    os.utime(conf_dir / "core-site.xml", ns=(1, 1))  # another mtime, whatever the clock
    assert filesystem.default_fs() == "viewfs://c"


# -- the Kerberos identity ------------------------------------------------------------------
def ccache(principal: list[str], realm: str, version: int = 4) -> bytes:
    """A MIT file ccache holding only its default principal (what hadoop_user reads)."""

    def counted(s: str) -> bytes:
        return len(s.encode()).to_bytes(4, "big") + s.encode()

    header = (12).to_bytes(2, "big") + b"\x00\x01\x00\x08" + bytes(8) if version == 4 else b""
    body = (1).to_bytes(4, "big") + len(principal).to_bytes(4, "big") + counted(realm)
    body += b"".join(counted(c) for c in principal)
    return (0x0500 + version).to_bytes(2, "big") + header + body + b"credentials..."


@pytest.mark.parametrize("version", [3, 4])
def test_parse_ccache_principal(version):
    data = ccache(["alice"], "EXAMPLE.COM", version)
    assert filesystem.parse_ccache_principal(data) == "alice@EXAMPLE.COM"
    data = ccache(["nn", "host.example"], "R", version)
    assert filesystem.parse_ccache_principal(data) == "nn/host.example@R"


@pytest.mark.parametrize("data", [b"", b"\x05\x02rest", ccache(["alice"], "R")[:20]])
def test_parse_ccache_principal_refuses_what_it_cannot_read(data):
    with pytest.raises(ValueError):
        filesystem.parse_ccache_principal(data)


@pytest.fixture
def kerberized(conf_dir):
    (conf_dir / "core-site.xml").write_bytes(
        to_xml({"fs.defaultFS": "viewfs://c/", "hadoop.security.authentication": "kerberos"})
    )
    return conf_dir


@pytest.mark.parametrize("prefix", ["", "FILE:"])
def test_on_kerberos_the_user_is_the_tickets_principal(kerberized, tmp_path, monkeypatch, prefix):
    (tmp_path / "cc").write_bytes(ccache(["carol"], "EXAMPLE.COM"))
    monkeypatch.setenv("KRB5CCNAME", f"{prefix}{tmp_path / 'cc'}")
    monkeypatch.setenv("HADOOP_USER_NAME", "mallory")  # ignored: Kerberos says who
    assert filesystem.hadoop_user() == "carol"
    assert filesystem.home() == "/user/carol"


def test_on_kerberos_without_a_ticket_says_run_kinit(kerberized, tmp_path, monkeypatch):
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'none'}")
    with pytest.raises(ClusterConfigError, match=r"no Kerberos ticket .*none.*run `kinit`"):
        filesystem.hadoop_user()


# -- errors ---------------------------------------------------------------------------------
RPC = 'RPCError("org.apache.hadoop.security.AccessControlException", "Permission denied: '
RPC += 'user=alice, access=EXECUTE, inode=\\"/user/mallory\\":mallory\\n\\tat org.apache")'


@pytest.mark.parametrize(
    ("raised", "kind", "message"),
    [
        (FileNotFoundError("/p"), filesystem.HdfsNotFound, "/p: no such file"),
        (RuntimeError(RPC), filesystem.HdfsPermissionDenied,
         '/p: Permission denied: user=alice, access=EXECUTE, inode="/user/mallory":mallory$'),
        (RuntimeError('RPCError("java.io.IOException", "disk full")'), filesystem.HdfsError,
         "/p: IOException: disk full$"),
        (RuntimeError("GSSAPIError(No Kerberos credentials available)"), filesystem.HdfsError,
         "run `kinit`"),
        (OSError("connection refused"), filesystem.HdfsError, "/p: connection refused"),
    ],
)  # fmt: skip
def test_errors_become_hdfs_errors_naming_the_path(raised, kind, message):
    with pytest.raises(kind, match=message) as info, filesystem.errors("/p"):
        raise raised
    assert info.value.__cause__ is raised


def test_hdfs_errors_are_os_errors_callers_can_catch_by_kind():
    assert issubclass(filesystem.HdfsNotFound, FileNotFoundError)
    assert issubclass(filesystem.HdfsPermissionDenied, PermissionError)
    assert issubclass(filesystem.HdfsNotFound, filesystem.HdfsError)


def test_hdfs_errors_pass_through_unchanged():
    error = filesystem.HdfsNotFound("x")
    with pytest.raises(filesystem.HdfsNotFound) as info, filesystem.errors("/p"):
        raise error
    assert info.value is error


def test_locate_resolves_viewfs_and_keeps_one_client_per_identity(kerberized, monkeypatch):
    (kerberized / "core-site.xml").write_bytes(
        to_xml({"fs.defaultFS": "viewfs://c/", "fs.viewfs.mounttable.c.link./user": "hdfs://ns/u"})
    )
    (kerberized / "hdfs-site.xml").write_bytes(
        to_xml({"dfs.nameservices": "ns", "dfs.ha.namenodes.ns": "a",
                "dfs.namenode.rpc-address.ns.a": "nn.example:8020"})
    )  # fmt: skip
    client, path = filesystem.locate("/user/alice/f")
    assert path == "/u/alice/f"
    assert filesystem.locate("viewfs://c/user/bob")[0] is client
    monkeypatch.setenv("KRB5CCNAME", "/tmp/another-user")
    assert filesystem.locate("/user/alice/f")[0] is not client


# -- paths ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "qualified"),
    [
        ("/user/alice/f", f"{NAMENODE}/user/alice/f"),
        ("/user/alice/./d//f", f"{NAMENODE}/user/alice/d/f"),
        ("/user/alice/d/../f", f"{NAMENODE}/user/alice/f"),
        ("/", f"{NAMENODE}/"),
        ("hdfs://other:1/x", "hdfs://other:1/x"),
        ("viewfs://c/user/x", "viewfs://c/user/x"),
    ],
)
def test_qualify(conf_dir, path, qualified):
    assert filesystem.qualify(path) == qualified


@pytest.mark.parametrize(
    ("path", "stripped"),
    [
        (f"{NAMENODE}/user/alice/f", "/user/alice/f"),
        (f"{NAMENODE}/", "/"),
        (NAMENODE, "/"),
        ("/user/alice/f", "/user/alice/f"),
        ("relative/f", "relative/f"),
        ("viewfs://cluster/user/alice/f", "/user/alice/f"),
        ("viewfs://cluster", "/"),
        ("hdfs://ns/data", "/data"),
        ("file:///tmp/x", "/tmp/x"),
    ],
)
def test_strip_scheme(path, stripped):
    assert filesystem.strip_scheme(path) == stripped


def test_strip_scheme_undoes_qualify(conf_dir):
    for path in ("/user/alice/.tfyarn/envs/k.tar", "/tmp/x"):
        assert filesystem.strip_scheme(filesystem.qualify(path)) == path


# -- delegation tokens ----------------------------------------------------------------------
def test_token_targets_on_kerberos_are_the_default_fs_mount_targets_and_the_extra(kerberized):
    (kerberized / "core-site.xml").write_bytes(
        to_xml({
            "fs.defaultFS": "viewfs://c/",
            "hadoop.security.authentication": "kerberos",
            "fs.viewfs.mounttable.c.link./user": "hdfs://ns/user",
            "fs.viewfs.mounttable.c.link./data": "hdfs://ns2/data",
        })
    )  # fmt: skip
    got = filesystem.token_targets(["hdfs://ns3:8020/x"])
    assert got == ["viewfs://c", "hdfs://ns", "hdfs://ns2", "hdfs://ns3:8020"]


def test_token_targets_on_simple_auth_are_the_extra_as_given(conf_dir):
    assert filesystem.token_targets(["hdfs://nn2:8020"]) == ["hdfs://nn2:8020"]
    assert filesystem.token_targets() == []
