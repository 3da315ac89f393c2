"""The client's HDFS (tfyarn_jupyter.hadoop.filesystem) and the tasks' tokens on the secure sandbox.

``--kerberos --ha --viewfs --hosts``: ``fs.defaultFS=viewfs://tfyarn/`` with a mount
table and no fallback link, two NameNodes behind ``tfyarn-ns``, Kerberos tickets for
``alice`` and ``mallory``, delegation tokens that must be renewed every 2 minutes (at
most 15). The client acts as a user by its environment (``KRB5CCNAME``), set here in
``os.environ`` for the test's duration; tasks have no ticket, only the tokens skein
asked for (:func:`filesystem.token_targets`). Select with ``-m secure``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import skein
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes import ha as sandbox_ha
from tfyarn_sandbox.shapes import kerberos as sandbox_kerberos

from tfyarn_jupyter.hadoop import filesystem

pytestmark = pytest.mark.secure

VIEWFS = "viewfs://tfyarn"
NAMESERVICE = f"hdfs://{sandbox_ha.NAMESERVICE}"
REPO = Path(__file__).resolve().parents[2]


def as_user(box: Sandbox, user: str) -> dict[str, str]:
    """A full process environment acting as ``user`` (a fresh ticket, no simple identity)."""
    env = {**os.environ, **box.env(user)}
    for name in box.unset_vars(user):
        env.pop(name, None)
    return env


@contextlib.contextmanager
def acting_as(box: Sandbox, user: str) -> Iterator[None]:
    """This process is ``user`` (its ticket cache) until the block ends."""
    saved, env = dict(os.environ), as_user(box, user)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def alice(secure_box) -> Iterator[Sandbox]:
    with acting_as(secure_box, "alice"):
        yield secure_box


@pytest.fixture
def alice_dir(alice) -> Iterator[str]:
    """A fresh folder under alice's home (a viewfs path), deleted afterwards."""
    path = f"{filesystem.home()}/.tfyarn/test-secure-fs-{uuid.uuid4().hex[:8]}"
    yield path
    with acting_as(alice, "alice"):
        filesystem.delete(path, recursive=True)


# -- the client as alice ---------------------------------------------------------------------
def test_alice_uploads_checks_and_reads_through_the_viewfs_default_fs(alice_dir):
    assert filesystem.default_fs() == VIEWFS
    assert filesystem.hadoop_user() == "alice"
    assert filesystem.home() == "/user/alice"
    chunks = [os.urandom(1 << 20) for _ in range(3)] + [b"tail"]
    uri = filesystem.upload_stream(iter(chunks), f"{alice_dir}/env.tar")
    assert uri == f"{VIEWFS}{alice_dir}/env.tar"
    assert filesystem.exists(uri) and filesystem.exists(f"{alice_dir}/env.tar")
    assert filesystem.read_bytes(uri) == b"".join(chunks)
    # The same file through the nameservice the mount table points at.
    assert filesystem.read_bytes(f"{NAMESERVICE}{alice_dir}/env.tar") == b"".join(chunks)
    st = filesystem.status(uri)
    assert (st["owner"], st["permission"]) == ("alice", "600")
    assert filesystem.status(alice_dir)["permission"] == "700"
    assert filesystem.listdir(alice_dir) == ["env.tar"]  # no .part- file left
    assert not filesystem.exists(f"{alice_dir}/other.tar")


def test_a_path_outside_the_mount_table_is_a_clear_error(alice):
    with pytest.raises(
        filesystem.ClusterConfigError, match=r"viewfs://tfyarn/elsewhere/f is in no"
    ):
        filesystem.exists("/elsewhere/f")


