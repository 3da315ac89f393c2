"""Container side: ``hdfs://`` and ``viewfs://`` model dirs on every TensorFlow version.

TensorFlow's wheels open no ``hdfs://`` path: TensorFlow works in a local folder that
:class:`ModelDir` syncs through hdfs_native (no JVM, no libhdfs). Uploads go to temporary
names renamed into place, the ``checkpoint`` index last: it is the commit, so a reader, or
a kill mid-push, sees the previous complete checkpoint or the new one, never a partial one.
Only the chief pushes checkpoints, or worker 0 without a chief (:func:`pushes`).
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.container.uploader import (
    BackgroundPusher,
    in_low_priority_thread,
    push_report,
)
from tfyarn_jupyter.protocol.contract import PUSH_DELAY_VAR

#: Schemes TensorFlow's wheels cannot open: synced through hdfs_native.
REMOTE_SCHEMES = ("hdfs", "viewfs")
#: The index file naming the latest checkpoint (TensorFlow's name and text format).
INDEX = "checkpoint"
#: In the names uploads and downloads are written to before their rename.
TMP_MARK = ".tfyarn-tmp-"
CHUNK = 8 * 2**20
#: Files uploaded at once: each waits ~0.5 s for HDFS to close it.
UPLOADS = 8
#: Files of a TensorFlow checkpoint (V2 data/index, V1 meta).
_CKPT_FILE = re.compile(r"\.(index|meta|data-\d+-of-\d+)$")
_LATEST, _ALL = "model_checkpoint_path", "all_model_checkpoint_paths"
_TEXT_ENTRY = re.compile(rf'^\s*({_LATEST}|{_ALL})\s*:\s*"(.*)"\s*$')


def _log(msg: str) -> None:
    log(msg, "modeldir")


def _tmp(name: str) -> str:
    return f"{name}{TMP_MARK}{uuid.uuid4().hex[:12]}"


def _write_local(path: str, text: str) -> None:
    """Write a local file atomically (a temporary name, then a rename)."""
    Path(tmp := _tmp(path)).write_text(text)
    os.replace(tmp, path)


def pushes(task_type: str, task_index: int, task_types: Iterable[str]) -> bool:
    """Whether a task pushes the model dir: the chief, or worker 0 when there is no chief."""
    first_worker = task_type == "worker" and task_index == 0 and "chief" not in set(task_types)
    return task_type == "chief" or first_worker


def _is_ckpt(rel: str) -> bool:
    """A checkpoint's file: checkpoints live at the top of the model dir (exports do not)."""
    return "/" not in rel and _CKPT_FILE.search(rel) is not None


def files_of(prefix: str, names: Iterable[str]) -> list[str]:
    """The files of checkpoint ``prefix`` among ``names``; TensorFlow's ``.index`` after data."""
    mine = [n for n in names if n == prefix or n.startswith(prefix + ".")]
    return sorted(mine, key=lambda n: (n.endswith(".index"), n))


@dataclass
class Index:
    """A ``checkpoint`` index in TensorFlow's text format."""

    latest: str
    paths: list[str]

    @classmethod
    def parse(cls, text: str) -> Index | None:
        """The index in ``text``, or None. Entries become file names: TensorFlow writes
        absolute local paths, and checkpoints are at the top of their model dir."""
        ms = [m for m in map(_TEXT_ENTRY.match, text.splitlines()) if m]
        entries = [(m[1], codecs.escape_decode(m[2].encode())[0].decode()) for m in ms]
        latest = next((v for k, v in reversed(entries) if k == _LATEST), None)
        if not latest:
            return None
        paths = [posixpath.basename(v) for k, v in entries if k == _ALL] or [latest]
        return cls(posixpath.basename(latest), paths)

    def render(self) -> str:
        lines = [f"{_LATEST}: {json.dumps(self.latest)}"]
        lines += [f"{_ALL}: {json.dumps(p)}" for p in self.paths]
        return "\n".join(lines) + "\n"


#: How often one file's upload is tried when HDFS fails it transiently.
STAGE_ATTEMPTS = 4


