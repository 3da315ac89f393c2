"""Access: a run belongs to whoever submitted it (ACLs on, simple authentication).

One run, submitted through :func:`tfyarn_jupyter.submit` with its default
ACLs plus ``acls={"view": [VIEWER]}``, sleeps in its chief while the tests
look at it as the owner, as a stranger and as the named viewer. Other users
are other ``HADOOP_USER_NAME`` values: skein's Java driver reads it when it
starts, so their clients run in subprocesses. The last test ends the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from hdfs import HdfsError, InsecureClient

from tfyarn_jupyter import Run, TaskSpec, submit
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.protocol.contract import PAYLOAD
from tfyarn_jupyter.run.launch import event_log_path, read_event_log

pytestmark = pytest.mark.sandbox

STRANGER = "mallory"
VIEWER = "bob"
START_TIMEOUT_S = 600.0

#: What another user's skein client sees and may do; prints one JSON line.
_AS_USER = textwrap.dedent(
    """\
    import json, sys, skein
    app_id = sys.argv[1]
    client = skein.Client(log=False)
    out = {}
    r = client.application_report(app_id)
    out["report"] = {"user": r.user, "host": r.host, "tracking_url": r.tracking_url,
                     "diagnostics": r.diagnostics, "state": str(r.state)}
    try:
        client.kill_application(app_id)
        out["kill"] = "killed"
    except Exception as exc:
        out["kill"] = f"{type(exc).__name__}: {exc}"
    client.close()
    print("RESULT " + json.dumps(out))
    """
)


def as_user(user: str, app_id: str) -> dict:
    """The application report and a kill attempt as ``user``, from a fresh skein driver."""
    env = dict(os.environ, HADOOP_USER_NAME=user)
    proc = subprocess.run(
        [sys.executable, "-c", _AS_USER, app_id],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def aggregated_logs(app_id: str, timeout: float = 120.0) -> str:
    """The owner's ``yarn logs`` output once aggregation is done (see test_sandbox.py)."""
    deadline = time.monotonic() + timeout
    while True:
        proc = subprocess.run(
            ["yarn", "logs", "-applicationId", app_id], capture_output=True, text=True, timeout=120
        )
        if proc.returncode == 0 and "LogAggregationType: AGGREGATED" in proc.stdout:
            return proc.stdout
        assert time.monotonic() < deadline, proc.stdout[-1000:] + proc.stderr[-1000:]
        time.sleep(1.0)


