"""A task's logs: live from its NodeManager while it runs, else as YARN aggregated them.

Live logs come from the NodeManager's REST API (SPNEGO on a Kerberized
cluster, HTTPS when its policy says so); aggregated ones through ``yarn logs``,
which knows every aggregation format and uses the ticket cache. Parsing both is pure
(:func:`parse_yarn_logs`, :func:`live_log_names`, :func:`split_streams`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import requests

from tfyarn_jupyter.core.state import ContainerInfo
from tfyarn_jupyter.hadoop import filesystem, kerberos

#: The NodeManager's own debugging files in a container's log folder: not the task's output.
DEBUG_LOGS = frozenset({"directory.info", "launch_container.sh"})

#: How long ``aggregated`` waits for YARN to finish aggregating an ended application's logs.
AGGREGATION_WAIT_S = 60.0
#: The bounds on reading a failed task's stderr for its last error (:func:`error_line_of`):
#: each HTTP call to its node, and, once its node has let them go (about 2 s after the
#: application ended, on the sandbox), the wait for YARN's aggregation (about 5 s there)
#: and the one ``yarn logs`` call under way then.
ERROR_LOG_LIVE_S = 5.0
ERROR_LOG_TIMEOUT_S = 15.0
#: How much of the end of a failed task's logs is read, and the longest line quoted.
ERROR_LOG_TAIL = 16384
ERROR_LINE_CHARS = 400
#: A line that says what went wrong: an exception's last line (``KeyError: 'x'``, a dotted
#: ``tensorflow...NotFoundError: ...``), ``python -m``'s own ``No module named ...`` (with
#: its ``Error while finding module specification`` prefix), or the service script's own
#: ``tfyarn: ...`` messages (``tfyarn_jupyter/container/sh/service.sh``).
_ERROR_LINE = re.compile(
    r"^\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s|$)"
    r"|No module named |^tfyarn: "
)


@dataclasses.dataclass(frozen=True)
class TaskLogs:
    """One container's logs: stdout (skein's ``<service>.log``), stderr, and every file."""

    source: str  # "live" or "aggregated"
    stdout: str
    stderr: str
    files: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "stdout": self.stdout, "stderr": self.stderr,
                "files": dict(self.files)}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class NodeAccess:
    """How to call a NodeManager's REST API: the scheme, the query's identity, SPNEGO or not."""

    scheme: str
    params: Mapping[str, str]
    spnego: bool


def node_access(
    core_site: Mapping[str, str], yarn_site: Mapping[str, str], user: str
) -> NodeAccess:
    """SPNEGO (and no ``user.name``) on a Kerberized cluster; HTTPS when ``yarn.http.policy``
    is ``HTTPS_ONLY`` (the node's web address YARN reports is then its HTTPS one)."""
    https = yarn_site.get("yarn.http.policy", "HTTP_ONLY").strip().upper() == "HTTPS_ONLY"
    secure = kerberos.is_secure(core_site)
    return NodeAccess("https" if https else "http", {} if secure else {"user.name": user}, secure)


def live(c: ContainerInfo, user: str, tail: int, timeout: float = 10.0) -> dict[str, str]:
    """The tail of each log file of a running container, from its NodeManager (``timeout``:
    each HTTP call's)."""
    access = node_access(
        filesystem.read_conf("core-site.xml"), filesystem.read_conf("yarn-site.xml"), user
    )
    base = f"{access.scheme}://{c.node_http}/ws/v1/node"
    params = dict(access.params)
    session = requests.Session()  # one SPNEGO round, then the hadoop.auth cookie
    session.auth = kerberos.http_auth() if access.spnego else None
    resp = session.get(
        f"{base}/containers/{c.container_id}/logs",
        params=params,
        headers={"Accept": "application/json"},
        timeout=timeout,
    )
    if not resp.ok:  # e.g. 503 "User [x] is not authorized to view the logs": say it
        raise requests.HTTPError(
            f"{c.node_http} answered {resp.status_code}: {remote_message(resp.text)}", response=resp
        )
    names = [n for n in live_log_names(resp.json()) if n not in DEBUG_LOGS]
    files = {}
    for name in names:
        r = session.get(
            f"{base}/containerlogs/{c.container_id}/{name}",
            params={**params, "size": str(-tail)},
            timeout=timeout,
        )
        if r.ok:  # the NodeManager frames the file as `yarn logs` does
            files[name] = parse_yarn_logs(r.text).get(name, r.text)
        else:
            files[name] = f"(log unavailable: HTTP {r.status_code})"
    return files


def aggregated(
    app_id: str,
    c: ContainerInfo,
    user: str,
    tail: int,
    wait_s: float = AGGREGATION_WAIT_S,
    call_timeout_s: float = 120.0,
) -> dict[str, str]:
    """The tail of each log file of an ended container, once YARN aggregated them (asking
    again for up to ``wait_s``; each ``yarn logs`` at most ``call_timeout_s``)."""
    cmd = ["yarn", "logs", "-applicationId", app_id, "-containerId", c.container_id,
           "-size", str(-tail)] + (["-appOwner", user] if user else [])  # fmt: skip
    deadline = time.monotonic() + wait_s
    while True:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=call_timeout_s)
        files = parse_yarn_logs(proc.stdout)
        if files or time.monotonic() > deadline:
            break
        time.sleep(2)  # aggregation finishes a few seconds after the application
    if not files:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(
            f"no logs of {c.container_id} yet ({' '.join(why) or 'yarn logs printed nothing'})"
        )
    return files


