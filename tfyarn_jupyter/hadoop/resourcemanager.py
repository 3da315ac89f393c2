"""The YARN side of a launch: one skein driver, and the checks made before submitting.

Everything here asks the ResourceManager something; nothing here builds a
run. :func:`check_queue` refuses a request YARN would accept and never run
(a queue that does not exist, a label it cannot reach, a task larger than
any node, a topology larger than the queue's maximum capacity) before
anything is allocated; :func:`queue_limits` reads the queue's figures.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import requests
import skein

from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.hadoop import capacity, filesystem, kerberos, queue_acls

#: How long an interrupted submission waits for YARN's answer, to kill what it accepted.
SUBMIT_GRACE_S = 60.0

_client_lock = threading.Lock()
_client: skein.Client | None = None


_keytab_clients: dict[tuple[str, str], skein.Client] = {}

#: The driver's JVM options where ``SKEIN_DRIVER_JAVA_OPTIONS`` sets none: it is a proxy
#: between this process and YARN that serves a few calls a second, so the JIT's first tier
#: is enough and the serial collector fits its small heap; its start takes about half the
#: CPU (5.1 s against 2.3-3.0 s here) and a second less. A JVM without these options
#: ignores them.
DRIVER_JAVA_OPTIONS = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
)


def driver_java_options(environ: Mapping[str, str]) -> list[str]:
    """The driver's JVM options: ``SKEIN_DRIVER_JAVA_OPTIONS`` as skein reads it, if set
    (even empty), else :data:`DRIVER_JAVA_OPTIONS`."""
    own = environ.get("SKEIN_DRIVER_JAVA_OPTIONS")
    return own.split() if own is not None else list(DRIVER_JAVA_OPTIONS)


def get_client(principal: str | None = None, keytab: str | None = None) -> skein.Client:
    """One skein driver per process (and one per keytab login): a driver costs a JVM (~2 s).

    With ``principal`` and ``keytab`` the driver logs in from the keytab (and renews
    its login itself), as skein allows; otherwise it uses the ticket cache or, on a
    cluster without Kerberos, the Hadoop user.
    """
    global _client
    with _client_lock:
        key = (principal, keytab) if principal and keytab else None
        found = _keytab_clients.get(key) if key else _client
        if found is not None:
            return found
        # A clear error if HADOOP_CONF_DIR is wrong, or names a ResourceManager that is
        # not there (the driver would otherwise retry for minutes per call).
        check_resourcemanager(filesystem.read_conf("yarn-site.xml"))
        login = {"principal": principal, "keytab": keytab} if key else {}
        try:
            java = driver_java_options(os.environ)
            client = skein.Client(log=False, java_options=java, **login)
        except (skein.exceptions.DriverError, FileNotFoundError) as exc:
            raise filesystem.ClusterConfigError(
                f"cannot start skein's driver ({exc}): check JAVA_HOME and that `yarn` "
                'is on PATH (for the sandbox: eval "$(tfyarn-sandbox env)")'
            ) from exc
        weakref.finalize(client, client.close)
        if key:
            _keytab_clients[key] = client
        else:
            _client = client
        return client


def _rm_addresses(yarn_site: Mapping[str, str], key: str, port: int) -> list[str]:
    """``host:port`` of ``yarn.resourcemanager.<key>`` for each ResourceManager (several
    with HA), from its hostname and ``port`` where the address is not set."""
    ids = [""]
    if yarn_site.get("yarn.resourcemanager.ha.enabled", "").lower() == "true":
        rm_ids = yarn_site.get("yarn.resourcemanager.ha.rm-ids", "").split(",")
        ids = [f".{i.strip()}" for i in rm_ids if i.strip()] or [""]
    return [
        yarn_site.get(f"yarn.resourcemanager.{key}{i}")
        or f"{yarn_site.get(f'yarn.resourcemanager.hostname{i}', '0.0.0.0')}:{port}"
        for i in ids
    ]


def resourcemanager_addresses(yarn_site: Mapping[str, str]) -> list[str]:
    """``host:port`` of each ResourceManager the configuration names (several with HA)."""
    return _rm_addresses(yarn_site, "address", 8032)


def check_resourcemanager(yarn_site: Mapping[str, str], timeout: float = 5.0) -> None:
    """Raise :class:`~.filesystem.ClusterConfigError` unless some ResourceManager accepts."""
    errors = []
    for addr in resourcemanager_addresses(yarn_site):
        host, _, port = addr.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as exc:
            errors.append(f"{addr}: {exc}")
    conf = os.environ.get("HADOOP_CONF_DIR", "?")
    raise filesystem.ClusterConfigError(
        f"cannot reach the ResourceManager ({'; '.join(errors)}): is it running? Check "
        f"yarn.resourcemanager.address in {conf}/yarn-site.xml, or set HADOOP_CONF_DIR to "
        'your cluster\'s configuration (for the sandbox: eval "$(tfyarn-sandbox env)")'
    )


def _queue_info(client: skein.Client, queue: str) -> skein.model.Queue:
    try:
        return client.get_queue(queue)
    except (ValueError, skein.exceptions.SkeinError) as exc:
        try:
            names = sorted(q.name for q in client.get_all_queues())
        except skein.exceptions.SkeinError:
            names = []
        raise SpecError(
            f"queue {queue!r} does not exist ({exc}); queues here: {', '.join(names) or '?'}"
        ) from exc


def scheduler_info() -> dict[str, Any] | None:
    """The CapacityScheduler's ``/ws/v1/cluster/scheduler`` answer (through :func:`rm_get`:
    SPNEGO on a Kerberized cluster), None when no ResourceManager web service gives it."""
    try:
        secure = kerberos.is_secure(filesystem.read_conf("core-site.xml"))
        resp = rm_get("/ws/v1/cluster/scheduler", secure)
        return resp.json() if resp.ok else None
    except Exception:  # no configuration, no web service, no ticket, not JSON: do without
        return None


def nodes_info() -> dict[str, Any] | None:
    """The ResourceManager's ``/ws/v1/cluster/nodes`` answer (each node's ``totalResource``
    with every resource type, ``yarn.io/gpu`` included), None when its web service does not
    answer: the GPU checks are then left to YARN."""
    try:
        secure = kerberos.is_secure(filesystem.read_conf("core-site.xml"))
        resp = rm_get("/ws/v1/cluster/nodes", secure)
        return resp.json() if resp.ok else None
    except Exception:  # as scheduler_info: no configuration, no web service, not JSON
        return None


def cluster_gpus() -> dict[str, int] | None:
    """Per node partition (``""`` for unlabelled nodes, ``"gpu"``...), the most GPUs any one
    running node offers as ``yarn.io/gpu``: the largest ``gpus=`` a task there can ask for.
    None when the cluster does not schedule GPUs as a resource type (or its web service does
    not answer): a task can still go to GPU nodes by their node label."""
    answer = nodes_info()
    return None if answer is None else capacity.largest_gpu_nodes(answer)


def queue_limits(
    client: skein.Client, queue: str, nodes: list[Any] | None = None
) -> dict[str, capacity.Limit]:
    """Per partition, what ``queue`` may hold and holds now: the scheduler's figures, else
    (its REST interface out of reach) skein's queue report, read leniently."""
    if nodes is None:
        nodes = client.get_nodes(states=["RUNNING"])
    totals = capacity.partition_totals(nodes)
    info = scheduler_info()
    limits = capacity.limits_from_scheduler(info, queue, totals) if info else None
    if limits:
        return limits
    q = _queue_info(client, queue)
    return capacity.limits_from_queue(q.max_capacity, q.percent_used, q.capacity,
                                      list(q.node_labels), totals)  # fmt: skip


