"""The client on the production-shaped sandbox (``--kerberos --ha --viewfs --hosts``) as alice.

Every client runs in a process of its own with ``box.env(user)`` (a fresh ticket
from the user's keytab, no ``HADOOP_USER_NAME``): a script through
:func:`client`, or a real IPython kernel through :class:`UserKernel`. What a
script or cell needs to tell the test it prints as one JSON line after ``MARK``.
Runs are tiny (1 GiB chief + evaluator, a few hundred steps, or a sleeping
chief of 512 MiB) and named with a per-test prefix; ``alice_apps`` kills what
is still live at the end. Select with ``-m secure``; reuses the running box at
``TFYARN_SECURE_SANDBOX_DIR`` (see ``secure_box`` in conftest.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tfyarn_sandbox.daemons import negotiate_get
from tfyarn_sandbox.sandbox import Sandbox

from .helpers import as_user, unique
from .test_notebook import RECORD_PANELS, Kernel, report, reported, stream

pytestmark = pytest.mark.secure

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
MARK = "@@tfyarn-secure@@"
LIVE = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")

#: Put before every client script: the quickstart's module, ``report(x)``, and helpers.
PRELUDE = f"""\
import json, os, sys, time
sys.path.insert(0, {str(NOTEBOOKS)!r})
import cancer
import tfyarn_jupyter
from tfyarn_jupyter import TaskSpec
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.ship import layered_launch as layer_cache, packing
def smallest_layer():
    plan = layer_cache.plan_environment(packing.venv_prefix(), None, "auto")[0]
    name = min(plan.layers, key=lambda layer: layer.size).archive_name
    return f"{{filesystem.home()}}/.tfyarn/layers/{{name}}"
def report(x):
    print({MARK!r} + json.dumps(x, default=str), flush=True)
def wait_running(run, timeout=600):
    deadline = time.monotonic() + timeout
    while not any(t.task == "chief:0" and t.state == "running" for t in run.status().tasks):
        assert time.monotonic() < deadline, run.status()
        time.sleep(1)
def outcome(call):
    try:
        return {{"ok": repr(call())}}
    except BaseException as exc:
        return {{"error": type(exc).__name__, "message": str(exc)}}
FILES = {{"cancer.py": cancer.__file__}}
SMALL = {{"chief": TaskSpec("1G", 1), "evaluator": TaskSpec("1G", 1)}}
SLEEPER = {{"chief": TaskSpec("512M", 1)}}
def sleep_fn():
    import time
    time.sleep(3600)
"""


def script_env(box: Sandbox, user: str, **extra: str) -> dict[str, str]:
    return as_user(box, user, **extra)


def client(box: Sandbox, user: str, code: str, cwd: Path, timeout: float = 900, **env: str) -> Any:
    """Run ``code`` (after :data:`PRELUDE`) as ``user``; what it ``report()``-ed last."""
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        env=script_env(box, user, **env), cwd=cwd, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, f"{user}'s client failed:\n{proc.stderr[-5000:]}"
    return _reported(proc.stdout)


def _reported(stdout: str) -> Any:
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARK)]
    assert lines, f"the client reported nothing:\n{stdout[-3000:]}"
    return json.loads(lines[-1][len(MARK) :])


def rm_url(box: Sandbox) -> str:
    return f"http://{box.layout().addr('rm_http')}/ws/v1/cluster"


def app_names(box: Sandbox) -> dict[str, str]:
    """``{name: id}`` of every application the ResourceManager knows (asked as its admin)."""
    apps = negotiate_get(as_user(box, None))(f"{rm_url(box)}/apps", {})["apps"] or {}
    return {a["name"]: a["id"] for a in apps.get("app", [])}


@pytest.fixture
def alice_apps(secure_box) -> Iterator[list[str]]:
    """Name prefixes (append to it): alice's live applications so named are killed at the end."""
    prefixes: list[str] = []
    yield prefixes
    env = as_user(secure_box, "alice")
    apps = negotiate_get(env)(f"{rm_url(secure_box)}/apps", {"states": ",".join(LIVE)})
    for app in (apps.get("apps") or {}).get("app", []):
        if any(app["name"].startswith(p) for p in prefixes):
            subprocess.run(["yarn", "application", "-kill", app["id"]], env=env,
                           capture_output=True, timeout=120)  # fmt: skip


