"""The YARN side of a launch: one skein driver, and the checks made before submitting.

Everything here asks the ResourceManager something; nothing here builds a
run. :func:`check_queue` refuses a request YARN would accept and never run
(a queue that does not exist, a label it cannot reach, a task larger than
any node) before anything is allocated.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import skein

from . import filesystem
from .spec import SpecError, TaskSpec

#: How long an interrupted submission waits for YARN's answer, to kill what it accepted.
SUBMIT_GRACE_S = 60.0

_client_lock = threading.Lock()
_client: skein.Client | None = None


def get_client() -> skein.Client:
    """One skein driver per process: starting one costs a JVM (about 2 s)."""
    global _client
    with _client_lock:
        if _client is None:
            # A clear error if HADOOP_CONF_DIR is wrong, or names a ResourceManager that is
            # not there (the driver would otherwise retry for minutes per call).
            check_resourcemanager(filesystem.read_conf("yarn-site.xml"))
            try:
                _client = skein.Client(log=False)
            except (skein.exceptions.DriverError, FileNotFoundError) as exc:
                raise filesystem.ClusterConfigError(
                    f"cannot start skein's driver ({exc}): check JAVA_HOME and that `yarn` "
                    'is on PATH (for the sandbox: eval "$(tfyarn-sandbox env)")'
                ) from exc
            weakref.finalize(_client, _client.close)
        return _client


def resourcemanager_addresses(yarn_site: Mapping[str, str]) -> list[str]:
    """``host:port`` of each ResourceManager the configuration names (several with HA)."""
    ids = [""]
    if yarn_site.get("yarn.resourcemanager.ha.enabled", "").lower() == "true":
        rm_ids = yarn_site.get("yarn.resourcemanager.ha.rm-ids", "").split(",")
        ids = [f".{i.strip()}" for i in rm_ids if i.strip()] or [""]
    out = []
    for i in ids:
        addr = yarn_site.get(f"yarn.resourcemanager.address{i}")
        if not addr:
            host = yarn_site.get(f"yarn.resourcemanager.hostname{i}", "0.0.0.0")
            addr = f"{host}:8032"
        out.append(addr)
    return out


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


def check_queue(client: skein.Client, queue: str, task_specs: Mapping[str, TaskSpec]) -> None:
    """A queue that exists and tasks that fit a node, before anything is submitted."""
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


def submit_spec(client: skein.Client, spec: skein.ApplicationSpec) -> str:
    """Submit; if interrupted while YARN was accepting it, kill what it accepted.

    skein's submit blocks in its driver; an interrupt there would lose the id
    of an application that YARN goes on to run. The call runs on a thread, so
    an interrupt of the caller waits (briefly) for the id and kills it.
    """
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["app_id"] = client.submit(spec)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=call, name="tfyarn-submit", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:
        thread.join(SUBMIT_GRACE_S)
        if "app_id" in box:
            with contextlib.suppress(Exception):
                client.kill_application(box["app_id"])
        raise
    if "error" in box:
        raise box["error"]
    return box["app_id"]
