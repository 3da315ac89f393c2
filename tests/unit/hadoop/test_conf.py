"""A client's Hadoop configuration from plain dicts (tfyarn_jupyter.hadoop.conf).

The shapes of production clusters: a nameservice with two NameNodes, viewfs mount
tables with and without a fallback, HTTPS-only web endpoints, Kerberos, and the
filesystems tasks need delegation tokens for.
"""

from __future__ import annotations

import pytest

from tfyarn_jupyter.hadoop import conf as client_conf
from tfyarn_jupyter.hadoop.conf import ClientConf, ClusterConfigError, MountTable, NameNode

HA_HDFS = {
    "dfs.nameservices": "prod-ns, other-ns",
    "dfs.ha.namenodes.prod-ns": "nn1,nn2",
    "dfs.namenode.rpc-address.prod-ns.nn1": "nn1.example:8020",
    "dfs.namenode.rpc-address.prod-ns.nn2": "nn2.example:8020",
    "dfs.namenode.http-address.prod-ns.nn1": "nn1.example:9870",
    "dfs.namenode.http-address.prod-ns.nn2": "nn2.example:9870",
    "dfs.namenode.https-address.prod-ns.nn1": "nn1.example:9871",
    "dfs.namenode.https-address.prod-ns.nn2": "nn2.example:9871",
    "dfs.ha.namenodes.other-ns": "a",
    "dfs.namenode.rpc-address.other-ns.a": "a.example:8020",
}
VIEWFS_CORE = {
    "fs.defaultFS": "viewfs://prod/",
    "fs.viewfs.mounttable.prod.link./user": "hdfs://prod-ns/user",
    "fs.viewfs.mounttable.prod.link./data": "hdfs://other-ns/warehouse/data",
    "fs.viewfs.mounttable.prod.link./data/hot": "hdfs://prod-ns/hot",
    "fs.viewfs.mounttable.prod.link./tmp": "hdfs://prod-ns/tmp",
}


def viewfs(**extra: str) -> ClientConf:
    return ClientConf({**VIEWFS_CORE, **extra}, HA_HDFS)


# -- the default filesystem and security ---------------------------------------------------
@pytest.mark.parametrize(
    ("fs", "expected"),
    [
        ("hdfs://nn.example:8020/", "hdfs://nn.example:8020"),
        ("hdfs://prod-ns", "hdfs://prod-ns"),
        ("viewfs://prod/", "viewfs://prod"),
        (" viewfs://prod ", "viewfs://prod"),
    ],
)
def test_default_fs(fs, expected):
    assert ClientConf({"fs.defaultFS": fs}).default_fs == expected


@pytest.mark.parametrize("fs", ["", "file:///", "s3a://bucket/", "hdfs:///", "/user"])
def test_default_fs_must_name_an_hdfs_or_viewfs_authority(fs):
    with pytest.raises(ClusterConfigError, match=r"fs\.defaultFS is .*core-site\.xml"):
        _ = ClientConf({"fs.defaultFS": fs}).default_fs


@pytest.mark.parametrize(
    ("value", "kerberos"),
    [(None, False), ("simple", False), ("kerberos", True), ("KERBEROS", True)],
)
def test_authentication(value, kerberos):
    core = {} if value is None else {"hadoop.security.authentication": value}
    conf = ClientConf(core)
    assert conf.kerberos is kerberos
    assert conf.authentication == (value or "simple").lower()


# -- nameservices --------------------------------------------------------------------------
def test_nameservices_and_their_namenodes():
    conf = ClientConf({}, HA_HDFS)
    assert conf.nameservices == ("prod-ns", "other-ns")
    assert conf.namenodes("prod-ns") == [
        NameNode("nn1", "nn1.example:8020", "nn1.example:9870", "nn1.example:9871"),
        NameNode("nn2", "nn2.example:8020", "nn2.example:9870", "nn2.example:9871"),
    ]
    assert conf.namenodes("other-ns") == [NameNode("a", "a.example:8020")]


def test_a_host_that_is_no_nameservice_is_one_namenode():
    conf = ClientConf({}, {"dfs.namenode.http-address": "nn.example:9870"})
    assert conf.namenodes("nn.example:9000") == [
        NameNode("", "nn.example:9000", "nn.example:9870", None)
    ]
    assert conf.namenodes("nn.example")[0].rpc == "nn.example:8020"