def check_queue(client: skein.Client, queue: str, task_specs: Mapping[str, TaskSpec]) -> None:
    """A queue that exists, tasks that fit a node (their GPUs too), and a run that fits the
    queue as a whole, before anything is submitted (or uploaded)."""
    reachable = set(_queue_info(client, queue).node_labels)
    # Lost or decommissioned nodes would never run anything: count the live ones only.
    nodes = client.get_nodes(states=["RUNNING"])
    for ttype, spec in task_specs.items():
        label = spec.label.value
        if label and not reachable & {label, "*"}:
            # YARN would fail the run at allocation time; say so before submitting.
            raise SpecError(
                f"{ttype}: queue {queue!r} cannot use nodes labelled {label!r} "
                f"(it reaches: {', '.join(sorted(reachable)) or 'unlabelled nodes only'}); "
                "pick a queue that reaches them"
            )
        fits = [n for n in nodes if (label in n.labels if label else not n.labels)]
        if not fits:
            raise SpecError(f"{ttype}: no running node carries the label {label or '(none)'!r}")
        if not any(
            n.total_resources.memory >= spec.memory and n.total_resources.vcores >= spec.vcores
            for n in fits
        ):
            biggest = max(fits, key=lambda n: n.total_resources.memory).total_resources
            raise SpecError(
                f"{ttype}: {spec.memory} MiB / {spec.vcores} vcores does not fit any node "
                f"(largest: {biggest.memory} MiB / {biggest.vcores} vcores)"
            )
    if any(spec.gpus for spec in task_specs.values()):
        answer = nodes_info()
        if answer is not None:
            capacity.check_gpus(task_specs, capacity.largest_gpu_nodes(answer))
    capacity.check_fits(queue, task_specs, queue_limits(client, queue, nodes))


