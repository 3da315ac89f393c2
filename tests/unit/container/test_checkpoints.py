"""hdfs:// model dirs: pushes commit with the index last, pulls restore complete checkpoints.

Against :class:`FakeClient`, a dict-backed stand-in for ``hdfs_native.Client``
that logs every operation and fails on demand; the real HDFS round trip is in
``tests/integration/test_modeldir_hdfs.py``.
"""

from __future__ import annotations

import io
import os
import posixpath
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tfyarn_jupyter.container import checkpoints as modeldir
from tfyarn_jupyter.container.checkpoints import TMP_MARK, Index, ModelDir
from tfyarn_jupyter.protocol.contract import PUSH_DELAY_VAR

URI = "hdfs://nn:8020/user/alice/model"
ROOT = "/user/alice/model"


@dataclass
class Status:
    path: str
    length: int
    isdir: bool
    modification_time: int = 0


class Writer:
    """Bytes reach the fake as they are written, as on HDFS: a failure leaves a partial file."""

    def __init__(self, fs: FakeClient, path: str) -> None:
        self.fs, self.path = fs, path
        fs.files[path] = b""

    def write(self, data: bytes) -> int:
        self.fs.op("write", self.path)
        self.fs.files[self.path] += bytes(data)
        return len(data)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class FakeClient:
    """The few ``hdfs_native.Client`` methods ModelDir uses, over a dict of paths to bytes."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.dirs: set[str] = {"/"}
        self.ops: list[tuple[str, str]] = []
        self.fail: Callable[[str, str], bool] = lambda op, path: False

    def op(self, name: str, path: str) -> None:
        if self.fail(name, path):
            raise OSError(f"injected failure: {name} {path}")
        self.ops.append((name, path))

    def get_file_info(self, path: str) -> Status:
        if path in self.files:
            return Status(path, len(self.files[path]), False)
        if path in self.dirs:
            return Status(path, 0, True)
        raise FileNotFoundError(path)

    def list_status(self, path: str, recursive: bool = False):
        self.op("list", path)
        if path not in self.dirs:
            raise FileNotFoundError(path)
        under = [Status(p, len(b), False) for p, b in self.files.items()]
        under += [Status(d, 0, True) for d in self.dirs]
        under = [s for s in under if s.path.startswith(path.rstrip("/") + "/")]
        return iter(s for s in under if recursive or posixpath.dirname(s.path) == path)

    def read(self, path: str) -> io.BytesIO:
        self.op("read", path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return io.BytesIO(self.files[path])

    def create(self, path: str, write_options: object = None) -> Writer:
        self.op("create", path)
        if path in self.files:
            raise FileExistsError(path)
        if posixpath.dirname(path) not in self.dirs:
            raise FileNotFoundError(posixpath.dirname(path))
        return Writer(self, path)

    def rename(self, src: str, dst: str, overwrite: bool = False) -> None:
        self.op("rename", dst)
        if dst in self.files and not overwrite:
            raise FileExistsError(dst)
        self.files[dst] = self.files.pop(src)

    def delete(self, path: str, recursive: bool = False) -> bool:
        self.op("delete", path)
        return self.files.pop(path, None) is not None

    def mkdirs(self, path: str, permission: int = 0o755, create_parent: bool = False) -> None:
        self.op("mkdirs", path)
        while path not in self.dirs:
            self.dirs.add(path)
            path = posixpath.dirname(path)

    # -- for the tests ---------------------------------------------------------
    def under(self, root: str = ROOT) -> dict[str, bytes]:
        return {posixpath.relpath(p, root): b for p, b in self.files.items() if p.startswith(root)}

    def index(self) -> Index | None:
        data = self.files.get(f"{ROOT}/checkpoint")
        return Index.parse(data.decode()) if data is not None else None


def save(folder: str, step: int, kept: int = 5, size: int = 300) -> str:
    """Write a checkpoint as TensorFlow's Saver does: data, index, meta, then the index file."""
    prefix = os.path.join(folder, f"model.ckpt-{step}")
    Path(prefix + ".data-00000-of-00001").write_bytes(os.urandom(size))
    Path(prefix + ".index").write_bytes(os.urandom(20))
    Path(prefix + ".meta").write_bytes(os.urandom(30))
    index_file = Path(folder, "checkpoint")
    old = Index.parse(index_file.read_text()) if index_file.exists() else None
    paths = [os.path.join(folder, p) for p in (old.paths if old else [])] + [prefix]
    lines = [f'model_checkpoint_path: "{prefix}"']  # absolute, as TensorFlow writes them
    lines += [f'all_model_checkpoint_paths: "{p}"' for p in paths[-kept:]]
    lines += ["all_model_checkpoint_timestamps: 1.7e9", "last_preserved_timestamp: 1.6e9"]
    index_file.write_text("\n".join(lines) + "\n")
    with open(os.path.join(folder, "events.out.tfevents.1.host"), "ab") as f:
        f.write(b"event %d\n" % step)
    return prefix