def test_a_nameservice_without_namenodes_says_what_to_set():
    conf = ClientConf({}, {"dfs.nameservices": "ns"})
    with pytest.raises(ClusterConfigError, match=r"set dfs\.ha\.namenodes\.ns"):
        conf.namenodes("ns")


def test_a_namenode_without_an_address_says_what_to_set():
    conf = ClientConf({}, {"dfs.nameservices": "ns", "dfs.ha.namenodes.ns": "nn1"})
    with pytest.raises(ClusterConfigError, match=r"set dfs\.namenode\.rpc-address\.ns\.nn1"):
        conf.namenodes("ns")


def test_hdfs_site_wins_over_core_site():
    conf = ClientConf({"dfs.nameservices": "a"}, {"dfs.nameservices": "b"})
    assert conf.nameservices == ("b",)


# -- web endpoints and the HTTPS policy -----------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "urls"),
    [
        (None, ["http://nn1.example:9870", "http://nn2.example:9870"]),
        ("HTTP_ONLY", ["http://nn1.example:9870", "http://nn2.example:9870"]),
        ("HTTP_AND_HTTPS", ["http://nn1.example:9870", "http://nn2.example:9870"]),
        ("HTTPS_ONLY", ["https://nn1.example:9871", "https://nn2.example:9871"]),
        ("https_only", ["https://nn1.example:9871", "https://nn2.example:9871"]),
    ],
)
def test_web_urls_follow_the_http_policy(policy, urls):
    hdfs = dict(HA_HDFS, **({"dfs.http.policy": policy} if policy else {}))
    conf = ClientConf({}, hdfs)
    assert conf.https is (policy or "").upper().startswith("HTTPS")
    assert conf.web_urls("prod-ns") == urls


def test_https_only_without_https_addresses_says_so():
    conf = ClientConf({}, dict(HA_HDFS, **{"dfs.http.policy": "HTTPS_ONLY"}))
    with pytest.raises(ClusterConfigError, match=r"no dfs\.namenode\.https-address for other-ns"):
        conf.web_urls("other-ns")


# -- viewfs --------------------------------------------------------------------------------
def test_mount_table_of_a_cluster():
    table = viewfs().mount_table("prod")
    assert table == MountTable(
        "prod",
        {
            "/user": "hdfs://prod-ns/user",
            "/data": "hdfs://other-ns/warehouse/data",
            "/data/hot": "hdfs://prod-ns/hot",
            "/tmp": "hdfs://prod-ns/tmp",
        },
        None,
    )


@pytest.mark.parametrize(
    ("uri", "resolved"),
    [
        ("viewfs://prod/user/alice/f", ("hdfs://prod-ns", "/user/alice/f")),
        ("viewfs://prod/user", ("hdfs://prod-ns", "/user")),
        ("viewfs://prod/data/x/y", ("hdfs://other-ns", "/warehouse/data/x/y")),
        ("viewfs://prod/data", ("hdfs://other-ns", "/warehouse/data")),
        ("viewfs://prod/data/hot/z", ("hdfs://prod-ns", "/hot/z")),  # the longest link wins
        ("viewfs://prod/data/hotter", ("hdfs://other-ns", "/warehouse/data/hotter")),
        ("viewfs://prod/user//alice/./f", ("hdfs://prod-ns", "/user/alice/f")),
        ("/user/alice/f", ("hdfs://prod-ns", "/user/alice/f")),  # on the default filesystem
        ("hdfs://other-ns/x", ("hdfs://other-ns", "/x")),
        ("hdfs://nn.example:8020", ("hdfs://nn.example:8020", "/")),
    ],
)
def test_resolve_viewfs_through_the_mount_table(uri, resolved):
    assert viewfs().resolve(uri) == resolved


def test_a_path_in_no_mount_point_names_the_links_and_what_to_add():
    with pytest.raises(ClusterConfigError) as info:
        viewfs().resolve("viewfs://prod/elsewhere/f")
    message = str(info.value)
    assert "viewfs://prod/elsewhere/f is in no mount point" in message
    assert "/data, /data/hot, /tmp, /user" in message
    assert "fs.viewfs.mounttable.prod.link.<folder>" in message


