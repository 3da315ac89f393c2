"""Who the client is on a Kerberized cluster: is it secure, which ticket, a keytab login.

The pure parts read plain values (``core-site.xml`` as a dict, ``klist``'s
text, ``kinit``'s error text) and are unit-tested on them; the thin I/O asks
GSSAPI (the ``gssapi`` package, installed with ``tfyarn_jupyter[kerberos]``)
or, without it, ``klist``. Every refusal is a :class:`CredentialsError` whose
message says what to run (``kinit``, or ``principal=``/``keytab=``), raised
before anything is uploaded or allocated.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from tfyarn_jupyter.core.spec import SpecError

#: klist's date forms in the C locale (two- or four-digit years) and ISO 8601.
_KLIST_DATES = ("%m/%d/%y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S")
_TGT = re.compile(r"^krbtgt/([^@\s]+)@(\S+)$")
#: A ticket with less left than this is renewed from the keytab before a launch.
RELOGIN_MARGIN_S = 600.0


class CredentialsError(SpecError):
    """No usable Kerberos identity: the message says to ``kinit`` or to pass a keytab."""


@dataclasses.dataclass(frozen=True)
class Ticket:
    """The ticket cache's default principal and when its ticket-granting ticket expires."""

    principal: str
    expires: float | None  # epoch seconds; None: no ticket-granting ticket in the cache

    def expired(self, now: float | None = None) -> bool:
        return self.expires is None or self.expires <= (time.time() if now is None else now)

    @property
    def realm(self) -> str:
        return self.principal.rpartition("@")[2]


def is_secure(core_site: Mapping[str, str]) -> bool:
    """Hadoop's own switch: ``hadoop.security.authentication=kerberos``."""
    return core_site.get("hadoop.security.authentication", "simple").strip().lower() == "kerberos"


def short_name(principal: str) -> str:
    """``alice@REALM`` or ``alice/host@REALM`` to ``alice`` (Hadoop's DEFAULT rule)."""
    return principal.partition("@")[0].partition("/")[0]


def same_principal(actual: str, wanted: str) -> bool:
    """``wanted`` names ``actual``: equal, or equal but for the (default) realm left out."""
    return wanted in (actual, actual.rpartition("@")[0]) if actual else False


def _klist_time(text: str) -> float | None:
    for fmt in _KLIST_DATES:
        try:
            return datetime.strptime(text, fmt).timestamp()
        except ValueError:
            continue
    return None


def parse_klist(text: str) -> Ticket | None:
    """The default principal and its realm's TGT expiry from ``klist`` (C locale) output."""
    principal = ""
    expires: float | None = None
    for line in text.splitlines():
        if line.startswith("Default principal:"):
            principal = line.split(":", 1)[1].strip()
            continue
        words = line.split()
        m = _TGT.match(words[-1]) if len(words) in (3, 5) else None
        if m and principal and m.group(1) == principal.rpartition("@")[2]:
            dates = words[:-1]  # valid-from and expires: "date time" each, or ISO words
            expires = _klist_time(" ".join(dates[len(dates) // 2 :]))
    return Ticket(principal, expires) if principal else None


def kinit_failure(principal: str, keytab: str, stderr: str) -> str:
    """What a failed keytab login means, in words that say what to do."""
    text = stderr.strip()
    realm = principal.rpartition("@")[2] or "the default realm"
    if "not found in Kerberos database" in text:
        return (f"principal {principal} is unknown to the KDC of {realm} (kinit: {text}); "
                "check its spelling, or ask the cluster's admin to create it")  # fmt: skip
    if any(m in text for m in ("Key table entry not found", "No key table entry",
                               "contains no suitable keys")):  # fmt: skip
        return (f"keytab {keytab} holds no key for {principal} (kinit: {text}); see its "
                f"principals with `klist -k {keytab}`")  # fmt: skip
    if "Preauthentication failed" in text or "Password incorrect" in text:
        return (f"the key for {principal} in {keytab} is out of date (kinit: {text}); "
                "get a fresh keytab")  # fmt: skip
    return f"cannot log in as {principal} with {keytab}: {text or 'kinit failed'}"


def no_ticket_message(ticket: Ticket | None, cache: str, now: float | None = None) -> str | None:
    """Why ``ticket`` cannot be used (None when it can): what to run to get one."""
    if ticket is None:
        return (f"no Kerberos ticket (ticket cache {cache or 'default'}): run `kinit` "
                "(e.g. `kinit you@REALM`), or launch with principal= and keytab=")  # fmt: skip
    if ticket.expired(now):
        when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ticket.expires))
                if ticket.expires else "?")  # fmt: skip
        return (f"the Kerberos ticket of {ticket.principal} expired at {when} (ticket cache "
                f"{cache or 'default'}): run `kinit {ticket.principal}`, or launch with "
                "principal= and keytab=")  # fmt: skip
    return None