def nm_logs(node_http: str, container_id: str, user: str) -> dict[str, requests.Response]:
    """Each of the container's log files, read live from its NodeManager as ``user``.

    The file names come from the NodeManager's own listing, read as the owner.
    """
    base = f"http://{node_http}/ws/v1/node"
    owner = filesystem.hadoop_user()
    listing = requests.get(
        f"{base}/containers/{container_id}/logs",
        params={"user.name": owner},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    listing.raise_for_status()
    body = listing.json()
    groups = body.get("containerLogsInfo", body)
    groups = groups if isinstance(groups, list) else [groups]
    names = sorted(
        f["fileName"]
        for g in groups
        for f in (g.get("containerLogInfo") or [])
        if isinstance(f, dict) and "fileName" in f
    )
    assert names, body
    return {
        name: requests.get(
            f"{base}/containerlogs/{container_id}/{name}",
            params={"user.name": user},
            timeout=10,
        )
        for name in names
    }


@dataclasses.dataclass
class Guarded:
    run: Run
    secret: str
    marker: str
    seen: Path  # what the chief found in its environment
    container_id: str
    node_http: str


@pytest.fixture(scope="module")
def guarded(sandbox, tmp_path_factory) -> Iterator[Guarded]:
    """A running tfyarn run whose chief sleeps; killed when the module is done."""
    token = uuid.uuid4().hex
    secret = f"tok-{token}"
    marker = f"access-marker-{token[:12]}"
    out = tmp_path_factory.mktemp("access")
    seen = out / "seen.json"

    def experiment_fn():
        import json
        import os
        import time

        keys = ("API_TOKEN", "DB_PASSWORD", "VISIBLE_SETTING")
        with open(seen, "w") as fh:
            json.dump({k: os.environ.get(k) for k in keys}, fh)
        print(marker, flush=True)
        time.sleep(1800)

    run = submit(
        experiment_fn,
        {"chief": TaskSpec("512M", 1)},
        env={"API_TOKEN": secret, "DB_PASSWORD": f"pw-{token}", "VISIBLE_SETTING": "plain"},
        acls={"view": [VIEWER]},
        name=f"tfyarn-test-access-{token[:8]}",
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            st = run.status()
            chief = st.tasks[0]
            if chief.state == "running" and seen.exists() and chief.container_id:
                break
            assert not st.ended, f"{run.app_id} ended: {st.failure}"
            assert time.monotonic() < deadline, f"chief not running: {st.pending}"
            time.sleep(1.0)
        yield Guarded(run, secret, marker, seen, chief.container_id, chief.node)
    finally:
        with contextlib.suppress(Exception):
            run.cancel()


def test_run_is_owned_by_the_submitter_with_owner_only_default_acls(guarded):
    spec = guarded.run.spec
    assert spec is not None
    owner = filesystem.hadoop_user()
    acls = spec.acls
    assert acls.enable is True
    assert sorted(acls.modify_users) == [owner]
    assert sorted(acls.view_users) == sorted([owner, VIEWER])
    assert guarded.run.status().app.user == owner


def test_another_user_can_neither_kill_the_run_nor_see_its_details_or_live_logs(guarded):
    run = guarded.run
    out = as_user(STRANGER, run.app_id)
    assert f"User {STRANGER} cannot perform operation MODIFY_APP on {run.app_id}" in out["kill"]
    # YARN hides a stranger's view of the application's details.
    assert out["report"]["host"] == "N/A"
    assert out["report"]["tracking_url"] == "N/A"
    assert out["report"]["state"] == "RUNNING"

    stranger = nm_logs(guarded.node_http, guarded.container_id, STRANGER)
    for name, resp in stranger.items():
        assert not resp.ok, name
        assert f"User [{STRANGER}] is not authorized to view the logs" in resp.text, name
    owner = nm_logs(guarded.node_http, guarded.container_id, filesystem.hadoop_user())
    assert all(r.ok for r in owner.values()), {n: r.status_code for n, r in owner.items()}
    assert guarded.marker in "".join(r.text for r in owner.values())
    assert run.status().app.state == "RUNNING"  # the kill attempt changed nothing


def test_view_acl_lets_the_named_user_see_the_run_and_its_live_logs_but_not_kill_it(guarded):
    run = guarded.run
    out = as_user(VIEWER, run.app_id)
    assert f"User {VIEWER} cannot perform operation MODIFY_APP on {run.app_id}" in out["kill"]
    assert out["report"]["host"] not in ("", "N/A")
    assert run.app_id in out["report"]["tracking_url"]
    logs = nm_logs(guarded.node_http, guarded.container_id, VIEWER)
    assert all(r.ok for r in logs.values()), {n: r.text[:200] for n, r in logs.items()}
    assert guarded.marker in "".join(r.text for r in logs.values())
    assert run.status().app.state == "RUNNING"


def test_serialised_experiment_on_hdfs_is_readable_by_the_owner_only(guarded, sandbox):
    owner = filesystem.client()
    staging = f"{filesystem.home()}/.skein/{guarded.run.app_id}"
    # skein stages each file under a folder named by its digest.
    found = [f"{root}/{PAYLOAD}" for root, _, files in owner.walk(staging) if PAYLOAD in files]
    assert len(found) == 1, list(owner.walk(staging))
    payload = owner.status(found[0])
    assert payload["permission"] in ("600", "400"), payload
    assert payload["owner"] == filesystem.hadoop_user()
    assert owner.status(staging)["permission"] == "700"
    with owner.read(found[0]) as reader:  # the owner can read it: a pickle
        assert reader.read()[:1] == b"\x80"
    stranger = InsecureClient(owner.url, user=STRANGER)
    with pytest.raises(HdfsError, match="Permission denied"):
        stranger.status(found[0])


def test_secrets_in_env_reach_the_task_but_the_panel_and_magic_never_show_them(guarded, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    from tfyarn_jupyter.magic.extension import TfyarnMagics
    from tfyarn_jupyter.panel.summary import status_html
    from tfyarn_jupyter.panel.widget import RunPanel

    run = guarded.run
    secret = guarded.secret
    # The chief got the real values: masking hides something that is there.
    got = json.loads(guarded.seen.read_text())
    assert got["API_TOKEN"] == secret and got["DB_PASSWORD"].startswith("pw-")
    assert got["VISIBLE_SETTING"] == "plain"
    assert run.env == {"API_TOKEN": "***", "DB_PASSWORD": "***", "VISIBLE_SETTING": "plain"}

    st = run.status()
    panel = RunPanel(run, start=False)
    try:
        panel.update(st)
        state = json.dumps(panel.get_state(), default=str)
        assert run.app_id in state  # the panel does show the run
        assert secret not in state and got["DB_PASSWORD"] not in state
    finally:
        panel.close()
    assert secret not in status_html(st)
    assert secret not in run._repr_html_()

    shell = InteractiveShell.instance()
    magics = TfyarnMagics(shell)
    listing: Any = magics.tfyarn_line("list")
    assert run.app_id in listing.data and secret not in listing.data
    capsys.readouterr()
    magics.tfyarn_line(f"logs {run.app_id} chief:0")
    printed = capsys.readouterr()
    assert f"== {run.app_id} chief:0" in printed.out
    assert secret not in printed.out + printed.err
    assert got["DB_PASSWORD"] not in printed.out + printed.err


def test_owner_kills_the_run_and_its_event_log_and_logs_stay_private(guarded):
    run = guarded.run
    run.cancel()
    deadline = time.monotonic() + 120
    while not (st := run.advance()).ended:
        assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state} after the kill"
        time.sleep(1.0)
    assert st.app.state == "KILLED"

    path = event_log_path(run.app_id)
    owner = filesystem.client()
    deadline = time.monotonic() + 30
    while read_event_log(run.app_id) is None:  # written when advance() first saw the end
        assert time.monotonic() < deadline, f"no event log at {path}"
        time.sleep(0.5)
    assert owner.status(path)["permission"] == "600"
    assert owner.status(path.rsplit("/", 1)[0])["permission"] == "700"
    raw = filesystem.read_bytes(path).decode()
    record = json.loads(raw)
    assert record["env"] == {"API_TOKEN": "***", "DB_PASSWORD": "***", "VISIBLE_SETTING": "plain"}
    assert guarded.secret not in raw
    stranger = InsecureClient(owner.url, user=STRANGER)
    with pytest.raises(HdfsError, match="Permission denied"):
        stranger.status(path)

    # Aggregated logs: the owner reads them, a stranger is refused by HDFS.
    text = aggregated_logs(run.app_id)
    assert guarded.marker in text
    proc = subprocess.run(
        ["yarn", "logs", "-applicationId", run.app_id],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, HADOOP_USER_NAME=STRANGER),
    )  # fmt: skip
    refused = proc.stdout + proc.stderr
    assert proc.returncode != 0, refused[-2000:]
    assert f"Permission denied: user={STRANGER}" in refused
    assert guarded.marker not in refused
