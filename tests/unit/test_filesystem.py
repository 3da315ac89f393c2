"""The client's view of HDFS (tfyarn_jupyter.filesystem): its pure helpers, no NameNode.

The Hadoop configuration is written into ``tmp_path`` and ``HADOOP_CONF_DIR``
points there; nothing here sends a request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tfyarn_jupyter import filesystem
from tfyarn_jupyter.filesystem import ClusterConfigError
from tfyarn_jupyter.hadoop_conf import to_xml

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


@pytest.mark.parametrize("fs", ["file:///", "s3a://bucket", ""])
def test_default_fs_must_be_hdfs(tmp_path, monkeypatch, fs):
    (tmp_path / "core-site.xml").write_bytes(to_xml({"fs.defaultFS": fs} if fs else {}))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    with pytest.raises(ClusterConfigError, match="not an hdfs:// URI"):
        filesystem.default_fs()


def test_client_talks_webhdfs_to_the_namenode_as_the_hadoop_user(conf_dir):
    c = filesystem.client()
    assert c.url == "http://nn.example:9870"
    assert c._session.params["user.name"] == "alice"
    assert filesystem.client() is c


def test_client_needs_the_namenode_http_address(conf_dir):
    (conf_dir / "hdfs-site.xml").write_bytes(to_xml({"dfs.replication": "1"}))
    with pytest.raises(ClusterConfigError, match=r"dfs\.namenode\.http-address is not set"):
        filesystem.client()


# -- paths ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "qualified"),
    [
        ("/user/alice/f", f"{NAMENODE}/user/alice/f"),
        ("/user/alice/./d//f", f"{NAMENODE}/user/alice/d/f"),
        ("/user/alice/d/../f", f"{NAMENODE}/user/alice/f"),
        ("/", f"{NAMENODE}/"),
        ("hdfs://other:1/x", "hdfs://other:1/x"),
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
    ],
)
def test_strip_scheme(path, stripped):
    assert filesystem.strip_scheme(path) == stripped


def test_strip_scheme_undoes_qualify(conf_dir):
    for path in ("/user/alice/.tfyarn/envs/k.tar", "/tmp/x"):
        assert filesystem.strip_scheme(filesystem.qualify(path)) == path
