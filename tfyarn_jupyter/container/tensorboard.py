"""Container side: the ``tensorboard`` task (tf-yarn's task type), served through YARN's proxy.

TensorBoard runs in its own container, reading the run's model dir (the
Experiment's, or the TaskSpec's ``tb_model_dir``). TensorFlow's wheels open
no ``hdfs://`` path, so a remote folder is mirrored into a local one by
:class:`LogSync` through hdfs_native: each pass lists the folder and fetches
only what changed, an event file's new bytes appended in place (event files
only grow, and TensorBoard reads an appended file as it would a local
writer's). Checkpoints are left out: TensorBoard does not read them.

The page is registered with skein's application master, which proxies it
under its web UI; the ResourceManager's web proxy fronts that, so the link
(``http://<rm>/proxy/<app id>/pages/tensorboard/``) works wherever the
ResourceManager's UI does. That proxy (Hadoop 3.5) forwards GET and PUT but
answers POST with 405, and fails (500) on a query value holding ``{``, so
neither TensorBoard's POSTs nor its GET fallback (``tensorboardColab``) get
through. :class:`Adapter` sits in front of TensorBoard: its page carries a
shim that sends the front end's POSTs as PUTs, which the adapter hands to
TensorBoard as the POSTs they were. The task publishes the link in its
``start`` event, and stays up ``tb_termination_timeout_seconds`` after every
other task ended.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import http.client
import http.server
import os
import posixpath
import re
import shutil
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tfyarn_jupyter.container.checkpoints import CHUNK, INDEX, REMOTE_SCHEMES, TMP_MARK
from tfyarn_jupyter.container.log import log
from tfyarn_jupyter.protocol import contract

if TYPE_CHECKING:
    from tfyarn_jupyter.container.task import Task

#: The route of the page under skein's web UI (``.../pages/<ROUTE>/``).
ROUTE = "tensorboard"
#: Sends the page's POSTs as PUTs (XMLHttpRequest and fetch) that YARN's proxy forwards
#: intact: a text/plain body (a form body it would parse away) without line ends (it joins
#: lines): ``tfyarn:`` and base64 of the content type, a newline, the form as urlencoded text.
SHIM = b"""/* tfyarn: YARN's web proxy forwards PUT, not POST */(function(){
var P=XMLHttpRequest.prototype,open=P.open,send=P.send,set=P.setRequestHeader,M='tfyarn:';
function wrap(ct,b){if(typeof FormData!=='undefined'&&b instanceof FormData){
var u=new URLSearchParams();b.forEach(function(v,k){u.append(k,String(v));});b=u.toString();
ct='application/x-www-form-urlencoded';}else if(b instanceof URLSearchParams){b=b.toString();
ct=ct||'application/x-www-form-urlencoded';}else if(b==null){b='';}
return M+btoa(unescape(encodeURIComponent((ct||'text/plain')+'\\n'+b)));}
P.open=function(m){this._tfy=String(m).toUpperCase()==='POST';this._tfyCt='';
if(this._tfy){arguments[0]='PUT';}return open.apply(this,arguments);};
P.setRequestHeader=function(k,v){if(this._tfy&&String(k).toLowerCase()==='content-type'){
this._tfyCt=v;return;}return set.apply(this,arguments);};
P.send=function(b){if(this._tfy){set.call(this,'Content-Type','text/plain');
return send.call(this,wrap(this._tfyCt,b));}return send.apply(this,arguments);};
var f=window.fetch;if(f){window.fetch=function(i,n){if(n&&String(n.method||'').toUpperCase()
==='POST'){var h=new Headers(n.headers||{}),ct=h.get('Content-Type')||'';
h.set('Content-Type','text/plain');n=Object.assign({},n,{method:'PUT',headers:h,
body:wrap(ct,n.body)});}return f.call(this,i,n);};}})();"""
#: Where the adapter serves the shim; TensorBoard's content policy allows same-origin scripts only.
SHIM_PATH = "/tfyarn-shim.js"
SHIM_TAG = b'<script src=".' + SHIM_PATH.encode() + b'"></script>'
#: What starts a body the shim wrapped.
MARK = b"tfyarn:"
#: Headers that concern one connection, not the request: never passed on.
_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host",
                  "proxy-connection", "content-length", "accept-encoding"})  # fmt: skip
#: Seconds between two passes over a remote folder (TensorBoard reloads every 5 s by default).
SYNC_INTERVAL_S = 5.0
#: Seconds between two looks at whether the other tasks ended.
WATCH_INTERVAL_S = 2.0
#: Files TensorBoard never reads: checkpoints (TensorFlow's and Keras's) and saved variables.
_SKIPPED = re.compile(r"\.(index|meta|data-\d+-of-\d+)$")


def _log(msg: str) -> None:
    log(msg, "tensorboard")


def is_remote(uri: str) -> bool:
    return urlsplit(uri).scheme in REMOTE_SCHEMES


def wanted(rel: str) -> bool:
    """Whether TensorBoard may read the file at ``rel``: not a checkpoint, not a temporary."""
    name = posixpath.basename(rel)
    return TMP_MARK not in rel and name != INDEX and not _SKIPPED.search(name)


@dataclasses.dataclass
class SyncStats:
    passes: int = 0
    files: int = 0
    appended_bytes: int = 0
    copied_bytes: int = 0
    last_pass_s: float = 0.0


class LogSync:
    """A local mirror of a remote (``hdfs://``, ``viewfs://``) log folder's TensorBoard files.

    ``client`` stands for an ``hdfs_native.Client`` (by default one for the
    URI's authority). New files are copied whole (to a temporary name, then
    renamed); a file that grew gets its new bytes appended; one that shrank
    (replaced) is copied again.
    """

    def __init__(self, uri: str, local_root: str | Path, client: Any = None) -> None:
        parts = urlsplit(uri)
        self.uri = uri
        self.path = posixpath.normpath(parts.path or "/")
        digest = hashlib.sha1(uri.encode()).hexdigest()[:8]
        name = posixpath.basename(self.path) or "root"
        self.local = os.path.join(os.path.abspath(local_root), f"tb-{name}-{digest}")
        os.makedirs(self.local, exist_ok=True)
        if client is None:
            import hdfs_native

            authority = f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
            client = hdfs_native.Client(authority)
        self.client = client
        self.stats = SyncStats()
        self._lock = threading.Lock()  # one pass at a time: two would append twice

    def once(self) -> int:
        """One pass: fetch what is new or changed; the bytes fetched."""
        with self._lock:
            return self._once()

    def _once(self) -> int:
        t0 = time.monotonic()
        try:
            listing = list(self.client.list_status(self.path, recursive=True))
        except FileNotFoundError:  # not written yet
            listing = []
        fetched = 0
        for st in listing:
            rel = posixpath.relpath(st.path, self.path)
            if st.isdir or not wanted(rel):
                continue
            local = os.path.join(self.local, *rel.split("/"))
            have = os.path.getsize(local) if os.path.exists(local) else -1
            if have == st.length:
                continue
            try:
                fetched += self._fetch(rel, local, have, st.length)
            except FileNotFoundError:  # deleted or renamed meanwhile: the next pass sees
                continue
        self.stats.passes += 1
        self.stats.last_pass_s = time.monotonic() - t0
        return fetched

    def _fetch(self, rel: str, local: str, have: int, length: int) -> int:
        remote = posixpath.join(self.path, rel)
        if 0 < have < length:
            with self.client.read(remote) as reader:
                data = reader.read_range(have, length - have)
            with open(local, "ab") as out:
                out.write(data)
            self.stats.appended_bytes += len(data)
            return len(data)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        tmp = f"{local}{TMP_MARK}{os.getpid()}"
        with self.client.read(remote) as reader, open(tmp, "wb") as out:
            shutil.copyfileobj(reader, out, CHUNK)
        os.replace(tmp, local)
        self.stats.files += 1
        self.stats.copied_bytes += length
        return length

    def every(self, interval_s: float, stop: threading.Event) -> threading.Thread:
        """Pass every ``interval_s`` on a thread until ``stop`` is set; errors are logged."""

        def loop() -> None:
            while not stop.wait(interval_s):
                self.safe_once()

        thread = threading.Thread(target=loop, name="tfyarn-tb-sync", daemon=True)
        thread.start()
        return thread

    def safe_once(self) -> None:
        try:
            got = self.once()
        except Exception as exc:  # HDFS briefly away: the next pass retries
            _log(f"sync of {self.uri} failed, retried in {SYNC_INTERVAL_S:.0f}s: {exc!r}")
            return
        if got:
            _log(f"synced {got} bytes from {self.uri} in {self.stats.last_pass_s:.2f}s")


def model_dir_of(task: Task) -> str:
    """The Experiment's model dir (``experiment_fn`` is called here, as tf-yarn does)."""
    experiment = task.build_experiment()
    if hasattr(experiment, "estimator"):
        return str(experiment.estimator.model_dir)
    return str(experiment.model_dir)


def serve(logdir: str, extra_args: Sequence[str]) -> int:
    """Start TensorBoard on ``logdir``, on a free port of this host only; return the port."""
    from tensorboard import program

    board = program.TensorBoard()
    board.configure(argv=[None, f"--logdir={logdir}", "--port=0", "--host=127.0.0.1",
                          *extra_args])  # fmt: skip
    url = board.launch()
    port = urlsplit(url).port
    if not port:
        raise RuntimeError(f"TensorBoard gave no port in {url!r}")
    return port


def with_shim(body: bytes) -> bytes:
    """An HTML page loading :data:`SHIM` first in its head (before the front end's scripts)."""
    at = body.find(b"<head>")
    return body[: at + 6] + SHIM_TAG + body[at + 6 :] if at >= 0 else SHIM_TAG + body


class Adapter(http.server.BaseHTTPRequestHandler):
    """Passes requests on to TensorBoard (at ``backend``); a PUT goes on as a POST."""

    backend: tuple[str, int] = ("127.0.0.1", 0)
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        if self.path.split("?")[0] != SHIM_PATH:
            self._forward("GET")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/javascript; charset=utf-8")
        self.send_header("Content-Length", str(len(SHIM)))
        self.end_headers()
        self.wfile.write(SHIM)

    def do_HEAD(self) -> None:
        self._forward("HEAD")

    def do_POST(self) -> None:
        self._forward("POST")

    def do_PUT(self) -> None:
        body = self._body() or b""
        if not body.startswith(MARK):
            self._forward("PUT", body=body)
            return
        content_type, _, form = base64.b64decode(body[len(MARK) :]).partition(b"\n")
        # TensorBoard wants X-XSRF-Protected on a POST (against forged forms); a cross-site
        # PUT needs a CORS preflight that nothing here answers: only the page's shim sends one.
        extra = {"Content-Type": content_type.decode(), "X-XSRF-Protected": "1"}
        self._forward("POST", extra, form)

    def _body(self) -> bytes | None:
        """The request's body, sent whole or in chunks (as YARN's proxy sends a PUT's)."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else None
        out = bytearray()
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            out += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return bytes(out)

    def _forward(
        self, method: str, extra: dict[str, str] | None = None, body: bytes | None = None
    ) -> None:
        if body is None and method in ("POST", "PUT"):
            body = self._body()
        extra = extra or {}
        skip = _HOP | {k.lower() for k in extra}
        headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
        conn = http.client.HTTPConnection(*self.backend, timeout=120)
        try:
            conn.request(method, self.path, body=body, headers={**headers, **extra})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if method == "GET" and resp.getheader("Content-Type", "").startswith("text/html"):
            data = with_shim(data)
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the task's log


def adapt(tb_port: int) -> int:
    """Serve :class:`Adapter` in front of TensorBoard on a free port of every address."""
    handler = type("TensorBoardAdapter", (Adapter,), {"backend": ("127.0.0.1", tb_port)})
    server = http.server.ThreadingHTTPServer(("", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="tfyarn-tb-adapter", daemon=True).start()
    return int(server.server_address[1])


def others(task: Task) -> list[str]:
    """Every task of the run but TensorBoard itself."""
    return [f"{t}:{i}" for t, n in task.topology.items() if t != "tensorboard" for i in range(n)]


def run(task: Task) -> None:
    """The tensorboard task: mirror, serve, register the page, outlive training by the timeout."""
    settings = contract.TensorBoardContract.from_env()
    argv = settings.argv
    uri = settings.model_dir or model_dir_of(task)
    stop = threading.Event()
    sync = None
    logdir = urlsplit(uri).path if uri.startswith("file:") else uri
    if is_remote(uri):
        sync = LogSync(uri, os.getcwd())
        sync.safe_once()
        sync.every(SYNC_INTERVAL_S, stop)
        logdir = sync.local
    t0 = time.monotonic()
    port = adapt(serve(logdir, argv))
    target = f"http://{socket.gethostname()}:{port}"
    page = task.app.ui.add_page(ROUTE, target, link_name="TensorBoard")
    url = page.address
    task.put("start", url=url, target=target, logdir=uri)
    _log(f"TensorBoard on {uri} listening on {url} ({target}, {time.monotonic() - t0:.1f}s)")
    names = set(others(task))
    while task.ended(names) != names:
        time.sleep(WATCH_INTERVAL_S)
    if sync is not None:
        sync.safe_once()  # what the trainers and the evaluator pushed last
    _log(f"training ended: TensorBoard stays up {settings.termination_timeout_s}s")
    time.sleep(settings.termination_timeout_s)
    stop.set()
    with contextlib.suppress(Exception):
        task.app.ui.remove_page(ROUTE)
    if sync is not None:
        s = sync.stats
        _log(f"{s.passes} passes over {uri}: {s.files} files copied ({s.copied_bytes} bytes), "
             f"{s.appended_bytes} bytes appended")  # fmt: skip