def hdfs_cmd(box: Sandbox, user: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["hdfs", "dfs", *args], env=as_user(box, user), capture_output=True,
                          text=True, timeout=120)  # fmt: skip


# -- the quickstart through run_on_yarn -------------------------------------------------------
def test_quickstart_runs_as_alice_with_checkpoints_on_hdfs_and_her_files_stay_hers(
    secure_box, tmp_path, alice_apps
):
    name = unique("tfyarn-test-secure-roy")
    alice_apps.append(name)
    model_dir = f"/user/alice/{name}/model"
    out = client(
        secure_box, "alice",
        f"""
        model_dir = filesystem.qualify({model_dir!r})
        def experiment_fn():
            return cancer.experiment(model_dir, max_steps=300, save_checkpoints_steps=100)
        t0 = time.monotonic()
        result = tfyarn_jupyter.run_on_yarn(experiment_fn, SMALL, files=FILES, name={name!r})
        report({{"final": result.final_status, "app_id": result.app_id, "model_dir": model_dir,
                "tasks": {{t: d["state"] for t, d in result.tasks.items()}},
                "step": result.metrics.get("global_step"), "wall": time.monotonic() - t0,
                "checkpoint": filesystem.exists(model_dir + "/checkpoint"),
                "user": filesystem.hadoop_user(),
                "event_log": tfyarn_jupyter.run.result.event_log_path(result.app_id),
                "env_cache": smallest_layer()}})
        """,
        tmp_path,
    )  # fmt: skip
    print(f"\nquickstart as alice: {out}")
    assert out["final"] == "SUCCEEDED"
    assert out["tasks"] == {"chief:0": "succeeded", "evaluator:0": "succeeded"}
    assert out["step"] >= 300
    assert out["checkpoint"] is True
    assert out["user"] == "alice"
    assert out["model_dir"].startswith("viewfs://")
    # The event log and the environment cache are alice's alone on HDFS.
    for path in (out["event_log"], out["env_cache"]):
        assert hdfs_cmd(secure_box, "alice", "-test", "-e", path).returncode == 0, path
        peek = hdfs_cmd(secure_box, "mallory", "-cat", path)
        assert peek.returncode != 0, path
        assert "Permission denied: user=mallory" in peek.stderr, peek.stderr[-800:]


def test_a_layered_environment_runs_as_alice_and_its_layers_stay_hers(
    secure_box, tmp_path, alice_apps
):
    name = unique("tfyarn-test-secure-layers")
    alice_apps.append(name)
    out = client(
        secure_box, "alice",
        f"""
        model_dir = filesystem.qualify("/user/alice/{name}/model")
        def experiment_fn():
            return cancer.experiment(model_dir, max_steps=100)
        run = tfyarn_jupyter.submit(experiment_fn, SMALL, files=FILES, name={name!r},
                                    layers=True)
        result = run.wait(timeout=600)
        env = run.env_report
        report({{"final": result.final_status, "layers": len(env.layers),
                "uploaded": len(env.uploaded), "mb": env.bytes_uploaded / 1e6,
                "uris": sorted(uri for uri, _ in env.uris.values()),
                "checkpoint": filesystem.exists(model_dir + "/checkpoint")}})
        """,
        tmp_path,
    )  # fmt: skip
    print(f"\nlayered as alice: {out['layers']} layers, {out['uploaded']} uploaded "
          f"({out['mb']:.0f} MB), final {out['final']}")  # fmt: skip
    assert out["final"] == "SUCCEEDED" and out["checkpoint"] is True, out
    assert out["layers"] > 10 and out["uris"], out
    assert all("/user/alice/.tfyarn/layers/" in uri for uri in out["uris"]), out["uris"]
    peek = hdfs_cmd(secure_box, "mallory", "-cat", out["uris"][0])
    assert peek.returncode != 0 and "Permission denied: user=mallory" in peek.stderr, peek.stderr