def ckpt_files(step: int) -> set[str]:
    return {f"model.ckpt-{step}.{ext}" for ext in ("data-00000-of-00001", "index", "meta")}


@pytest.fixture
def fs() -> FakeClient:
    return FakeClient()


@pytest.fixture
def chief(tmp_path: Path, fs: FakeClient) -> ModelDir:
    return ModelDir(URI, tmp_path / "chief", client=fs)


def reader(tmp_path: Path, fs: FakeClient, name: str = "reader") -> ModelDir:
    return ModelDir(URI, tmp_path / name, client=fs)


def test_hdfs_and_viewfs_uris_are_remote_and_tensorflow_works_in_a_local_folder(tmp_path, fs):
    for uri in (URI, "viewfs://cluster/user/alice/model"):
        md = ModelDir(uri, tmp_path, client=fs)
        assert md.remote and md.path == ROOT
        assert Path(md.local).is_dir() and Path(md.local).parent == tmp_path
    assert ModelDir(URI, tmp_path, client=fs).local == ModelDir(URI, tmp_path, client=fs).local
    assert ModelDir(URI, tmp_path, client=fs).local != md.local  # one folder per URI


def test_the_default_client_is_for_the_uris_scheme_and_authority(tmp_path, monkeypatch):
    made: list[str | None] = []
    fake = types.SimpleNamespace(Client=lambda url=None: made.append(url) or FakeClient())
    monkeypatch.setitem(sys.modules, "hdfs_native", fake)
    ModelDir(URI, tmp_path)
    ModelDir("viewfs://cluster/m", tmp_path)
    ModelDir("hdfs:///user/alice/m", tmp_path)  # no authority: fs.defaultFS
    assert made == ["hdfs://nn:8020", "viewfs://cluster", None]


@pytest.mark.parametrize("given", ["{d}/model", "file://{d}/model", "model"])
def test_local_paths_pass_through(tmp_path, monkeypatch, given):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "hdfs_native", None)  # never imported for a local dir
    md = ModelDir(given.format(d=tmp_path), tmp_path / "unused")
    assert not md.remote and md.client is None
    assert md.local in (str(tmp_path / "model"), "model")
    assert not (tmp_path / "unused").exists()
    assert md.pull() is None and md.push_checkpoint() is None and md.push_all() is None
    os.makedirs(md.local)
    prefix = save(md.local, 100)
    assert (
        md.pull() == os.path.join(md.local, "model.ckpt-100") and Path(prefix + ".index").exists()
    )
    assert md.wait_for_new(None, 0) == os.path.join(md.local, "model.ckpt-100")
    assert md.wait_for_new(md.pull(), 0.05, poll_s=0.01) is None
    assert md.push_checkpoint() is None and md.last_push_s is None


def test_a_push_sends_checkpoint_files_then_other_files_then_the_index_last(chief, fs, capsys):
    save(chief.local, 100)
    Path(chief.local, "graph.pbtxt").write_text("node {}")
    assert chief.push_checkpoint() == os.path.join(chief.local, "model.ckpt-100")
    assert set(fs.under()) == ckpt_files(100) | {"events.out.tfevents.1.host", "graph.pbtxt",
                                                "checkpoint"}  # fmt: skip
    for name, data in fs.under().items():
        if name != "checkpoint":
            assert data == Path(chief.local, name).read_bytes(), name
    placed = [path for op, path in fs.ops if op == "rename"]
    assert placed[-1] == f"{ROOT}/checkpoint"  # the commit comes last
    assert placed.index(f"{ROOT}/model.ckpt-100.index") > placed.index(
        f"{ROOT}/model.ckpt-100.data-00000-of-00001"
    )
    finals = {f"{ROOT}/{n}" for n in fs.under()}
    assert not [p for op, p in fs.ops if op in ("create", "write") and p in finals]  # via temps
    assert fs.files[f"{ROOT}/checkpoint"].decode() == (
        'model_checkpoint_path: "model.ckpt-100"\nall_model_checkpoint_paths: "model.ckpt-100"\n'
    )  # relative: valid wherever it is pulled
    assert chief.last_push_s is not None and 0 <= chief.last_push_s < 60
    assert "model.ckpt-100 on hdfs://nn:8020/user/alice/model" in capsys.readouterr().err


