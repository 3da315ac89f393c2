"""The sandbox in the shape of a production cluster: ``--kerberos --ha --viewfs --hosts``.

One sandbox for the module, started in a folder of its own (never the session's
default one) and always stopped at the end, where the teardown also checks that
the stop took back what the start added (processes, ``/etc/hosts`` lines,
loopback addresses). The tests talk to it through the Hadoop command line,
curl's SPNEGO and raw skein, as ``alice`` and ``mallory`` with tickets from their
keytabs. Needs root (a KDC, Unix accounts, addresses on ``lo``); select with
``-m secure``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest
import requests
import skein
from tfyarn_sandbox.daemons import negotiate_get
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes.shape import Shape

from .helpers import as_user

pytestmark = pytest.mark.secure

SHAPE = Shape(kerberos=True, ha=True, viewfs=True, hosts=True)
APP_TIMEOUT_S = 300.0
FINAL = ("FINISHED", "FAILED", "KILLED")


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


@contextlib.contextmanager
def skein_client(box: Sandbox, user: str) -> Iterator[skein.Client]:
    """A skein client whose driver logged in with ``user``'s ticket."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(as_user(box, user))
    try:
        client = skein.Client(log=str(box.log_dir / f"skein-driver-{user}.log"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    with client:
        yield client


def wait_final(client: skein.Client, app_id: str) -> skein.model.ApplicationReport:
    deadline = time.monotonic() + APP_TIMEOUT_S
    while True:
        report = client.application_report(app_id)
        if str(report.state) in FINAL:
            return report
        if time.monotonic() > deadline:
            client.kill_application(app_id)
            raise AssertionError(f"{app_id} still {report.state} after {APP_TIMEOUT_S}s")
        time.sleep(0.5)


def shell_service(script: str) -> skein.Service:
    return skein.Service(resources=skein.Resources(memory=256, vcores=1), script=script)


# -- the shape -------------------------------------------------------------------------------
def test_status_and_env_know_the_shape(secure_box):
    st = secure_box.status()
    assert st["ready"] is True
    assert st["shape"] == SHAPE.flags()
    assert set(st["daemons"]) >= {"kdc", "namenode", "namenode2"}
    script = subprocess.run(
        [sys.executable, "-m", "tfyarn_sandbox", "--dir", str(secure_box.root),
         "env", "--user", "alice"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    shell = subprocess.run(
        ["sh", "-c", f'{script}\nklist; echo "user=${{HADOOP_USER_NAME-unset}}"'],
        capture_output=True, text=True, env={**os.environ, "HADOOP_USER_NAME": "root"},
    )  # fmt: skip
    assert "Default principal: alice@TFYARN.SANDBOX" in shell.stdout
    assert shell.stdout.endswith("user=unset\n")


def test_each_daemon_has_an_address_and_name_of_its_own(secure_box):
    state = secure_box._state()
    plan = state["hosts"]
    addresses = {role: socket.gethostbyname(h["name"]) for role, h in plan.items()}
    assert addresses == {role: h["address"] for role, h in plan.items()}
    assert len(set(addresses.values())) == len(plan) == 6
    assert "127.0.0.1" not in addresses.values()
    layout = secure_box.layout()
    for nm in ("cpu", "gpu"):
        host, port = layout.host_of(f"nm_{nm}"), layout.ports[f"nm_{nm}"]
        with socket.create_connection((host, port), timeout=5):
            pass  # the NodeManager answers at its own name...
        with (
            pytest.raises(ConnectionRefusedError),
            socket.create_connection(("localhost", port), 5),
        ):
            pass  # ...and nothing answers through localhost


def test_nodes_register_under_their_own_names(secure_box):
    get = negotiate_get(as_user(secure_box, "alice"))
    layout = secure_box.layout()
    nodes = get(f"http://{layout.addr('rm_http')}/ws/v1/cluster/nodes", {})["nodes"]["node"]
    hosts = sorted(n["nodeHostName"] for n in nodes)
    assert hosts == sorted(layout.host_of(p) for p in ("nm_cpu", "nm_gpu"))


# -- Kerberos --------------------------------------------------------------------------------
def test_hdfs_answers_alice_with_a_ticket_and_refuses_her_without(secure_box, tmp_path):
    env = as_user(secure_box, "alice")
    cache = tmp_path / "alice-cc"
    shutil.copy(env["KRB5CCNAME"], cache)
    env["KRB5CCNAME"] = str(cache)
    ok = run(["hdfs", "dfs", "-ls", "/user/alice"], env)
    assert ok.returncode == 0, ok.stderr
    assert run(["kdestroy"], env).returncode == 0
    refused = run(["hdfs", "dfs", "-ls", "/user/alice"], env)
    assert refused.returncode != 0
    assert "Client cannot authenticate via:[TOKEN, KERBEROS]" in refused.stderr


def test_homes_are_private(secure_box):
    peek = run(["hdfs", "dfs", "-ls", "/user/alice"], as_user(secure_box, "mallory"))
    assert peek.returncode != 0
    assert "Permission denied: user=mallory" in peek.stderr


def test_web_apis_answer_401_without_spnego_and_200_with(secure_box):
    layout = secure_box.layout()
    get = negotiate_get(as_user(secure_box, "alice"))
    active = sandbox_ha.active_namenode(layout, get)
    assert active is not None
    urls = {
        "webhdfs": f"http://{layout.addr(sandbox_ha.NAMENODE_PORTS[active][1])}"
        "/webhdfs/v1/user?op=LISTSTATUS",
        "rm": f"http://{layout.addr('rm_http')}/ws/v1/cluster/info",
        "nm": f"http://{layout.addr('nm_cpu_http')}/ws/v1/node/info",
    }
    for name, url in urls.items():
        assert requests.get(url, timeout=10).status_code == 401, name
    assert get(urls["rm"], {})["clusterInfo"]["state"] == "STARTED"
    assert get(urls["nm"], {})["nodeInfo"]["nodeHealthy"] is True
    listing = get(urls["webhdfs"].split("?")[0], {"op": "LISTSTATUS"})
    names = {s["pathSuffix"] for s in listing["FileStatuses"]["FileStatus"]}
    assert {"alice", "mallory"} <= names


def test_a_skein_app_as_alice_runs_writes_hdfs_with_its_tokens_and_its_logs_aggregate(
    secure_box,
):
    token = uuid.uuid4().hex
    target = f"/user/alice/from-container-{token}"
    hdfs = secure_box.bin_dir / "hdfs"
    script = f"echo out-{token}; echo {token} | {hdfs} dfs -put - {target}"
    spec = skein.ApplicationSpec(
        name=f"tfyarn-test-secure-{token[:8]}",
        queue="ml-gpu",
        services={"task": shell_service(script)},
    )
    with skein_client(secure_box, "alice") as client:
        app_id = client.submit(spec)
        report = wait_final(client, app_id)
    assert (str(report.state), str(report.final_status)) == ("FINISHED", "SUCCEEDED"), (
        report.diagnostics
    )
    assert report.user == "alice"
    env = as_user(secure_box, "alice")
    cat = run(["hdfs", "dfs", "-cat", target], env)
    assert cat.stdout.strip() == token, cat.stderr
    deadline = time.monotonic() + 120
    while True:
        logs = run(["yarn", "logs", "-applicationId", app_id], env)
        if f"out-{token}" in logs.stdout:
            break
        assert time.monotonic() < deadline, logs.stdout[-2000:] + logs.stderr[-2000:]
        time.sleep(1)


def test_mallory_may_not_submit_to_ml_gpu(secure_box):
    spec = skein.ApplicationSpec(
        name="tfyarn-test-secure-mallory", queue="ml-gpu", services={"a": shell_service("true")}
    )
    with (
        skein_client(secure_box, "mallory") as client,
        pytest.raises(skein.exceptions.SkeinError) as exc,
    ):
        client.submit(spec)
    assert "User mallory does not have permission to submit" in str(exc.value)
    assert "to queue ml-gpu" in str(exc.value)


# -- HA --------------------------------------------------------------------------------------
def test_failover_switches_the_active_namenode_and_hdfs_keeps_answering(secure_box):
    layout = secure_box.layout()
    env = as_user(secure_box, "alice")
    get = negotiate_get(env)
    before = sandbox_ha.active_namenode(layout, get)
    old, new, seconds = secure_box.failover()
    print(f"failover {old} -> {new} in {seconds:.1f}s")
    assert old == before and new != old
    assert sandbox_ha.active_namenode(layout, get) == new
    t0 = time.monotonic()
    ls = run(["hdfs", "dfs", "-ls", "/user/alice"], env)
    print(f"first listing after the failover in {time.monotonic() - t0:.1f}s")
    assert ls.returncode == 0, ls.stderr
    back = run(["hdfs", "dfs", "-ls", f"hdfs://{sandbox_ha.NAMESERVICE}/user"], env)
    assert back.returncode == 0 and "/user/mallory" in back.stdout
    assert secure_box.status()["ready"] is True