def submit_spec(client: skein.Client, spec: skein.ApplicationSpec) -> str:
    """Submit; if interrupted while YARN was accepting it, kill what it accepted.

    skein's submit blocks in its driver; an interrupt there would lose the id
    of an application that YARN goes on to run. The call runs on a thread, so
    an interrupt of the caller waits (briefly) for the id and kills it.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def call() -> None:
        try:
            box["app_id"] = client.submit(spec)
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    # An Event, not Thread.join: a join interrupted once marks the thread stopped
    # while it still runs, so a second join would not wait for YARN's answer.
    thread = threading.Thread(target=call, name="tfyarn-submit", daemon=True)
    try:
        thread.start()
        while not done.wait(0.05):  # short waits: an interrupt is seen here, not after
            pass
    except BaseException:
        if thread.ident is not None:  # it started: wait for YARN's answer
            done.wait(SUBMIT_GRACE_S)
        if "app_id" in box:
            with contextlib.suppress(Exception):
                client.kill_application(box["app_id"])
        raise
    if "error" in box:
        raise box["error"]
    return box["app_id"]


# -- who submits, and may they use the queue: before anything is uploaded --------------------
class RestUnavailable(RuntimeError):
    """No ResourceManager web address answered (a firewall, a proxy): skip what needed it."""


_session = requests.Session()  # keeps the hadoop.auth cookie: one SPNEGO round per RM


def rm_web_bases(yarn_site: Mapping[str, str]) -> list[str]:
    """``scheme://host:port`` of each ResourceManager's web services (HTTPS if the policy says)."""
    https = yarn_site.get("yarn.http.policy", "HTTP_ONLY").strip().upper() == "HTTPS_ONLY"
    key, port = ("webapp.https.address", 8090) if https else ("webapp.address", 8088)
    scheme = "https" if https else "http"
    return [f"{scheme}://{addr}" for addr in _rm_addresses(yarn_site, key, port)]


def rm_get(path: str, secure: bool, timeout: float = 5.0) -> requests.Response:
    """GET a ResourceManager web service as this client: SPNEGO when ``secure``, else
    ``user.name``; the first ResourceManager that answers (a standby redirects)."""
    auth = kerberos.http_auth() if secure else None
    params = {} if secure else {"user.name": filesystem.hadoop_user()}
    errors = []
    for base in rm_web_bases(filesystem.read_conf("yarn-site.xml")):
        try:
            return _session.get(f"{base}{path}", params=params, auth=auth, timeout=timeout,
                                headers={"Accept": "application/json"})  # fmt: skip
        except requests.RequestException as exc:
            errors.append(f"{base}: {exc}")
    raise RestUnavailable("; ".join(errors))


def check_identity(principal: str | None = None, keytab: str | None = None) -> str:
    """The user YARN will see; on a Kerberized cluster, a valid ticket the cluster accepts.

    Refuses (:class:`~.kerberos.CredentialsError`) no ticket or an expired one, a
    keytab that does not log in, and a principal the ResourceManager rejects.
    """
    if not kerberos.is_secure(filesystem.read_conf("core-site.xml")):
        return filesystem.hadoop_user()
    ticket = kerberos.require_ticket(principal, keytab)
    fallback = kerberos.short_name(ticket.principal)
    try:
        resp = rm_get("/ws/v1/cluster/userinfo", secure=True)
    except RestUnavailable:  # no web service in reach: YARN's RPC will tell at submission
        return fallback
    if resp.status_code in (401, 403):
        raise kerberos.CredentialsError(
            f"the ResourceManager does not accept {ticket.principal} (HTTP {resp.status_code}: "
            f"{resp.text.strip()[:200]}): is the principal known to this cluster (its realm "
            "trusted, mapped by hadoop.security.auth_to_local)? Ask the cluster's admin"
        )
    with contextlib.suppress(ValueError, AttributeError):
        return str(resp.json().get("requestedUser") or fallback)
    return fallback


def local_groups(user: str) -> list[str]:
    """The groups this machine knows ``user`` in (the cluster may know more)."""
    import grp
    import pwd

    try:
        gids = os.getgrouplist(user, pwd.getpwnam(user).pw_gid)
    except KeyError:
        return []
    return [g.gr_name for g in grp.getgrall() if g.gr_gid in gids]


def check_queue_access(queue: str, user: str) -> None:
    """Refuse (:class:`SpecError`) a queue whose ACLs (its own and its ancestors') deny ``user``.

    Only a certain refusal is raised: ACLs off, a scheduler that does not report
    them, an unreachable web service or a group the client cannot check leave the
    decision to YARN at submission.
    """
    yarn_site = filesystem.read_conf("yarn-site.xml")
    if yarn_site.get("yarn.acl.enable", "false").strip().lower() != "true":
        return
    secure = kerberos.is_secure(filesystem.read_conf("core-site.xml"))
    try:
        resp = rm_get("/ws/v1/cluster/scheduler", secure=secure)
        report = resp.json() if resp.ok else {}
    except (RestUnavailable, ValueError):
        return
    groups = local_groups(user)
    decision = queue_acls.decide(report, queue, user, groups)
    if decision.allowed is False:
        usable = queue_acls.allowed_queues(report, user, groups)
        raise SpecError(
            f"{decision.explain(user, queue)}; nothing was submitted. Use a queue open to "
            f"{user} ({', '.join(usable) or 'none'}) or ask the queue's admin for access"
        )


def preflight(principal: str | None, keytab: str | None, queue: str) -> str:
    """The identity and queue checks ``submit`` makes first; the user YARN will see."""
    user = check_identity(principal, keytab)
    check_queue_access(queue, user)
    return user