def test_pushing_again_sends_only_what_changed(chief, fs):
    save(chief.local, 100)
    chief.push_checkpoint()
    fs.ops.clear()
    with open(os.path.join(chief.local, "events.out.tfevents.1.host"), "ab") as f:
        f.write(b"more")
    assert chief.push_checkpoint() is None  # no new checkpoint
    assert [p for op, p in fs.ops if op == "rename"] == [f"{ROOT}/events.out.tfevents.1.host"]
    fs.ops.clear()
    assert chief.push_checkpoint() is None and not [op for op, _ in fs.ops if op == "create"]


def test_a_file_hdfs_could_not_complete_in_time_is_uploaded_again_and_nothing_is_lost(
    tmp_path, chief, fs, monkeypatch
):
    from tfyarn_jupyter.container import checkpoints as md

    monkeypatch.setattr(md.ModelDir._stage.retry, "sleep", lambda s: None)  # type: ignore[attr-defined]
    save(chief.local, 100)
    failed: list[str] = []

    def slow_namenode(op: str, path: str) -> bool:
        if op == "write" and "ckpt-100.meta" in path and len(failed) < 2:
            failed.append(path)  # as hdfs-native reports a last block not yet acknowledged
            raise RuntimeError('OperationFailed("Failed to complete file in time")')
        return False

    fs.fail = slow_namenode
    assert chief.push_checkpoint() == os.path.join(chief.local, "model.ckpt-100")
    assert len(failed) == 2 and len(set(failed)) == 2  # each try under a new temporary name
    assert fs.index().latest == "model.ckpt-100"
    assert not [n for n in fs.under() if TMP_MARK in n]
    for n in ckpt_files(100):
        assert fs.under()[n] == Path(chief.local, n).read_bytes()


def test_a_refusal_is_not_tried_again(chief, fs, monkeypatch):
    from tfyarn_jupyter.container import checkpoints as md

    monkeypatch.setattr(md.ModelDir._stage.retry, "sleep", lambda s: None)  # type: ignore[attr-defined]
    save(chief.local, 100)
    tries: list[str] = []

    def refuse(op: str, path: str) -> bool:
        if op == "create" and "ckpt-100.meta" in path:
            tries.append(path)
            return True
        return False

    fs.fail = refuse
    with pytest.raises(OSError, match="injected"):
        chief.push_checkpoint()
    assert len(tries) == 1, tries


@pytest.mark.parametrize(
    "op, name",
    [("write", "model.ckpt-200.meta"), ("rename", "model.ckpt-200.index"),
     ("create", "checkpoint"), ("rename", "checkpoint")],
)  # fmt: skip
def test_a_push_interrupted_after_the_data_files_leaves_the_previous_checkpoint(
    tmp_path, chief, fs, op, name
):
    save(chief.local, 100)
    chief.push_checkpoint()
    before = {n: d for n, d in fs.under().items() if "ckpt-100" in n or n == "checkpoint"}
    save(chief.local, 200)
    fs.fail = lambda o, path: o == op and posixpath.basename(path).lstrip(".").startswith(name)
    with pytest.raises(OSError, match="injected"):
        chief.push_checkpoint()
    fs.fail = lambda o, path: False
    assert fs.index().latest == "model.ckpt-100"
    assert {n: d for n, d in fs.under().items() if n in before} == before
    assert not [n for n in fs.under() if TMP_MARK in n]  # its temporaries removed
    if op != "rename":  # nothing renamed into place unless every file was uploaded
        assert not [n for n in fs.under() if "ckpt-200" in n]
    fresh = reader(tmp_path, fs)
    assert fresh.pull() == os.path.join(fresh.local, "model.ckpt-100")
    for n in ckpt_files(100):
        assert Path(fresh.local, n).read_bytes() == Path(chief.local, n).read_bytes()
    assert chief.push_checkpoint() == os.path.join(chief.local, "model.ckpt-200")  # retried
    assert fs.index().latest == "model.ckpt-200"


