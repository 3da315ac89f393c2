"""The Kerberized sandbox's realm and secure-mode properties (tfyarn_sandbox.shapes.kerberos).

Pure data from a Layout, and the realm's files written into ``tmp_path``; no KDC.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tfyarn_sandbox.shapes import kerberos as krb
from tfyarn_sandbox.shapes.shape import Shape, default_host, host_plan, port_hosts, port_names
from tfyarn_sandbox.site_xml import Layout

REALM = krb.REALM


def layout_of(root: Path, shape: Shape, user: str = "root") -> Layout:
    ports = {name: 46000 + i for i, name in enumerate(port_names(shape))}
    plan = host_plan(shape, 2) if shape.hosts else {}
    return Layout(root, Path("/lib"), ports, user, default_host(shape), port_hosts(plan))


def test_krb5_conf_names_only_this_realm_and_kdc():
    text = krb.krb5_conf(8899)
    assert f"default_realm = {REALM}" in text
    assert "kdc = 127.0.0.1:8899" in text
    assert "udp_preference_limit = 1" in text  # TCP: one port to find free
    assert "dns_lookup_kdc = false" in text and "rdns = false" in text
    assert re.findall(r"^\s*(\S+) = \{", text, re.MULTILINE) == [REALM]


def test_kdc_conf_keeps_everything_under_the_sandbox(tmp_path):
    text = krb.kdc_conf(tmp_path, 8899)
    assert "kdc_listen = 127.0.0.1:8899" in text and "kdc_tcp_listen = 127.0.0.1:8899" in text
    assert f"database_name = {tmp_path}/krb5/db/principal" in text
    assert f"kdc = FILE:{tmp_path}/logs/kdc-events.log" in text
    assert "/etc/" not in text


def test_service_principals_on_one_host(tmp_path):
    principals = krb.service_principals(layout_of(tmp_path, Shape(kerberos=True)))
    assert principals == {
        "nn": [f"nn/localhost@{REALM}"],
        "dn": [f"dn/localhost@{REALM}"],
        "rm": [f"rm/localhost@{REALM}"],
        "nm": [f"nm@{REALM}"],
        "HTTP": [f"HTTP/localhost@{REALM}"],
    }


def test_service_principals_on_hosts_of_their_own(tmp_path):
    principals = krb.service_principals(layout_of(tmp_path, Shape(True, True, True, True)))
    assert principals["nn"] == [f"nn/nn1.s2.tfyarn.test@{REALM}", f"nn/nn2.s2.tfyarn.test@{REALM}"]
    assert principals["nm"] == [f"nm@{REALM}"]  # see HEADLESS
    hosts = ["nn1", "nn2", "dn", "rm", "nm-cpu", "nm-gpu"]
    assert principals["HTTP"] == [f"HTTP/{h}.s2.tfyarn.test@{REALM}" for h in hosts]


@pytest.mark.parametrize(
    ("user", "names"), [("root", ["root", "alice", "mallory"]), ("alice", ["alice", "mallory"])]
)
def test_user_principals(tmp_path, user, names):
    got = krb.user_principals(layout_of(tmp_path, Shape(kerberos=True), user))
    assert got == {n: [f"{n}@{REALM}"] for n in names}


def test_auth_to_local_maps_services_to_the_admin_and_users_to_themselves():
    rules = krb.auth_to_local("root").splitlines()
    assert rules[-1] == "DEFAULT"
    assert f"RULE:[2:$1@$0](nn@{REALM})s/.*/root/" in rules
    assert f"RULE:[2:$1@$0](HTTP@{REALM})s/.*/root/" in rules
    assert f"RULE:[1:$1@$0](nm@{REALM})s/.*/root/" in rules
    assert not any("alice" in r or "mallory" in r for r in rules)


def test_secure_properties(tmp_path):
    layout = layout_of(tmp_path, Shape(kerberos=True))
    core, hdfs, yarn = krb.core_site(layout), krb.hdfs_site(layout), krb.yarn_site(layout)
    assert core["hadoop.http.authentication.type"] == "kerberos"
    assert core["hadoop.http.authentication.simple.anonymous.allowed"] == "false"
    assert (
        core["hadoop.http.authentication.kerberos.keytab"] == f"{tmp_path}/krb5/keytabs/HTTP.keytab"
    )
    assert hdfs["dfs.block.access.token.enable"] == "true"
    assert hdfs["ignore.secure.ports.for.testing"] == "true"
    assert hdfs["dfs.datanode.keytab.file"] == f"{tmp_path}/krb5/keytabs/dn.keytab"
    assert yarn["yarn.nodemanager.principal"] == f"nm@{REALM}"
    for props, prefix in ((hdfs, "dfs.namenode"), (yarn, "yarn.resourcemanager")):
        renew = int(props[f"{prefix}.delegation.token.renew-interval"])
        life = int(props[f"{prefix}.delegation.token.max-lifetime"])
        assert 60_000 <= renew < life <= 30 * 60_000  # minutes, so a test sees both


def test_queue_acls_keep_mallory_out_of_ml_gpu():
    acls = krb.queue_acls("root")
    submitters = acls["yarn.scheduler.capacity.root.ml-gpu.acl_submit_applications"]
    assert "mallory" not in submitters and "alice" in submitters.split(",")
    assert acls["yarn.scheduler.capacity.root.acl_submit_applications"] == " "
    assert acls["yarn.scheduler.capacity.root.default.acl_submit_applications"] == "*"


def test_clients_find_the_realm_and_their_ticket(tmp_path):
    env = krb.client_env(tmp_path, "alice")
    assert env == {
        "KRB5_CONFIG": f"{tmp_path}/krb5/krb5.conf",
        "KRB5CCNAME": f"{tmp_path}/krb5/cc/alice",
        "SKEIN_DRIVER_JAVA_OPTIONS": f"-Djava.security.krb5.conf={tmp_path}/krb5/krb5.conf",
    }
    assert krb.tool_env(tmp_path)["KRB5_KDC_PROFILE"] == f"{tmp_path}/krb5/kdc.conf"
    assert krb.jvm_opts(tmp_path) == [f"-Djava.security.krb5.conf={tmp_path}/krb5/krb5.conf"]


def test_realm_files_are_rewritten_but_the_http_secret_is_kept(tmp_path):
    krb.write_realm_conf(tmp_path, 1111)
    secret = (tmp_path / "krb5" / "http-secret").read_text()
    krb.write_realm_conf(tmp_path, 2222)
    assert "127.0.0.1:2222" in (tmp_path / "krb5" / "krb5.conf").read_text()
    assert "127.0.0.1:2222" in (tmp_path / "krb5" / "kdc.conf").read_text()
    assert (tmp_path / "krb5" / "http-secret").read_text() == secret
    assert (tmp_path / "krb5" / "http-secret").stat().st_mode & 0o777 == 0o600
    for sub in ("db", "keytabs", "cc"):
        assert (tmp_path / "krb5" / sub).is_dir()