def test_mallory_cannot_read_alices_env_cache_or_event_log(alice, alice_dir):
    from tfyarn_jupyter.run.result import event_log_path

    env_tar = f"{filesystem.home()}/.tfyarn/envs/test-{uuid.uuid4().hex[:8]}.tar"
    log = event_log_path(f"application_0_test{uuid.uuid4().hex[:8]}")
    try:
        for path in (env_tar, log):
            filesystem.write_bytes(path, b"alice's")
            assert filesystem.permission(path) == "600"
            assert filesystem.status(path.rsplit("/", 1)[0])["permission"] == "700"
        with acting_as(alice, "mallory"):
            assert filesystem.hadoop_user() == "mallory"
            for path in (env_tar, log, f"{NAMESERVICE}{env_tar}"):
                with pytest.raises(filesystem.HdfsPermissionDenied, match="user=mallory"):
                    filesystem.read_bytes(path)
                with pytest.raises(filesystem.HdfsPermissionDenied, match="user=mallory"):
                    filesystem.exists(path)
            # ...while mallory's own home works for her.
            mine = filesystem.write_bytes(f"{filesystem.home()}/.tfyarn/test-{uuid.uuid4()}", b"m")
            assert filesystem.read_bytes(mine) == b"m" and filesystem.delete(mine)
        assert filesystem.read_bytes(log) == b"alice's"
    finally:
        for path in (env_tar, log):
            filesystem.delete(path)


def test_namenode_failover_between_two_uploads_is_transparent(alice, alice_dir):
    first = filesystem.write_bytes(f"{alice_dir}/before", b"1")
    old, new, seconds = alice.failover()
    assert new != old
    t0 = time.monotonic()
    second = filesystem.write_bytes(f"{alice_dir}/after", b"2")  # the same cached client
    print(f"failover {old} -> {new} in {seconds:.1f}s; next upload {time.monotonic() - t0:.2f}s")
    assert filesystem.read_bytes(first) == b"1" and filesystem.read_bytes(second) == b"2"
    assert filesystem.listdir(alice_dir) == ["after", "before"]


# -- the tasks' delegation tokens ------------------------------------------------------------
#: The task: no ticket (KRB5CCNAME points at nothing), writes through viewfs and through the
#: nameservice with a new client (so a new connection, so a new token check) every ``every``
#: seconds until the time ``until``, and reads a model dir's index through ModelDir.
TASK = """\
import os, sys, time
os.environ["KRB5CCNAME"] = "FILE:/nonexistent/tfyarn-no-ticket"
from tfyarn_jupyter.hadoop import filesystem
from tfyarn_jupyter.container.checkpoints import ModelDir

base, until, every = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
assert os.environ.get("HADOOP_TOKEN_FILE_LOCATION"), "no token file"
assert filesystem.ccache_principal() is None, "the task has a ticket"
assert open("input.txt").read() == "localized from viewfs"
i = 0
while True:
    for uri in (f"{VIEWFS}{base}/viewfs-{i}", f"{NAMESERVICE}{base}/ns-{i}"):
        filesystem._native.cache_clear()
        filesystem.write_bytes(uri, repr(time.time()).encode())
        print("wrote", uri, flush=True)
    if time.time() >= until:
        break
    i += 1
    time.sleep(every)
filesystem.write_bytes(f"{base}/model/checkpoint", b'model_checkpoint_path: "ckpt-7"\\n')
index = ModelDir(f"{VIEWFS}{base}/model", ".").remote_index()
assert index is not None and index.latest == "ckpt-7", index
print("done", i + 1, flush=True)
"""


def run_task(box: Sandbox, tmp_path: Path, base: str, duration: float, every: float) -> dict:
    """Run :data:`TASK` as a skein application of alice's, writing until ``duration`` seconds
    after its submission; its report and the files written."""
    program = tmp_path / "task.py"
    program.write_text(TASK.replace("{VIEWFS}", VIEWFS).replace("{NAMESERVICE}", NAMESERVICE))
    # A file YARN localizes from its viewfs URI (as the environment archive is).
    shipped = filesystem.write_bytes(f"{base}/input.txt", b"localized from viewfs")
    assert shipped.startswith(f"{VIEWFS}/")
    script = textwrap.dedent(f"""\
        export PYTHONPATH={REPO}
        {sys.executable} task.py {base} "$TFYARN_TEST_UNTIL" {every}
    """)
    service = skein.Service(
        resources=skein.Resources(memory=512, vcores=1),
        script=script,
        files={"task.py": str(program), "input.txt": shipped},
    )
    spec = skein.ApplicationSpec(
        name=f"tfyarn-test-secure-tokens-{uuid.uuid4().hex[:8]}",
        queue="ml-gpu",
        services={"task": service},
        file_systems=filesystem.token_targets(),
    )
    with acting_as(box, "alice"):
        client = skein.Client(log=str(box.log_dir / "skein-driver-alice-fs.log"))
    with client:
        submitted = time.time()
        spec.services["task"].env["TFYARN_TEST_UNTIL"] = str(submitted + duration)
        app_id = client.submit(spec)
        deadline = time.monotonic() + duration + 240
        while str((report := client.application_report(app_id)).state) not in (
            "FINISHED", "FAILED", "KILLED",
        ):  # fmt: skip
            if time.monotonic() > deadline:
                client.kill_application(app_id)
                raise AssertionError(f"{app_id} still {report.state}")
            time.sleep(2)
    return {"report": report, "submitted": submitted, "files": filesystem.listdir(base)}