def test_a_push_made_slow_on_purpose_holds_every_file_at_a_temporary_name_then_commits(
    tmp_path, fs, monkeypatch
):
    monkeypatch.setenv(PUSH_DELAY_VAR, "0.3")
    slow = ModelDir(URI, tmp_path / "slow", client=fs)
    save(slow.local, 100)
    seen: dict[str, list[str]] = {}

    def watch() -> None:  # what a reader sees while the push waits
        time.sleep(0.15)
        seen["during"] = sorted(fs.under())

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.monotonic()
    slow.push_checkpoint()
    watcher.join()
    assert time.monotonic() - t0 >= 0.3
    assert seen["during"] and all(TMP_MARK in n for n in seen["during"]), seen
    assert fs.index().latest == "model.ckpt-100"
    assert not [n for n in fs.under() if TMP_MARK in n]


def test_a_killed_pushers_temporaries_are_ignored_by_readers_and_deleted_by_the_next_pusher(
    tmp_path, chief, fs
):
    save(chief.local, 100)
    chief.push_checkpoint()
    stale = f"{ROOT}/.model.ckpt-200.index{TMP_MARK}0123456789ab"
    fs.files[stale] = b"partial"
    evaluator = reader(tmp_path, fs)
    evaluator.pull()
    assert not [n for n in os.listdir(evaluator.local) if "ckpt-200" in n]
    os.makedirs(os.path.join(evaluator.local, "eval"))
    Path(evaluator.local, "eval", "events.out.tfevents.2.host").write_bytes(b"eval")
    evaluator.push_all()  # its own files only; it commits no checkpoint, so it cleans nothing
    assert fs.under()["eval/events.out.tfevents.2.host"] == b"eval" and stale in fs.files
    successor = reader(tmp_path, fs, "successor")  # the chief's next attempt
    successor.pull()
    save(successor.local, 300)
    successor.push_checkpoint()
    assert stale not in fs.files and fs.index().latest == "model.ckpt-300"


def test_pull_restores_the_latest_complete_checkpoint_and_the_other_files(tmp_path, chief, fs):
    save(chief.local, 100)
    chief.push_checkpoint()
    save(chief.local, 200)
    os.makedirs(os.path.join(chief.local, "eval"))
    Path(chief.local, "eval", "events.out.tfevents.2.host").write_bytes(b"eval")
    chief.push_checkpoint()
    fs.files[f"{ROOT}/model.ckpt-300.data-00000-of-00001"] = b"uncommitted"
    fresh = reader(tmp_path, fs)
    assert fresh.pull() == os.path.join(fresh.local, "model.ckpt-200")
    local = {str(p.relative_to(fresh.local)) for p in Path(fresh.local).rglob("*") if p.is_file()}
    assert local == ckpt_files(200) | {"checkpoint", "events.out.tfevents.1.host",
                                       "eval/events.out.tfevents.2.host"}  # fmt: skip
    for n in local - {"checkpoint"}:
        assert Path(fresh.local, n).read_bytes() == Path(chief.local, n).read_bytes(), n
    assert Index.parse(Path(fresh.local, "checkpoint").read_text()) == Index(
        "model.ckpt-200", ["model.ckpt-200"]
    )
    fs.ops.clear()
    fresh.push_all()  # what it pulled is not pushed back
    assert not [op for op, _ in fs.ops if op in ("create", "rename")]
    fs.ops.clear()
    assert fresh.pull() is not None  # and what it has already is not pulled again
    assert [path for op, path in fs.ops if op == "read"] == [f"{ROOT}/checkpoint"]


def test_pull_of_a_missing_or_empty_remote_dir_is_none(tmp_path, fs):
    assert reader(tmp_path, fs).pull() is None
    fs.mkdirs(ROOT)
    fs.files[f"{ROOT}/events.out.tfevents.1.host"] = b"e"
    md = reader(tmp_path, fs, "other")
    assert md.pull() is None and md.pulled
    assert Path(md.local, "events.out.tfevents.1.host").read_bytes() == b"e"