# -- a task reads HDFS through TensorFlow with the delegation tokens only ---------------------
def test_a_task_reads_alices_csv_through_tensorflow_on_viewfs_and_the_ha_nameservice_with_tokens(
    secure_box, tmp_path, alice_apps
):
    name = unique("tfyarn-test-secure-tfread")
    alice_apps.append(name)
    rows = 37
    path = f"/user/alice/{name}/data.csv"
    csv = "".join(f"{i},{i * 0.5},label{i % 3}\n" for i in range(rows)).encode()
    out = client(
        secure_box, "alice",
        f"""
        from tfyarn_jupyter import distributed
        filesystem.write_bytes({path!r}, {csv!r})
        URIS = {{"viewfs": filesystem.qualify({path!r}), "hdfs": "hdfs://tfyarn-ns" + {path!r}}}
        def count_lines():
            import subprocess
            import tensorflow as tf
            import tfyarn_jupyter
            counts = {{}}
            for fs, uri in URIS.items():
                counts[fs + "_dataset"] = sum(1 for _ in tf.data.TextLineDataset(uri))
                with tf.io.gfile.GFile(uri) as fh:
                    counts[fs + "_gfile"] = sum(1 for _ in fh)
            try:
                ticket = subprocess.run(["klist", "-s"], timeout=30).returncode == 0
            except FileNotFoundError:
                ticket = None
            tfyarn_jupyter.report(step=min(counts.values()), loss=0.0, ticket=ticket,
                                  tokens=bool(os.environ.get("HADOOP_TOKEN_FILE_LOCATION")),
                                  **counts)
            wrong = {{k: n for k, n in counts.items() if n != {rows}}}
            if wrong:
                raise AssertionError(f"expected {rows} lines, counted {{wrong}}")
        result = distributed.run_on_yarn(count_lines, {{"chief": SMALL["chief"]}}, name={name!r})
        progress = tfyarn_jupyter.attach(result.app_id).status().progress.get("chief:0") or {{}}
        report({{"final": result.final_status, "app_id": result.app_id, "uris": URIS,
                "tasks": {{t: d["state"] for t, d in result.tasks.items()}},
                "progress": {{k: v for k, v in progress.items() if k != "history"}}}})
        """,
        tmp_path,
    )  # fmt: skip
    print(f"\nTensorFlow read on HDFS in alice's task: {out}")
    assert out["uris"]["viewfs"] == f"viewfs://tfyarn{path}", out["uris"]
    assert out["final"] == "SUCCEEDED", out
    assert out["tasks"] == {"chief:0": "succeeded"}, out
    progress = out["progress"]
    counts = {k: progress.get(k) for k in ("viewfs_dataset", "viewfs_gfile", "hdfs_dataset",
                                           "hdfs_gfile")}  # fmt: skip
    assert counts == dict.fromkeys(counts, rows), progress
    assert progress["step"] == rows, progress
    # The task read with skein's delegation tokens, not a ticket of its own.
    assert progress["tokens"] is True, progress
    assert progress["ticket"] is not True, progress


# -- the magic in real kernels ----------------------------------------------------------------
class UserKernel(Kernel):
    """A venv python3 kernel whose whole environment is ``user``'s on ``box``."""

    def __init__(self, box: Sandbox, user: str, cwd: Path) -> None:
        from jupyter_client.manager import KernelManager

        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=as_user(box, user))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)


WAIT_CHIEF = """\
import time as _t
_deadline = _t.monotonic() + 600
while not any(t.task == "chief:0" and t.state == "running" for t in {run}.status().tasks):
    assert _t.monotonic() < _deadline, {run}.status()
    _t.sleep(1)
"""