def test_the_fallback_link_takes_the_rest():
    conf = viewfs(**{"fs.viewfs.mounttable.prod.linkFallback": "hdfs://other-ns/rest/"})
    assert conf.resolve("viewfs://prod/elsewhere/f") == ("hdfs://other-ns", "/rest/elsewhere/f")
    assert conf.resolve("viewfs://prod/user/a") == ("hdfs://prod-ns", "/user/a")


def test_viewfs_without_authority_is_the_default_mount_table():
    conf = ClientConf({"fs.viewfs.mounttable.default.link./u": "hdfs://ns/u"})
    assert conf.resolve("viewfs:///u/f") == ("hdfs://ns", "/u/f")


def test_a_cluster_without_a_mount_table_says_what_to_add():
    with pytest.raises(ClusterConfigError, match=r"viewfs://nope/ has no mount table"):
        viewfs().resolve("viewfs://nope/x")


def test_a_link_to_another_viewfs_is_followed():
    conf = viewfs(**{"fs.viewfs.mounttable.outer.link./o": "viewfs://prod/user"})
    assert conf.resolve("viewfs://outer/o/alice") == ("hdfs://prod-ns", "/user/alice")


def test_links_pointing_at_each_other_are_a_loop():
    conf = ClientConf(
        {
            "fs.viewfs.mounttable.a.link./x": "viewfs://b/x",
            "fs.viewfs.mounttable.b.link./x": "viewfs://a/x",
        }
    )
    with pytest.raises(ClusterConfigError, match="loop"):
        conf.resolve("viewfs://a/x")


@pytest.mark.parametrize("uri", ["s3a://bucket/x", "file:///tmp/x"])
def test_resolve_refuses_what_is_not_hdfs(uri):
    with pytest.raises(ClusterConfigError, match=r"not on HDFS.*hdfs:// and viewfs://"):
        viewfs().resolve(uri)


# -- delegation tokens ----------------------------------------------------------------------
def test_token_targets_of_viewfs_are_the_default_fs_and_every_mount_target():
    assert viewfs().token_targets() == ["viewfs://prod", "hdfs://prod-ns", "hdfs://other-ns"]


def test_token_targets_add_file_systems_once_and_their_viewfs_targets():
    conf = viewfs(
        **{
            "fs.viewfs.mounttable.archive.link./a": "hdfs://archive-ns/a",
            "fs.viewfs.mounttable.archive.linkFallback": "hdfs://cold-ns/",
        }
    )
    got = conf.token_targets(["hdfs://prod-ns/user/x", "viewfs://archive/", "hdfs://third:8020"])
    assert got == [
        "viewfs://prod", "hdfs://prod-ns", "hdfs://other-ns",
        "viewfs://archive", "hdfs://archive-ns", "hdfs://cold-ns", "hdfs://third:8020",
    ]  # fmt: skip


def test_token_targets_of_plain_hdfs_is_the_default_fs():
    conf = ClientConf({"fs.defaultFS": "hdfs://prod-ns"}, HA_HDFS)
    assert conf.token_targets() == ["hdfs://prod-ns"]
    assert conf.token_targets(["hdfs://prod-ns/"]) == ["hdfs://prod-ns"]


def test_a_token_target_that_is_no_uri_is_refused():
    with pytest.raises(ClusterConfigError, match=r"'/data' is not a URI"):
        viewfs().token_targets(["/data"])


def test_load_reads_a_conf_dir_and_resolves_viewfs_to_its_nameservice(tmp_path):
    def site(props: dict[str, str]) -> str:
        body = "".join(
            f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()
        )
        return f"<configuration>{body}</configuration>"

    (tmp_path / "core-site.xml").write_text(site({
        "fs.defaultFS": "viewfs://tfyarn/",
        "fs.viewfs.mounttable.tfyarn.link./user": "hdfs://ns1/user",
    }))  # fmt: skip
    conf = client_conf.load(str(tmp_path))
    assert conf.hdfs == {}
    assert conf.resolve("viewfs://tfyarn/user/alice/m") == ("hdfs://ns1", "/user/alice/m")