def test_wait_for_new_returns_a_new_checkpoint_and_times_out_otherwise(tmp_path, chief, fs):
    evaluator = reader(tmp_path, fs, "evaluator")
    started = time.monotonic()
    assert evaluator.wait_for_new(None, 0.1, poll_s=0.02) is None
    assert 0.1 <= time.monotonic() - started < 2
    save(chief.local, 100)
    chief.push_checkpoint()
    first = evaluator.wait_for_new(None, 1, poll_s=0.02)
    assert first == os.path.join(evaluator.local, "model.ckpt-100")
    assert {n for n in os.listdir(evaluator.local)} == ckpt_files(100) | {"checkpoint"}
    assert evaluator.wait_for_new(first, 0.1, poll_s=0.02) is None

    def later() -> None:
        time.sleep(0.2)
        save(chief.local, 200)
        chief.push_checkpoint()

    thread = threading.Thread(target=later)
    thread.start()
    second = evaluator.wait_for_new(first, 10, poll_s=0.02)
    thread.join()
    assert second == os.path.join(evaluator.local, "model.ckpt-200")
    assert (
        Path(second + ".index").read_bytes()
        == Path(chief.local, "model.ckpt-200.index").read_bytes()
    )


def test_checkpoints_tensorflow_deleted_locally_are_deleted_remotely(chief, fs):
    save(chief.local, 100, kept=1)
    chief.push_checkpoint()
    save(chief.local, 200, kept=1)
    for n in ckpt_files(100):  # TensorFlow's max_to_keep at work
        os.remove(os.path.join(chief.local, n))
    chief.push_checkpoint()
    names = set(fs.under())
    assert ckpt_files(200) <= names and not ckpt_files(100) & names
    assert fs.index() == Index("model.ckpt-200", ["model.ckpt-200"])


def test_push_all_sends_exports_and_a_pull_does_not_take_their_variables_for_checkpoints(
    tmp_path, chief, fs
):
    save(chief.local, 100)
    export = Path(chief.local, "export", "best", "1700000000")
    (export / "variables").mkdir(parents=True)
    (export / "saved_model.pb").write_bytes(b"pb")
    (export / "variables" / "variables.index").write_bytes(b"vi")
    (export / "variables" / "variables.data-00000-of-00001").write_bytes(b"vd")
    chief.push_all()
    assert fs.under()["export/best/1700000000/variables/variables.index"] == b"vi"
    fresh = reader(tmp_path, fs)
    fresh.pull()
    assert Path(
        fresh.local, "export/best/1700000000/variables/variables.data-00000-of-00001"
    ).exists()


def test_only_the_chief_or_the_first_worker_without_a_chief_pushes(tmp_path, fs):
    assert modeldir.pushes("chief", 0, ["chief", "worker"])
    assert modeldir.pushes("worker", 0, ["worker", "ps"])
    assert not modeldir.pushes("worker", 0, ["chief", "worker"])
    assert not modeldir.pushes("worker", 1, ["worker"])
    assert not modeldir.pushes("evaluator", 0, ["worker", "evaluator"])
    md = ModelDir(URI, tmp_path, client=fs, pusher=False)
    save(md.local, 100)
    assert md.push_checkpoint() is None and md.push_all() is None and not fs.files


def test_the_index_reads_tensorflows_text_format():
    text = (
        'model_checkpoint_path: "/data/run 1/model.ckpt-3"\n'
        'all_model_checkpoint_paths: "/data/run 1/model.ckpt-2"\n'
        'all_model_checkpoint_paths: "model.ckpt-3"\n'
        "all_model_checkpoint_timestamps: 1700000000.5\n"
        'all_model_checkpoint_paths: "caf\\303\\251.ckpt"\n'
    )
    index = Index.parse(text)
    assert index == Index("model.ckpt-3", ["model.ckpt-2", "model.ckpt-3", "café.ckpt"])
    assert Index.parse(Index("a", ["a"]).render()) == Index("a", ["a"])
    assert Index.parse("") is None and Index.parse("{not json") is None
    assert Index.parse('all_model_checkpoint_paths: "x"') is None


class FakeModel:
    def __init__(self) -> None:
        self.loaded: list[str] = []

    def save_weights(self, path: str) -> None:
        Path(path).write_bytes(os.urandom(64))

    def load_weights(self, path: str) -> None:
        assert Path(path).exists()
        self.loaded.append(path)