@pytest.mark.timeout(1800)
def test_magic_as_alice_live_and_aggregated_logs_attach_from_a_second_kernel_and_cancel(
    secure_box, tmp_path, alice_apps
):
    prefix = unique("tfyarn-test-secure-nb")
    alice_apps.append(prefix)
    shutil.copy(NOTEBOOKS / "cancer.py", tmp_path / "cancer.py")
    model_dir = f"/user/alice/{prefix}/model"
    first = UserKernel(secure_box, "alice", tmp_path)
    second: UserKernel | None = None
    try:
        first.run(
            "%load_ext tfyarn_jupyter\nimport cancer\nfrom tfyarn_jupyter.hadoop import filesystem"
        )
        first.run(
            f"%%tfyarn --chief 1G/1 --evaluator 1G/1 --name {prefix} --var r\n"
            f"model_dir = filesystem.qualify({model_dir!r})\n"
            "def experiment_fn():\n"
            # at least 45 s of training (0.015 s a step), so a second kernel attaches while
            # the chief is still running however fast the machine
            "    return cancer.experiment(model_dir, max_steps=3000, save_checkpoints_steps=500,"
            " step_delay_s=0.015)"
        )
        app_id = reported(first.run(report("r.app_id")))
        first.run(WAIT_CHIEF.format(run="r"), timeout=700)
        # RUNNING comes before the chief's interpreter writes its first line: read the live logs
        # until TensorFlow's logging shows (or the deadline), as a user re-running the cell would
        live = reported(first.run(
            "_d = _t.monotonic() + 180\n_l = r.logs('chief:0')\n"
            "while not _l.stderr and _l.source == 'live' and _t.monotonic() < _d:\n"
            "    _t.sleep(2)\n    _l = r.logs('chief:0')\n"
            + report("[_l.source, sorted(_l.files), len(_l.stderr)]")
        ))  # fmt: skip

        second = UserKernel(secure_box, "alice", tmp_path)
        second.run("%load_ext tfyarn_jupyter\n" + RECORD_PANELS)
        second.run(f"%%tfyarn --chief 512M/1 --name {prefix}-sleep --var s\n"
                   "import time\ndef experiment_fn():\n    time.sleep(3600)")  # fmt: skip
        second.run(f"%tfyarn attach {app_id}")
        second.run("_m = get_ipython().magics_manager.registry['TfyarnMagics']\n"
                   "att = _m.panels[-1].run\n" + WAIT_CHIEF.format(run="att"))  # fmt: skip
        seen = reported(second.run(report("[[p.run.app_id, sorted(p.recorded['seen'])] "
                                          "for p in _m.panels][-1]")))  # fmt: skip
        second.run(WAIT_CHIEF.format(run="s"))
        sleeper = reported(second.run(report("s.app_id")))
        cancelled = stream(second.run(f"%tfyarn cancel {sleeper}"), "stdout")
        sleeper_state = reported(second.run(
            "_d = _t.monotonic() + 120\nwhile s.status().app.state != 'KILLED' and "
            "_t.monotonic() < _d:\n    _t.sleep(1)\n" + report("s.status().app.state")
        ))  # fmt: skip

        first.run("res = r.wait(timeout=900)")
        after = reported(first.run(
            "_a = r.logs('chief:0')\n" + report(
                "{'final': res.final_status, 'source': _a.source, 'files': sorted(_a.files), "
                "'chief_log': len(_a.stdout) + len(_a.stderr), "
                "'checkpoint': filesystem.exists(model_dir + '/checkpoint')}"
            )
        ))  # fmt: skip
    finally:
        first.close()
        if second is not None:
            second.close()
    print(f"\nlive logs {live}; attached {seen[0]}; sleeper {sleeper_state}; after {after}")
    assert live[0] == "live" and live[1], live
    assert live[2] > 0  # the chief's stderr (TensorFlow's logging) so far
    assert seen[0] == app_id
    assert any(task == "chief:0" and state == "running" and node for task, _, state, node, _
               in seen[1])  # fmt: skip
    assert f"killed {sleeper}" in cancelled
    assert sleeper_state == "KILLED"
    assert after["final"] == "SUCCEEDED"
    assert after["source"] == "aggregated" and after["chief_log"] > 0, after
    assert after["checkpoint"] is True


