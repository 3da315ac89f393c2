"""A Kerberized sandbox (``--kerberos``): its own MIT KDC and realm, and Hadoop in secure mode.

The realm :data:`REALM` lives in ``<root>/krb5``: ``krb5.conf`` and
``kdc.conf`` (what ``KRB5_CONFIG`` and ``KRB5_KDC_PROFILE`` point at; the
machine's ``/etc/krb5.conf`` is never read or written: every JVM gets
``-Djava.security.krb5.conf``), the KDC database, a keytab per service
(``nn``, ``dn``, ``rm`` and ``HTTP`` for SPNEGO, each with the service's
principal on every host that runs it; ``nm``: see :data:`HEADLESS`) and one
per user (the sandbox's own user, the administrator, and :data:`USERS`, who
get Unix accounts too). The KDC (Debian's ``krb5kdc``) listens on a loopback
port; the Debian packages are installed on first use when missing.

Hadoop's side: Kerberos authentication and service-level authorization on
RPC, SPNEGO on every web UI and WebHDFS, SASL-protected block transfers on
non-privileged ports, queue ACLs (``mallory`` may not submit to ``ml-gpu``)
and delegation tokens that live minutes, so renewal shows within a test.
Service principals map to the sandbox's user, the HDFS and YARN administrator.
The NodeManagers keep the DefaultContainerExecutor: containers run as the
sandbox's Unix user (the LinuxContainerExecutor's setuid binary is not among
Maven's jars), while YARN and HDFS see the submitting principal; see
:mod:`tfyarn_sandbox.shapes.secure_io` for what that asks of their log handling.
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from tfyarn_sandbox.config import SandboxError
from tfyarn_sandbox.daemons import command_path
from tfyarn_sandbox.site_xml import Layout, nodemanager_admin_env

REALM = "TFYARN.SANDBOX"
#: The user principals (and Unix accounts) besides the sandbox's own user.
USERS = ("alice", "mallory")
#: The services with a keytab, and the ports whose hosts run them.
SERVICE_PORTS = {
    "nn": ("namenode_rpc", "namenode2_rpc"),
    "dn": ("datanode",),
    "rm": ("rm",),
    "nm": ("nm_cpu", "nm_gpu"),
}
#: Services whose one principal has no host part. YARN's NodeManager-to-ResourceManager
#: RPC does not bind to the address of the principal's host (its protocol carries no
#: ``@KerberosInfo``), so on one machine the ResourceManager sees every NodeManager
#: come from its own address and cannot check a per-host ``nm/_HOST`` principal.
HEADLESS = ("nm",)
#: Delegation tokens (HDFS's and the ResourceManager's) expire unless renewed every two
#: minutes (the ResourceManager renews those of running applications) and die after a
#: quarter of an hour whatever happens, so a test sees both. The ResourceManager has no
#: proxy-user privileges: with them it would swap an application's HDFS tokens for new
#: ones that only the NodeManagers get, and the containers' own would lapse.
TOKEN_RENEW_MS = 2 * 60 * 1000
TOKEN_MAX_LIFETIME_MS = 15 * 60 * 1000
#: The Debian package of each command a Kerberized sandbox needs (curl: SPNEGO probes).
COMMANDS = {
    "krb5kdc": "krb5-kdc",
    "kdb5_util": "krb5-kdc",
    "kadmin.local": "krb5-admin-server",
    "kinit": "krb5-user",
    "klist": "krb5-user",
    "curl": "curl",
}


# -- files -----------------------------------------------------------------------------------
def krb_dir(root: Path) -> Path:
    return root / "krb5"


def krb5_conf_path(root: Path) -> Path:
    return krb_dir(root) / "krb5.conf"


def kdc_conf_path(root: Path) -> Path:
    return krb_dir(root) / "kdc.conf"


def keytab(root: Path, name: str) -> Path:
    """The keytab of service ``name`` (``nn``, ``HTTP``...) or of user ``name``."""
    return krb_dir(root) / "keytabs" / f"{name}.keytab"


def ccache(root: Path, user: str) -> Path:
    """The ticket cache ``env --user`` fills for ``user``."""
    return krb_dir(root) / "cc" / user


def principal(name: str, host: str | None = None) -> str:
    return f"{name}/{host}@{REALM}" if host else f"{name}@{REALM}"


def krb5_conf(kdc_port: int) -> str:
    """The realm's client configuration: this KDC only, over TCP, names taken as written."""
    return f"""[libdefaults]
    default_realm = {REALM}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 1
    ticket_lifetime = 24h
    renew_lifetime = 7d
    forwardable = true
    permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
    {REALM} = {{
        kdc = 127.0.0.1:{kdc_port}
    }}

[domain_realm]
    localhost = {REALM}
    .tfyarn.test = {REALM}
"""


