"""Who the client is on a Kerberized cluster: the pure parts, on plain text and dicts.

The I/O (GSSAPI, klist, kinit) runs against the secure sandbox's KDC in
tests/integration/test_secure_client.py.
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.hadoop import kerberos
from tfyarn_jupyter.hadoop.kerberos import CredentialsError, Ticket

KLIST = """\
Ticket cache: FILE:/tmp/krb5cc_0
Default principal: alice@EXAMPLE.ORG

Valid starting     Expires            Service principal
12/03/26 14:01:51  12/04/26 14:01:51  krbtgt/EXAMPLE.ORG@EXAMPLE.ORG
\trenew until 12/10/26 14:01:51
12/03/26 14:02:00  12/04/26 14:01:51  HTTP/rm.example.org@EXAMPLE.ORG
"""


def ts(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").timestamp()


@pytest.mark.parametrize(
    ("value", "secure"),
    [("kerberos", True), ("Kerberos ", True), ("simple", False), (None, False)],
)
def test_is_secure_reads_hadoops_own_switch(value, secure):
    core = {} if value is None else {"hadoop.security.authentication": value}
    assert kerberos.is_secure(core) is secure


@pytest.mark.parametrize(
    ("principal", "short"),
    [("alice@EXAMPLE.ORG", "alice"), ("svc/host.example.org@EXAMPLE.ORG", "svc"), ("bob", "bob")],
)
def test_short_name_is_hadoops_default_rule(principal, short):
    assert kerberos.short_name(principal) == short


def test_parse_klist_takes_the_default_principal_and_its_realms_tgt():
    ticket = kerberos.parse_klist(KLIST)
    assert ticket == Ticket("alice@EXAMPLE.ORG", ts("2026-12-04 14:01:51"))
    assert ticket.realm == "EXAMPLE.ORG"
    assert not ticket.expired(ts("2026-12-04 14:01:50"))
    assert ticket.expired(ts("2026-12-04 14:01:51"))


@pytest.mark.parametrize(
    "dates",
    [
        "12/03/2026 14:01:51  12/04/2026 14:01:51",  # four-digit years
        "2026-12-03T14:01:51  2026-12-04T14:01:51",  # ISO 8601
    ],
)
def test_parse_klist_reads_other_date_forms(dates):
    text = KLIST.replace("12/03/26 14:01:51  12/04/26 14:01:51", dates)
    assert kerberos.parse_klist(text).expires == ts("2026-12-04 14:01:51")


def test_parse_klist_without_a_tgt_or_principal():
    service_only = "\n".join(ln for ln in KLIST.splitlines() if "krbtgt" not in ln)
    assert kerberos.parse_klist(service_only) == Ticket("alice@EXAMPLE.ORG", None)
    assert kerberos.parse_klist(service_only).expired()
    assert kerberos.parse_klist("klist: No credentials cache found") is None
    assert kerberos.parse_klist("") is None


def test_a_cross_realm_tgt_is_not_the_users_own():
    other = KLIST.replace("krbtgt/EXAMPLE.ORG@EXAMPLE.ORG", "krbtgt/OTHER.ORG@EXAMPLE.ORG")
    assert kerberos.parse_klist(other).expires is None


def test_no_ticket_says_kinit_or_keytab():
    why = kerberos.no_ticket_message(None, "FILE:/tmp/cc")
    assert "no Kerberos ticket" in why and "FILE:/tmp/cc" in why
    assert "`kinit`" in why and "keytab=" in why


def test_an_expired_ticket_names_the_principal_to_kinit():
    ticket = Ticket("alice@EXAMPLE.ORG", time.time() - 60)
    why = kerberos.no_ticket_message(ticket, "/tmp/cc")
    assert "expired" in why and "`kinit alice@EXAMPLE.ORG`" in why
    fresh = Ticket("alice@EXAMPLE.ORG", time.time() + 3600)
    assert kerberos.no_ticket_message(fresh, "/tmp/cc") is None


@pytest.mark.parametrize(
    ("stderr", "says"),
    [
        (
            "kinit: Client 'ghost@EXAMPLE.ORG' not found in Kerberos database while getting "
            "initial credentials",
            "unknown to the KDC of EXAMPLE.ORG",
        ),
        (
            "kinit: Keytab contains no suitable keys for ghost@EXAMPLE.ORG while getting "
            "initial credentials",
            "holds no key for ghost@EXAMPLE.ORG",
        ),
        ("kinit: Preauthentication failed while getting initial credentials", "out of date"),
        ("kinit: Cannot contact any KDC for realm 'EXAMPLE.ORG'", "cannot log in as ghost"),
    ],
)
def test_kinit_failures_say_what_is_wrong(stderr, says):
    message = kerberos.kinit_failure("ghost@EXAMPLE.ORG", "/k/ghost.keytab", stderr)
    assert says in message
    assert stderr.strip() in message


def test_credentials_errors_are_spec_errors_so_the_magic_shows_them_plainly():
    assert issubclass(CredentialsError, SpecError)


def test_a_keytab_needs_a_principal_and_must_be_readable(tmp_path):
    with pytest.raises(CredentialsError, match="needs principal="):
        kerberos.require_ticket(None, str(tmp_path / "k.keytab"))
    with pytest.raises(CredentialsError, match="not a readable file"):
        kerberos.require_ticket("a@B", str(tmp_path / "missing.keytab"))


def test_a_keytab_written_anew_at_the_same_path_gets_a_new_cache(tmp_path):
    # A rebuilt cluster or re-keyed principal: the old cache's service tickets are useless.
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"keys of the first KDC")
    first = kerberos.keytab_cache("alice@R", str(keytab))
    assert first == kerberos.keytab_cache("alice@R", str(keytab))
    keytab.unlink()
    keytab.write_bytes(b"keys of the second KDC, longer")
    second = kerberos.keytab_cache("alice@R", str(keytab))
    assert second != first
    assert second.name.rsplit("_", 1)[0] == first.name.rsplit("_", 1)[0]


def test_logging_in_from_a_new_keytab_removes_the_old_versions_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(kerberos.tempfile, "gettempdir", lambda: str(tmp_path))
    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"old")
    old = kerberos.keytab_cache("alice@R", str(keytab))
    old.write_bytes(b"tickets from the old KDC")
    other = kerberos.keytab_cache("bob@R", str(keytab))
    other.write_bytes(b"bob's")
    keytab.unlink()
    keytab.write_bytes(b"new keys")
    new = kerberos.keytab_cache("alice@R", str(keytab))
    new.write_bytes(b"fresh")
    unversioned = new.parent / new.name.rsplit("_", 1)[0]  # named before versions counted
    unversioned.write_bytes(b"tickets of an earlier tfyarn_jupyter")
    kerberos._remove_older_caches(new)
    assert not old.exists() and not unversioned.exists()
    assert new.exists() and other.exists()


def test_keytab_caches_are_private_to_principal_and_keytab(tmp_path):
    a = kerberos.keytab_cache("a@B", str(tmp_path / "k"))
    assert a == kerberos.keytab_cache("a@B", str(tmp_path / "k"))
    assert a != kerberos.keytab_cache("c@B", str(tmp_path / "k"))
    assert a != kerberos.keytab_cache("a@B", str(tmp_path / "other"))


# -- the launch keywords -----------------------------------------------------------------------
def test_launch_options_take_a_principal_and_a_keytab(tmp_path):
    from tfyarn_jupyter.core.options import LaunchOptions

    keytab = tmp_path / "alice.keytab"
    keytab.write_bytes(b"\x05\x02")
    opts = LaunchOptions(principal="alice@EXAMPLE.ORG", keytab=str(keytab))
    assert (opts.principal, opts.keytab) == ("alice@EXAMPLE.ORG", str(keytab))
    assert LaunchOptions.from_keywords({"principal": "alice"}).keytab is None


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"keytab": "KT"}, "needs principal="),
        ({"principal": "a@B", "keytab": "/no/such.keytab"}, "not a readable file"),
        ({"principal": "alice smith@B"}, "must be a Kerberos principal"),
        ({"principal": ""}, "must be a Kerberos principal"),
    ],
)
def test_launch_options_refuse_a_bad_login(tmp_path, keywords, says):
    from tfyarn_jupyter.core.options import LaunchOptions

    if keywords.get("keytab") == "KT":
        keywords = {"keytab": str(tmp_path / "k.keytab")}
        (tmp_path / "k.keytab").write_bytes(b"")
    with pytest.raises(SpecError, match=says):
        LaunchOptions.from_keywords(keywords)


def test_a_principal_may_leave_out_its_realm():
    assert kerberos.same_principal("alice@EXAMPLE.ORG", "alice@EXAMPLE.ORG")
    assert kerberos.same_principal("alice@EXAMPLE.ORG", "alice")
    assert not kerberos.same_principal("alice@EXAMPLE.ORG", "alice@OTHER.ORG")
    assert not kerberos.same_principal("alice@EXAMPLE.ORG", "bob")
    assert not kerberos.same_principal("", "alice")