# -- identities and ACLs ----------------------------------------------------------------------
def test_mallory_can_neither_view_nor_kill_alices_run_and_a_view_grant_lets_her_attach_only(
    secure_box, tmp_path, alice_apps
):
    prefix = unique("tfyarn-test-secure-acl")
    alice_apps.append(prefix)
    private, shared, container, node = client(
        secure_box, "alice",
        f"""
        private = tfyarn_jupyter.submit(sleep_fn, SLEEPER, name={prefix!r} + "-private",
                                        detach=True)
        shared = tfyarn_jupyter.submit(sleep_fn, SLEEPER, name={prefix!r} + "-shared",
                                       detach=True, acls={{"view": ["mallory"]}})
        wait_running(private)
        wait_running(shared)
        chief = private.source.container("chief:0")
        report([private.app_id, shared.app_id, chief.container_id, chief.node_http])
        """,
        tmp_path,
    )  # fmt: skip
    seen = client(
        secure_box, "mallory",
        f"""
        from tfyarn_jupyter.hadoop import resourcemanager as cluster
        c = cluster.get_client()
        def status(app):
            r = c.application_report(app)
            return [str(r.state), r.host]
        def tasks(app):
            st = tfyarn_jupyter.attach(app).status()
            return [(t.task, t.state, bool(t.node)) for t in st.tasks]
        out = {{}}
        for key, app in (("private", {private!r}), ("shared", {shared!r})):
            out[key] = {{"report": outcome(lambda: status(app)),
                        "attach": outcome(lambda: tasks(app)),
                        "logs": outcome(lambda: tfyarn_jupyter.attach(app).logs("chief:0").source),
                        "kill": outcome(lambda: c.kill_application(app))}}
        # Straight to the NodeManager that runs alice's private chief: SPNEGO as mallory.
        from tfyarn_jupyter.run import logs
        from tfyarn_jupyter.core.state import ContainerInfo
        chief = ContainerInfo("chief:0", "RUNNING", {container!r}, {node!r})
        out["private"]["node_logs"] = outcome(lambda: logs.live(chief, "mallory", 4096))
        report(out)
        """,
        tmp_path,
    )  # fmt: skip
    states = client(
        secure_box, "alice",
        f"""
        runs = [tfyarn_jupyter.attach(a) for a in ({private!r}, {shared!r})]
        before = [r.status().app.state for r in runs]
        for r in runs:
            r.cancel()
        deadline = time.monotonic() + 120
        while any(r.status().app.state != "KILLED" for r in runs) and time.monotonic() < deadline:
            time.sleep(1)
        report([before, [r.status().app.state for r in runs]])
        """,
        tmp_path,
    )  # fmt: skip
    print(f"\nmallory saw: {json.dumps(seen, indent=1)}\nalice's runs: {states}")
    mine = seen["private"]
    # Not viewable: the report hides where it runs, attach and the logs are refused.
    assert mine["report"]["ok"] == repr(["RUNNING", "N/A"])
    assert "error" in mine["attach"], mine["attach"]
    assert "error" in mine["logs"], mine["logs"]
    assert "User [mallory] is not authorized to view the logs" in mine["node_logs"]["message"]
    # A view grant: attach shows the running chief on its node, and the logs.
    granted = seen["shared"]
    assert granted["attach"]["ok"] == repr([("chief:0", "running", True)]), granted
    assert granted["logs"]["ok"] == repr("live"), granted["logs"]
    # Neither run can be killed by mallory; both were still running for alice to cancel.
    for who in (mine, granted):
        assert "User mallory cannot perform operation MODIFY_APP" in who["kill"]["message"]
    assert states == [["RUNNING", "RUNNING"], ["KILLED", "KILLED"]]


# -- errors before anything is uploaded or allocated -------------------------------------------
SPY = """
calls = []
for _mod, _fn in ((packing, "ensure_env"), (layer_cache, "ensure_layers"),
                  (filesystem, "upload_stream"),
                  (filesystem, "write_bytes")):
    def _spy(*a, _orig=getattr(_mod, _fn), _name=_fn, **k):
        calls.append(_name)
        return _orig(*a, **k)
    setattr(_mod, _fn, _spy)
"""