def kdc_conf(root: Path, kdc_port: int) -> str:
    """The KDC's configuration: its database and log under ``root``, a loopback port."""
    db = krb_dir(root) / "db"
    return f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{kdc_port}
    kdc_tcp_listen = 127.0.0.1:{kdc_port}

[realms]
    {REALM} = {{
        database_name = {db / "principal"}
        key_stash_file = {db / "stash"}
        max_life = 24h
        max_renewable_life = 7d
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{root / "logs" / "kdc-events.log"}
"""


def jvm_opts(root: Path) -> list[str]:
    """What every JVM of (or talking to) the sandbox needs to find the realm."""
    return [f"-Djava.security.krb5.conf={krb5_conf_path(root)}"]


def tool_env(root: Path) -> dict[str, str]:
    """The environment of the MIT tools (KDC, kadmin, kinit) for this realm."""
    return {"KRB5_CONFIG": str(krb5_conf_path(root)), "KRB5_KDC_PROFILE": str(kdc_conf_path(root))}


def client_env(root: Path, user: str) -> dict[str, str]:
    """A client's Kerberos environment as ``user`` (its ticket cache, once :func:`kinit`)."""
    return {
        "KRB5_CONFIG": str(krb5_conf_path(root)),
        "KRB5CCNAME": str(ccache(root, user)),
        "SKEIN_DRIVER_JAVA_OPTIONS": " ".join(jvm_opts(root)),
    }


# -- principals ------------------------------------------------------------------------------
def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def service_principals(layout: Layout) -> dict[str, list[str]]:
    """Each service keytab's principals: the service on every host that runs it."""
    hosts = {
        service: _unique([layout.host_of(p) for p in ports if p in layout.ports])
        for service, ports in SERVICE_PORTS.items()
    }
    out = {service: [principal(service, h) for h in hs] for service, hs in hosts.items()}
    out.update({service: [principal(service)] for service in HEADLESS})
    every_host = _unique([h for hs in hosts.values() for h in hs])
    out["HTTP"] = [principal("HTTP", h) for h in every_host]
    return out


def user_principals(layout: Layout) -> dict[str, list[str]]:
    """Each user keytab's principal: the sandbox's user (the administrator) and :data:`USERS`."""
    return {user: [principal(user)] for user in _unique([layout.user, *USERS])}


def auth_to_local(user: str) -> str:
    """Service principals are ``user`` (who runs every daemon); users are their first part."""
    hosted = [s for s in (*SERVICE_PORTS, "HTTP") if s not in HEADLESS]
    rules = [f"RULE:[2:$1@$0]({s}@{REALM})s/.*/{user}/" for s in hosted]
    rules += [f"RULE:[1:$1@$0]({s}@{REALM})s/.*/{user}/" for s in HEADLESS]
    return "\n".join([*rules, "DEFAULT"])


# -- Hadoop's properties ---------------------------------------------------------------------
def core_site(layout: Layout) -> dict[str, str]:
    root, user = layout.root, layout.user
    return {
        "hadoop.security.authentication": "kerberos",
        "hadoop.security.authorization": "true",
        "hadoop.security.auth_to_local": auth_to_local(user),
        "hadoop.rpc.protection": "authentication",
        "hadoop.http.filter.initializers": (
            "org.apache.hadoop.security.AuthenticationFilterInitializer"
        ),
        "hadoop.http.authentication.type": "kerberos",
        "hadoop.http.authentication.simple.anonymous.allowed": "false",
        "hadoop.http.authentication.kerberos.principal": f"HTTP/_HOST@{REALM}",
        "hadoop.http.authentication.kerberos.keytab": str(keytab(root, "HTTP")),
        "hadoop.http.authentication.kerberos.name.rules": auth_to_local(user),
        "hadoop.http.authentication.signature.secret.file": str(krb_dir(root) / "http-secret"),
    }


def hdfs_site(layout: Layout) -> dict[str, str]:
    root = layout.root
    return {
        "dfs.block.access.token.enable": "true",
        "dfs.namenode.kerberos.principal": f"nn/_HOST@{REALM}",
        "dfs.namenode.keytab.file": str(keytab(root, "nn")),
        "dfs.namenode.kerberos.internal.spnego.principal": f"HTTP/_HOST@{REALM}",
        "dfs.web.authentication.kerberos.principal": f"HTTP/_HOST@{REALM}",
        "dfs.web.authentication.kerberos.keytab": str(keytab(root, "HTTP")),
        "dfs.datanode.kerberos.principal": f"dn/_HOST@{REALM}",
        "dfs.datanode.keytab.file": str(keytab(root, "dn")),
        # SASL on block transfers instead of privileged ports (which need jsvc and root).
        "dfs.data.transfer.protection": "authentication",
        "ignore.secure.ports.for.testing": "true",
        "dfs.http.policy": "HTTP_ONLY",
        "dfs.namenode.delegation.token.renew-interval": str(TOKEN_RENEW_MS),
        "dfs.namenode.delegation.token.max-lifetime": str(TOKEN_MAX_LIFETIME_MS),
    }


def yarn_site(layout: Layout) -> dict[str, str]:
    root = layout.root
    http = {"principal": f"HTTP/_HOST@{REALM}", "keytab-file": str(keytab(root, "HTTP"))}
    return {
        "yarn.resourcemanager.principal": f"rm/_HOST@{REALM}",
        "yarn.resourcemanager.keytab": str(keytab(root, "rm")),
        "yarn.nodemanager.principal": principal("nm"),
        "yarn.nodemanager.keytab": str(keytab(root, "nm")),
        **{f"yarn.resourcemanager.webapp.spnego-{k}": v for k, v in http.items()},
        **{f"yarn.nodemanager.webapp.spnego-{k}": v for k, v in http.items()},
        "yarn.resourcemanager.delegation.token.renew-interval": str(TOKEN_RENEW_MS),
        "yarn.resourcemanager.delegation.token.max-lifetime": str(TOKEN_MAX_LIFETIME_MS),
    }


def nodemanager_site(layout: Layout) -> dict[str, str]:
    """What containers need to find the realm: this host's krb5.conf is not the sandbox's."""
    conf = krb5_conf_path(layout.root)
    return {
        "yarn.nodemanager.admin-env": nodemanager_admin_env(
            KRB5_CONFIG=str(conf), JAVA_TOOL_OPTIONS=f"-Djava.security.krb5.conf={conf}"
        ),
    }


def queue_acls(user: str) -> dict[str, str]:
    """Submission by queue: anyone to ``default``, only ``user`` and alice to ``ml-gpu``.

    The root queue allows nobody (a single space), since a parent's ACL also
    grants its children.
    """
    q = "yarn.scheduler.capacity.root"
    return {
        f"{q}.acl_submit_applications": " ",
        f"{q}.default.acl_submit_applications": "*",
        f"{q}.ml-gpu.acl_submit_applications": f"{user},alice",
    }


def secure_files(files: MutableMapping[str, dict[str, str]], layout: Layout) -> None:
    """Lay the secure properties over a configuration folder's ``files`` (in place)."""
    files["core-site.xml"].update(core_site(layout))
    files["hdfs-site.xml"].update(hdfs_site(layout))
    files["yarn-site.xml"].update(yarn_site(layout))
    files["capacity-scheduler.xml"].update(queue_acls(layout.user))


# -- the realm -------------------------------------------------------------------------------
def _run(root: Path, *cmd: str, input: str | None = None) -> str:
    env = dict(os.environ, **tool_env(root))
    proc = subprocess.run(
        [command_path(cmd[0]), *cmd[1:]],
        capture_output=True, text=True, env=env, input=input, timeout=120,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(f"{' '.join(cmd[:2])} failed: {(proc.stderr or proc.stdout)[-2000:]}")
    return proc.stdout


def write_realm_conf(root: Path, kdc_port: int) -> None:
    """krb5.conf, kdc.conf and the web servers' signature secret (kept across starts)."""
    folder = krb_dir(root)
    for sub in ("db", "keytabs", "cc"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (root / "logs").mkdir(exist_ok=True)
    krb5_conf_path(root).write_text(krb5_conf(kdc_port))
    kdc_conf_path(root).write_text(kdc_conf(root, kdc_port))
    secret = folder / "http-secret"
    if not secret.exists():
        secret.write_text(secrets.token_hex(32))
        secret.chmod(0o600)


def create_realm(root: Path) -> None:
    """The KDC database (with a random, stashed master key) unless it exists."""
    if (krb_dir(root) / "db" / "principal").exists():
        return
    _run(root, "kdb5_util", "create", "-s", "-r", REALM, "-P", secrets.token_hex(16))


def ensure_principals(root: Path, keytabs: Mapping[str, list[str]]) -> None:
    """Create the missing principals and write the missing keytabs (keys kept: -norandkey)."""
    known = set(_run(root, "kadmin.local", "-r", REALM, "-q", "listprincs").split())
    for name, principals in keytabs.items():
        for p in principals:
            if p not in known:
                _run(root, "kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {p}")
        path = keytab(root, name)
        if not path.exists():
            query = f"ktadd -norandkey -k {path} {' '.join(principals)}"
            _run(root, "kadmin.local", "-r", REALM, "-q", query)
            path.chmod(0o600)


def ensure_unix_users(root: Path, users: tuple[str, ...] = USERS) -> None:
    """A Unix account per user (HDFS asks the system for their groups); each owns its keytab."""
    for user in users:
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            cmd = [command_path("useradd"), "--no-create-home", "--user-group", user]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SandboxError(f"useradd {user} failed: {proc.stderr}") from None
            entry = pwd.getpwnam(user)
        os.chown(keytab(root, user), entry.pw_uid, entry.pw_gid)


def start_kdc(root: Path, log: Path) -> subprocess.Popen:
    """The KDC in the foreground of its own session (its pid file under ``root``)."""
    env = dict(os.environ, **tool_env(root))
    cmd = [command_path("krb5kdc"), "-n", "-r", REALM, "-P", str(krb_dir(root) / "kdc.pid")]
    with open(log, "ab") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=root, start_new_session=True,
        )  # fmt: skip


def kinit(root: Path, user: str) -> dict[str, str]:
    """A fresh ticket for ``user`` from its keytab; the client environment that uses it."""
    env = client_env(root, user)
    proc = subprocess.run(
        [command_path("kinit"), "-kt", str(keytab(root, user)), principal(user)],
        capture_output=True, text=True, env=dict(os.environ, **env), timeout=60,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(f"kinit as {user} failed: {proc.stderr.strip()}")
    return env


def admin_env(root: Path, user: str) -> dict[str, str]:
    """The administrator's (``user``'s) client environment, with a valid ticket."""
    env = client_env(root, user)
    check = subprocess.run(
        [command_path("klist"), "-s"], env=dict(os.environ, **env), capture_output=True
    )
    return env if check.returncode == 0 else kinit(root, user)