# -- I/O -------------------------------------------------------------------------------------
def _klist(env: Mapping[str, str] | None = None) -> Ticket | None:
    exe = shutil.which("klist")
    if exe is None:
        return None
    proc = subprocess.run(
        [exe], capture_output=True, text=True, timeout=30,
        env={**(env if env is not None else os.environ), "LC_ALL": "C"},
    )  # fmt: skip
    return parse_klist(proc.stdout) if proc.returncode == 0 else None


def current_ticket() -> Ticket | None:
    """This process's ticket (``KRB5CCNAME``): GSSAPI's view, else ``klist``'s; None if none."""
    try:
        import gssapi
        from gssapi.raw import exceptions as gss_errors
    except ImportError:
        return _klist()
    try:
        creds = gssapi.Credentials(usage="initiate")
        return Ticket(str(creds.name), time.time() + (creds.lifetime or 0))
    except gss_errors.ExpiredCredentialsError:
        known = _klist()  # GSSAPI knows it expired; klist says whose and when
        when = min(known.expires or 0.0, time.time()) if known else 0.0
        return Ticket(known.principal if known else "?", when)
    except gssapi.exceptions.GSSError:
        return None


def keytab_cache(principal: str, keytab: str) -> Path:
    """A ticket cache of this process's own for ``principal`` (never the user's default).

    Named by the principal and the keytab's path, then by the keytab file's version
    (inode, size, time): a keytab written anew at the same path (a re-keyed principal,
    a rebuilt cluster or KDC) gets a new cache, never the tickets logged in from the
    old one, whose service tickets that cluster's daemons cannot decrypt.
    """
    path = Path(keytab).resolve()
    name = hashlib.sha256(f"{principal}\0{path}".encode()).hexdigest()[:12]
    try:
        st = path.stat()
        stamp = f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        stamp = "missing"
    version = hashlib.sha256(stamp.encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"tfyarn_krb5cc_{os.getuid()}_{name}_{version}"


def _remove_older_caches(cache: Path) -> None:
    """Drop the caches of earlier versions of the same principal's keytab, and the one
    cache tfyarn_jupyter named by principal and path alone before versions counted."""
    stem = cache.name.rsplit("_", 1)[0]
    for old in [cache.parent / stem, *cache.parent.glob(f"{stem}_*")]:
        if old != cache:
            with contextlib.suppress(OSError):
                old.unlink()


def login_keytab(principal: str, keytab: str) -> Ticket:
    """Log in from ``keytab`` into a private cache and make it this process's (``KRB5CCNAME``).

    Skipped while that cache still holds a ticket for ``principal`` valid beyond
    :data:`RELOGIN_MARGIN_S`; HDFS, SPNEGO and a skein driver started afterwards use it.
    """
    if not Path(keytab).is_file() or not os.access(keytab, os.R_OK):
        raise CredentialsError(f"keytab {keytab!r} is not a readable file")
    cache = keytab_cache(principal, keytab)
    env = {**os.environ, "KRB5CCNAME": f"FILE:{cache}"}
    known = _klist(env) if cache.exists() else None
    fresh = time.time() + RELOGIN_MARGIN_S
    if not (known and same_principal(known.principal, principal) and not known.expired(fresh)):
        exe = shutil.which("kinit")
        if exe is None:
            raise CredentialsError("keytab= needs MIT Kerberos' kinit on PATH (krb5-user)")
        proc = subprocess.run([exe, "-kt", keytab, principal], capture_output=True, text=True,
                              env=env, timeout=60)  # fmt: skip
        if proc.returncode != 0:
            raise CredentialsError(kinit_failure(principal, keytab, proc.stderr or proc.stdout))
        _remove_older_caches(cache)
    os.environ["KRB5CCNAME"] = f"FILE:{cache}"
    ticket = current_ticket()
    if ticket is None or not same_principal(ticket.principal, principal):
        raise CredentialsError(f"logged in from {keytab} but no ticket for {principal} in {cache}")
    return ticket


def require_ticket(principal: str | None = None, keytab: str | None = None) -> Ticket:
    """A valid ticket for this process (from ``keytab`` if given); else CredentialsError."""
    if keytab:
        if not principal:
            raise CredentialsError(f"keytab={keytab!r} needs principal= (see `klist -k {keytab}`)")
        return login_keytab(principal, keytab)
    ticket = current_ticket()
    why = no_ticket_message(ticket, os.environ.get("KRB5CCNAME", ""))
    if why:
        raise CredentialsError(why)
    assert ticket is not None
    if principal and not same_principal(ticket.principal, principal):
        raise CredentialsError(
            f"principal={principal!r} but the ticket cache holds {ticket.principal}: run "
            f"`kinit {principal}`, or pass keytab= to log in as {principal}"
        )
    return ticket


def http_auth() -> Any:
    """requests' SPNEGO handler for this process's ticket (needs ``tfyarn_jupyter[kerberos]``)."""
    try:
        from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth
    except ImportError as exc:
        raise CredentialsError(
            "this cluster uses Kerberos: install the SPNEGO client with "
            "`pip install 'tfyarn_jupyter[kerberos]'` (requests-gssapi)"
        ) from exc
    return HTTPSPNEGOAuth(mutual_authentication=OPTIONAL)