def test_token_targets_are_the_default_fs_and_its_mount_targets(alice):
    assert filesystem.token_targets() == [VIEWFS, NAMESERVICE]
    extra = filesystem.token_targets([f"{NAMESERVICE}/data"])
    assert extra == [VIEWFS, NAMESERVICE]


def test_a_task_without_a_ticket_writes_through_viewfs_and_the_nameservice(
    alice, alice_dir, tmp_path
):
    got = run_task(alice, tmp_path, alice_dir, duration=0, every=1)
    report = got["report"]
    assert (str(report.state), str(report.final_status)) == ("FINISHED", "SUCCEEDED"), (
        report.diagnostics
    )
    assert got["files"] == ["input.txt", "model", "ns-0", "viewfs-0"]
    for name in ("ns-0", "viewfs-0"):
        st = filesystem.status(f"{alice_dir}/{name}")
        assert (st["owner"], st["permission"]) == ("alice", "600")


def test_tokens_are_renewed_for_a_task_longer_than_their_renew_interval(alice, alice_dir, tmp_path):
    """The sandbox's tokens expire 2 minutes after their last renewal: writes 2.5 minutes
    after submission, each on a new connection, succeed only if the ResourceManager renews."""
    renew_s = sandbox_kerberos.TOKEN_RENEW_MS / 1000
    got = run_task(alice, tmp_path, alice_dir, duration=renew_s + 30, every=15)
    report = got["report"]
    assert (str(report.state), str(report.final_status)) == ("FINISHED", "SUCCEEDED"), (
        report.diagnostics
    )
    last = max(
        (n for n in got["files"] if n.startswith("viewfs-")), key=lambda n: int(n.split("-")[1])
    )
    written_at = float(filesystem.read_bytes(f"{alice_dir}/{last}"))
    print(f"last write {written_at - got['submitted']:.0f}s after submission ({last})")
    assert written_at - got["submitted"] > renew_s + 10
    assert f"ns-{last.split('-')[1]}" in got["files"]


# -- TensorFlow's hdfs:// plugin as alice and mallory ----------------------------------------
TF_READS = textwrap.dedent(
    """
    import json, sys
    from tfyarn_jupyter.hadoop import tf_plugin
    tf_plugin.register()
    import tensorflow as tf
    out = {}
    for uri in sys.argv[1:]:
        try:
            out[uri] = {"lines": sum(1 for _ in tf.data.TextLineDataset(uri)),
                        "listed": tf.io.gfile.listdir(uri.rsplit("/", 1)[0])}
        except tf.errors.OpError as exc:
            out[uri] = {"error": type(exc).__name__, "message": exc.message}
    print("RESULT " + json.dumps(out))
    """
)


def _tf_reads(box: Sandbox, user: str, *uris: str) -> dict:
    import json
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", TF_READS, *uris], env=as_user(box, user),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, f"rc={proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return json.loads(line.removeprefix("RESULT "))


def test_tensorflow_reads_alices_data_through_viewfs_and_the_nameservice_and_refuses_mallory(
    alice, alice_dir
):
    filesystem.write_bytes(f"{alice_dir}/data.csv", b"1,2\n3,4\n5,6\n")
    viewfs, ns = f"{VIEWFS}{alice_dir}/data.csv", f"{NAMESERVICE}{alice_dir}/data.csv"
    as_alice = _tf_reads(alice, "alice", viewfs, ns)
    assert as_alice[viewfs] == as_alice[ns] == {"lines": 3, "listed": ["data.csv"]}, as_alice
    as_mallory = _tf_reads(alice, "mallory", viewfs)[viewfs]
    assert as_mallory["error"] == "PermissionDeniedError", as_mallory
    assert "Permission denied: user=mallory" in as_mallory["message"], as_mallory