def _transient(exc: BaseException) -> bool:
    """An HDFS failure that another try may not meet: the NameNode not yet told of the
    last block when the file closes (a DataNode slow to report, as on a loaded node), or
    a dropped connection. Refusals (permissions, a missing folder) are not."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return isinstance(exc, RuntimeError) and "Failed to complete file in time" in str(exc)


def _hdfs_client(uri: str) -> tuple[Any, str]:
    """An ``hdfs_native.Client`` for ``uri``'s authority, and the path it names there."""
    import hdfs_native

    parts = urlsplit(uri)
    authority = f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
    try:
        return hdfs_native.Client(authority), posixpath.normpath(parts.path or "/")
    except RuntimeError as exc:  # hdfs-native's viewfs wants a linkFallback
        if parts.scheme != "viewfs" or "fallback" not in str(exc):
            raise
        from tfyarn_jupyter.hadoop import conf as client_conf

        conf = client_conf.load(os.environ.get("HADOOP_CONF_DIR", "."))
        fs, path = conf.resolve(uri)
        return hdfs_native.Client(fs), path


class ModelDir:
    """A model dir for TensorFlow: ``hdfs://``/``viewfs://`` (``remote``: TensorFlow works
    in ``local``, under ``local_root``, synced through ``client``, by default an
    ``hdfs_native.Client`` for the URI's authority), or a path TensorFlow opens itself
    (``local`` is it; pushes are no-ops). ``last_push_s``: seconds from a save to its commit."""

    def __init__(
        self, uri: str, local_root: Path | str, client: Any = None, *, pusher: bool = True
    ) -> None:
        self.uri, self.pusher, self.client, self.pulled = uri, pusher, client, False
        self.last_push_s: float | None = None
        #: Seconds a push holds its staged files before renaming them (:data:`PUSH_DELAY_VAR`).
        self.stage_delay_s = float(os.environ.get(PUSH_DELAY_VAR) or 0)
        parts = urlsplit(uri)
        self.remote = parts.scheme in REMOTE_SCHEMES
        self._pushed: dict[str, tuple[int, int]] = {}  # local file -> (size, mtime_ns) pushed
        self._prefix_files: dict[str, list[str]] = {}  # checkpoint pushed -> its files
        self._committed: str | None = None  # the checkpoint the remote index names, as we know
        self._dirs: set[str] = set()
        self._cleaned = False
        if not self.remote:
            self.local = self.path = parts.path if parts.scheme == "file" else uri
            return
        self.path = posixpath.normpath(parts.path or "/")
        digest = hashlib.sha1(uri.encode()).hexdigest()[:8]
        self.local = f"{Path(local_root).absolute()}/{posixpath.basename(self.path)}-{digest}"
        os.makedirs(self.local, exist_ok=True)
        if client is None:
            self.client, self.path = in_low_priority_thread(lambda: _hdfs_client(uri))

    def _remote(self, rel: str) -> str:
        return posixpath.join(self.path, rel)

    def _list_remote(self, temporaries: bool = False) -> dict[str, int]:
        """Remote file (relative to the dir) -> its length; {} when the dir does not exist."""
        try:
            statuses = list(self.client.list_status(self.path, recursive=True))
        except FileNotFoundError:
            return {}
        rels = {posixpath.relpath(st.path, self.path): st.length for st in statuses if not st.isdir}
        return {r: n for r, n in rels.items() if (TMP_MARK in r) == temporaries}

    def _list_local(self) -> dict[str, os.stat_result]:
        out = {}
        for root, _dirs, names in os.walk(self.local):
            for name in (n for n in names if TMP_MARK not in n):
                full = os.path.join(root, name)
                with contextlib.suppress(FileNotFoundError):  # TensorFlow deleting it meanwhile
                    out[os.path.relpath(full, self.local).replace(os.sep, "/")] = os.stat(full)
        return out

    def local_index(self) -> Index | None:
        """The local ``checkpoint`` index, its entries relative to ``local``."""
        with contextlib.suppress(FileNotFoundError):
            return Index.parse(Path(self.local, INDEX).read_text())
        return None

    def remote_index(self) -> Index | None:
        """The remote ``checkpoint`` index (the local one for a local dir)."""
        if not self.remote:
            return self.local_index()
        with contextlib.suppress(FileNotFoundError), self.client.read(self._remote(INDEX)) as r:
            return Index.parse(r.read().decode("utf-8", "replace"))
        return None

    @retry(
        retry=retry_if_exception(_transient),
        stop=stop_after_attempt(STAGE_ATTEMPTS),
        wait=wait_exponential(multiplier=0.5, max=8),
        reraise=True,
    )
    def _stage(self, rel: str, data: bytes | None) -> tuple[str, str]:
        """Upload local ``rel`` (or ``data``) to a temporary name beside its destination;
        a transient failure (:func:`_transient`) is tried again under a new name."""
        dst = self._remote(rel)
        tmp = posixpath.join(posixpath.dirname(dst), _tmp("." + posixpath.basename(dst)))
        src = os.path.join(self.local, rel)
        try:
            with (
                io.BytesIO(data or b"") if data is not None else open(src, "rb") as source,
                self.client.create(tmp) as writer,
            ):
                shutil.copyfileobj(source, writer, CHUNK)
        except BaseException:
            with contextlib.suppress(Exception):
                self.client.delete(tmp)
            raise
        return tmp, dst

    def _upload(self, files: dict[str, os.stat_result], index: Index | None = None) -> None:
        """Upload ``files`` and ``index`` to temporary names in parallel (HDFS closes a file
        ~0.5 s after its last byte), then rename them into place in order, the index last."""
        for folder in {posixpath.dirname(self._remote(rel)) for rel in [*files, INDEX]}:
            if folder not in self._dirs:
                self.client.mkdirs(folder, create_parent=True)
                self._dirs.add(folder)
        jobs: list[tuple[str, bytes | None]] = [(rel, None) for rel in files]
        jobs += [(INDEX, index.render().encode())] if index else []
        with ThreadPoolExecutor(max_workers=UPLOADS) as pool:
            futures = [pool.submit(self._stage, rel, data) for rel, data in jobs]
        try:
            staged = [future.result() for future in futures]  # every one uploaded: rename
            if self.stage_delay_s > 0:
                time.sleep(self.stage_delay_s)
            for tmp, dst in staged:
                self.client.rename(tmp, dst, overwrite=True)
        except BaseException:
            for future in futures:  # what is still at a temporary name
                with contextlib.suppress(BaseException):
                    self.client.delete(future.result()[0])
            raise
        self._pushed.update({rel: (st.st_size, st.st_mtime_ns) for rel, st in files.items()})

    def _changed(self, rel: str, st: os.stat_result) -> bool:
        return rel != INDEX and self._pushed.get(rel) != (st.st_size, st.st_mtime_ns)

    def push_checkpoint(self) -> str | None:
        """Push the newest local checkpoint, if new, then other changed files (events, graph),
        then the index: the commit. Returns the checkpoint's local prefix, or None."""
        if not (self.remote and self.pusher):
            return None
        index, local = self.local_index(), self._list_local()
        ckpt = files_of(index.latest, local) if index and index.latest != self._committed else []
        other = [r for r, st in local.items() if not _is_ckpt(r) and self._changed(r, st)]
        files = {r: local[r] for r in ckpt + other}
        start = time.monotonic()
        if not (index and ckpt):
            self._upload(files)
            return None
        paths = [p for p in index.paths if p in self._prefix_files or p == index.latest]
        self._upload(files, Index(index.latest, paths))
        self._committed, self._prefix_files[index.latest] = index.latest, ckpt
        saved = max(local[rel].st_mtime for rel in [*ckpt, INDEX] if rel in local)
        size, self.last_push_s = sum(local[rel].st_size for rel in ckpt), time.time() - saved
        _log(
            f"{index.latest} on {self.uri} {self.last_push_s:.2f} s after it was saved "
            f"({size / 2**20:.2f} MiB, {len(ckpt)} files, upload {time.monotonic() - start:.2f} s)"
        )
        self._tidy(local)
        return os.path.join(self.local, index.latest)

    def _tidy(self, local: dict[str, os.stat_result]) -> None:
        """Delete the remote files of checkpoints TensorFlow deleted here and, once, the
        top-level temporaries a killed pusher left (we are the only one committing here)."""
        stale = [] if self._cleaned else [r for r in self._list_remote(True) if "/" not in r]
        gone = [p for p in self._prefix_files if p != self._committed and not files_of(p, local)]
        self._cleaned = True
        for rel in stale + [rel for prefix in gone for rel in self._prefix_files.pop(prefix)]:
            with contextlib.suppress(Exception):
                self.client.delete(self._remote(rel))

    def push_all(self) -> None:
        """Push the latest checkpoint, then every other new or changed file (exports, ...)."""
        if not (self.remote and self.pusher):
            return
        self.push_checkpoint()
        local = self._list_local()
        self._upload({r: st for r, st in local.items() if self._changed(r, st)})

    def _get(self, rel: str) -> None:
        """Download remote ``rel`` to a local temporary name, then rename it into place."""
        dst = os.path.join(self.local, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with self.client.read(self._remote(rel)) as reader, open(tmp := _tmp(dst), "wb") as f:
            shutil.copyfileobj(reader, f, CHUNK)  # a failure leaves a temporary, ignored here
        os.replace(tmp, dst)
        st = os.stat(dst)
        self._pushed[rel] = (st.st_size, st.st_mtime_ns)  # not to be pushed back

    def _pull(self, others: bool) -> str | None:
        index = self.remote_index()  # before the listing: the files it names are there by then
        remote, local = self._list_remote(), self._list_local()
        ckpt = files_of(index.latest, remote) if index else []
        rest = [r for r in remote if r != INDEX and not _is_ckpt(r)] if others else []
        for rel in ckpt + rest:  # what is here already, same size, is the same file
            if rel not in local or local[rel].st_size != remote[rel]:
                self._get(rel)
        self.pulled = True
        if not (index and ckpt):
            if index:
                _log(f"{self.uri}: its index names {index.latest}, which is not there")
            return None
        text = Index(index.latest, [index.latest]).render()
        _write_local(os.path.join(self.local, INDEX), text)  # the local index last, too
        self._committed, self._prefix_files[index.latest] = index.latest, ckpt
        return os.path.join(self.local, index.latest)

    def pull(self) -> str | None:
        """Copy the remote latest complete checkpoint, its index and the other files (those
        not here with the same size) into ``local``; the checkpoint's local prefix, or None."""
        if not self.remote:
            return self.wait_for_new(None, 0)  # the local index's checkpoint, without waiting
        try:
            return self._pull(others=True)
        except FileNotFoundError:  # pruned by the pusher meanwhile: the index names a newer one
            return self._pull(others=True)

    def wait_for_new(self, last: str | None, timeout_s: float, poll_s: float = 1.0) -> str | None:
        """Poll the remote index until it names a checkpoint other than ``last`` (a prefix
        returned before, or None), pull it: its local prefix, or None after ``timeout_s``."""
        seen = os.path.basename(last) if last else None
        deadline = time.monotonic() + timeout_s
        while True:
            index = self.remote_index()
            if index is not None and index.latest != seen:
                if not self.remote:
                    return os.path.join(self.local, index.latest)
                with contextlib.suppress(FileNotFoundError):  # pruned meanwhile: poll again
                    got = self._pull(others=False)
                    if got is not None and os.path.basename(got) != seen:
                        return got
            if (left := deadline - time.monotonic()) <= 0:
                return None
            time.sleep(min(poll_s, left))


# -- TensorFlow glue (TensorFlow imported lazily) ------------------------------
def background_pusher(md: ModelDir) -> BackgroundPusher:
    """A thread pushing ``md``'s newest checkpoint whenever asked (:mod:`.uploader`)."""
    return BackgroundPusher(md.push_checkpoint, _log)


def finish_pushes(pusher: BackgroundPusher, timeout_s: float = 600.0) -> None:
    """At the end of training, or when it failed: the newest checkpoint pushed, the thread
    stopped. A push that still fails raises (:class:`.uploader.PushFailed`)."""
    try:
        pusher.flush(timeout_s)
    finally:
        pusher.close()
        _log(f"pushes: {push_report(pusher)}")


def estimator_listener(md: ModelDir) -> Any:
    """A ``tf.estimator.CheckpointSaverListener`` pushing each checkpoint beside training
    (TF <= 2.15), for ``TrainSpec(saving_listeners=...)``; the last one before the end."""
    import tensorflow as tf

    pusher = background_pusher(md)

    class PushListener(tf.estimator.CheckpointSaverListener):
        def after_save(self, session: Any, global_step_value: int) -> None:
            pusher.request()

        def end(self, session: Any, global_step_value: int) -> None:
            finish_pushes(pusher)

    return PushListener()