def remote_message(text: str) -> str:
    """The message of a Hadoop web service's error (its ``RemoteException`` JSON, else text)."""
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        return str(json.loads(text)["RemoteException"]["message"])
    return text.strip()[:300] or "(no message)"


def live_log_names(listing: Any) -> list[str]:
    """File names in a NodeManager's ``/containers/<id>/logs`` answer (one or many dirs)."""
    entries = listing if isinstance(listing, list) else [listing]
    names: list[str] = []
    for entry in entries:
        info = entry.get("containerLogsInfo", entry) if isinstance(entry, dict) else {}
        files = info.get("containerLogInfo", []) if isinstance(info, dict) else []
        for f in files if isinstance(files, list) else [files]:
            name = f.get("fileName") if isinstance(f, dict) else None
            if name and name not in names:
                names.append(name)
    return names


def parse_yarn_logs(text: str) -> dict[str, str]:
    """``{file name: contents}`` from the output of ``yarn logs -containerId``."""
    files: dict[str, list[str]] = {}
    current: str | None = None
    in_contents = False
    for line in text.splitlines(keepends=True):
        if current is None:
            if line.startswith("LogType:"):
                current = line.split(":", 1)[1].strip()
                files.setdefault(current, [])
        elif not in_contents:
            in_contents = line.startswith("LogContents:")
        elif line.startswith("End of LogType:"):
            current, in_contents = None, False
        else:
            files[current].append(line)
    # yarn prints one blank line between a file's contents and its end marker.
    texts = {name: "".join(lines) for name, lines in files.items() if name not in DEBUG_LOGS}
    return {name: t[:-1] if t.endswith("\n") else t for name, t in texts.items()}


def split_streams(files: Mapping[str, str], source: str, service: str) -> TaskLogs:
    """The panel's view of a container's log files: stdout, stderr and all of them."""
    stdout = files.get(f"{service}.log", files.get("stdout", ""))
    return TaskLogs(source=source, stdout=stdout, stderr=files.get("stderr", ""),
                    files=dict(files))  # fmt: skip


def last_error_line(text: str, limit: int = ERROR_LINE_CHARS) -> str | None:
    """The last line of a log that says what went wrong (see ``_ERROR_LINE``), at most
    ``limit`` characters (its end, where the message is); None when no line does."""
    for line in reversed(text.splitlines()):
        if _ERROR_LINE.search(line):
            line = line.strip()
            return line if len(line) <= limit else "..." + line[-(limit - 3) :]
    return None


def error_line_of(
    app_id: str, c: ContainerInfo, user: str, timeout_s: float = ERROR_LOG_TIMEOUT_S
) -> str | None:
    """The last error line of a failed container's stderr (else its service's log), or None.

    One read: from its NodeManager, which keeps an ended container's logs for a moment
    after its application ends, else as YARN aggregated them, waiting at most
    ``timeout_s`` for that (and ``timeout_s`` for the call under way). Reading logs
    never fails a caller: None when they cannot be read.
    """
    service = c.task.partition(":")[0]
    files: dict[str, str] = {}
    if c.node_http:
        with contextlib.suppress(Exception):
            files = live(c, user, ERROR_LOG_TAIL, timeout=min(ERROR_LOG_LIVE_S, timeout_s))
    if files.get("stderr", "(log unavailable").startswith("(log unavailable"):
        with contextlib.suppress(Exception):
            files = aggregated(app_id, c, user, ERROR_LOG_TAIL, timeout_s, timeout_s)
    logs = split_streams(files, "", service)
    return last_error_line(logs.stderr) or last_error_line(logs.stdout)