def test_no_ticket_a_forbidden_queue_and_an_unknown_principal_are_refused_before_upload(
    secure_box, tmp_path
):
    from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos

    prefix = unique("tfyarn-test-secure-refused")
    empty = tmp_path / "no-ticket-cc"  # never created: a ticket cache with nothing in it
    env = as_user(secure_box, "alice", KRB5CCNAME=f"FILE:{empty}")
    ghost = tmp_path / "ghost.keytab"
    ktutil = subprocess.run(
        ["ktutil"], env=env, capture_output=True, text=True, timeout=60,
        input="addent -password -p ghost@TFYARN.SANDBOX -k 1 -e aes256-cts-hmac-sha1-96\n"
              f"not-a-real-password\nwkt {ghost}\nquit\n",
    )  # fmt: skip
    assert ghost.exists(), ktutil.stderr
    alice_keytab = sandbox_kerberos.keytab(secure_box.root, "alice")
    launch = f"tfyarn_jupyter.submit(sleep_fn, SLEEPER, files=FILES, name={prefix!r}"
    alice = client(
        secure_box, "alice",
        SPY + textwrap.dedent(f"""
        from tfyarn_jupyter.hadoop import resourcemanager as cluster
        out = {{"no_ticket": outcome(lambda: {launch}))}}
        out["ghost"] = outcome(lambda: {launch}, principal="ghost@TFYARN.SANDBOX",
                                                 keytab={str(ghost)!r}))
        out["keytab_user"] = cluster.preflight("alice@TFYARN.SANDBOX", {str(alice_keytab)!r},
                                               "ml-gpu")
        out["keytab_driver"] = cluster.get_client("alice@TFYARN.SANDBOX",
                                                  {str(alice_keytab)!r}).get_queue("ml-gpu").name
        out["someone_else"] = outcome(lambda: {launch}, principal="nobody@TFYARN.SANDBOX"))
        out["calls"] = calls
        report(out)
        """),
        tmp_path, KRB5CCNAME=f"FILE:{empty}",
    )  # fmt: skip
    mallory = client(
        secure_box, "mallory",
        SPY + textwrap.dedent(f"""
        report({{"gpu": outcome(lambda: {launch}, queue="ml-gpu")), "calls": calls}})
        """),
        tmp_path,
    )  # fmt: skip
    print(f"\nalice without a ticket: {json.dumps(alice, indent=1)}\nmallory: {mallory}")
    assert alice["no_ticket"]["error"] == "CredentialsError"
    assert "no Kerberos ticket" in alice["no_ticket"]["message"]
    assert "run `kinit`" in alice["no_ticket"]["message"]
    assert alice["ghost"]["error"] == "CredentialsError"
    assert "ghost@TFYARN.SANDBOX is unknown to the KDC" in alice["ghost"]["message"]
    assert alice["keytab_user"] == "alice" and alice["keytab_driver"] == "ml-gpu"
    assert alice["someone_else"]["error"] == "CredentialsError"
    assert "the ticket cache holds alice@TFYARN.SANDBOX" in alice["someone_else"]["message"]
    assert mallory["gpu"]["error"] == "SpecError"
    assert mallory["gpu"]["message"].startswith("user mallory may not submit to queue 'ml-gpu'")
    assert "Use a queue open to mallory (default)" in mallory["gpu"]["message"]
    # Refused before the environment was checked or anything written to HDFS...
    assert alice["calls"] == [] and mallory["calls"] == []
    # ...and before anything reached YARN.
    assert not [n for n in app_names(secure_box) if n.startswith(prefix)]


# -- a NameNode failover in the middle of a run ------------------------------------------------
@pytest.mark.timeout(1800)
def test_a_namenode_failover_mid_run_and_the_next_launch_reuses_the_cached_environment(
    secure_box, tmp_path, alice_apps
):
    name = unique("tfyarn-test-secure-failover")
    alice_apps.append(name)
    go = tmp_path / "failed-over"
    code = f"""
    model_dir = filesystem.qualify("/user/alice/{name}/model")
    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=1500, save_checkpoints_steps=100)
    run = tfyarn_jupyter.submit(experiment_fn, SMALL, files=FILES, name={name!r})
    wait_running(run)
    print("RUNNING", run.app_id, flush=True)
    deadline = time.monotonic() + 300
    while not os.path.exists({str(go)!r}):
        assert time.monotonic() < deadline, "no failover"
        time.sleep(0.2)
    t0 = time.monotonic()
    filesystem.exists(model_dir)
    first_op = time.monotonic() - t0
    result = run.wait(timeout=900)
    nxt = tfyarn_jupyter.submit(sleep_fn, SLEEPER, files=FILES, name={name!r} + "-next")
    nxt.cancel()
    report({{"final": result.final_status, "step": result.metrics.get("global_step"),
            "checkpoint": filesystem.exists(model_dir + "/checkpoint"),
            "first_op_s": first_op, "next_uploaded": bool(nxt.env_report.uploaded),
            "next_env_phases": {{k: v for k, v in nxt.phases.items() if k.startswith("env")}}}})
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)], cwd=tmp_path, text=True,
        env=as_user(secure_box, "alice"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("RUNNING"), line + proc.stderr.read()[-4000:]  # type: ignore[union-attr]
        old, new, seconds = secure_box.failover()
        go.touch()
        stdout, stderr = proc.communicate(timeout=1500)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-5000:]
    out = _reported(stdout)
    print(f"\nfailover {old} -> {new}: HDFS answered again after {seconds:.1f}s; {out}")
    assert new != old
    assert out["final"] == "SUCCEEDED" and out["step"] >= 1500
    assert out["checkpoint"] is True
    assert out["next_uploaded"] is False, out["next_env_phases"]
