"""TensorFlow's hdfs:// plugin: built, loaded, and registered when TensorFlow is imported.

TensorFlow's pip wheels dropped HDFS; it loads filesystems as plugins through its
modular filesystem C API (the headers ship in the wheel). ``tf_hdfs_plugin.cc`` is such
a plugin: a thin C layer forwarding every operation to callbacks installed here with
ctypes, which call a :class:`.tf_filesystem.Bridge` (HDFS through hdfs-native).

The plugin is compiled once per TensorFlow (its headers and ``libtensorflow_framework``,
found without importing TensorFlow) with the C++ compiler on the machine, into a cache
keyed by the source and TensorFlow's files; a run ships the client's build to its
containers, and a container without one builds its own. :func:`register` loads it into
the running TensorFlow; :func:`register_on_import` does so as soon as TensorFlow is
imported (what ``%load_ext tfyarn_jupyter`` and every task do), so loading the
extension does not import TensorFlow. docs/data.md has the figures and the limits.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.abc
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfyarn_jupyter.hadoop.tf_filesystem import OUT_OF_RANGE, Bridge, status_code
from tfyarn_jupyter.protocol.contract import TF_HDFS_PLUGIN

SOURCE = Path(__file__).with_name("tf_hdfs_plugin.cc")
#: The schemes the plugin registers.
SCHEMES = ("hdfs", "viewfs")
#: Where a build is looked for first (a run ships the client's build and names it here).
PLUGIN_VAR = "TFYARN_TF_HDFS_PLUGIN"


class PluginError(RuntimeError):
    """The plugin could not be built or loaded: the message says why and what to do."""


# -- building ---------------------------------------------------------------------------
def tensorflow_dir() -> Path:
    """The installed TensorFlow's package folder, found without importing it."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise PluginError("TensorFlow is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations)))


def _framework(tf_dir: Path) -> Path:
    found = sorted(tf_dir.glob("libtensorflow_framework.so*"))
    if not found:
        raise PluginError(f"no libtensorflow_framework.so in {tf_dir}: is TensorFlow complete?")
    return found[-1]


def build_key(tf_dir: Path) -> str:
    """What a build depends on: the source, and the TensorFlow it is built against."""
    h = hashlib.sha256(SOURCE.read_bytes())
    for f in (tf_dir / "include/tensorflow/c/experimental/filesystem/filesystem_interface.h",
              _framework(tf_dir)):  # fmt: skip
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def compile_command(tf_dir: Path, out: Path, cc: str = "c++") -> list[str]:
    """The compiler's command line: a shared library linked to TensorFlow's framework."""
    lib = _framework(tf_dir)
    return [
        cc, "-shared", "-fPIC", "-O2", "-std=c++17",
        f"-I{tf_dir / 'include'}", str(SOURCE), "-o", str(out),
        f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}",
    ]  # fmt: skip


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tfyarn" / "tf-hdfs"


def build(cache: Path | None = None) -> Path:
    """The plugin for this environment's TensorFlow: the cached build, else a new one."""
    tf_dir = tensorflow_dir()
    cache = cache or cache_root()
    out = cache / f"tf_hdfs_{build_key(tf_dir)}.so"
    if out.exists():
        return out
    cc = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not cc:
        raise PluginError(
            "no C++ compiler (c++, g++ or $CXX) to build the hdfs:// plugin for TensorFlow: "
            "install one (Debian: apt-get install g++), or read and write HDFS with "
            "tfyarn_jupyter.hadoop.filesystem instead of TensorFlow's file functions"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        part = Path(tmp) / out.name
        proc = subprocess.run(compile_command(tf_dir, part, cc), capture_output=True, text=True)
        if proc.returncode != 0:
            raise PluginError(f"building the hdfs:// plugin failed: {proc.stderr.strip()[-800:]}")
        os.replace(part, out)  # atomic: a concurrent build of the same key is the same file
    return out


def find_or_build() -> Path:
    """A build named by ``$TFYARN_TF_HDFS_PLUGIN``, else the one a run shipped to the
    container's folder, else :func:`build` (in a temporary folder where the cache is
    not writable, as in a container whose user has no home)."""
    for shipped in (os.environ.get(PLUGIN_VAR), TF_HDFS_PLUGIN):
        if shipped and Path(shipped).is_file():
            return Path(shipped).absolute()
    try:
        cache_root().mkdir(parents=True, exist_ok=True)
    except OSError:
        return build(Path(tempfile.gettempdir()) / "tfyarn-tf-hdfs")
    return build()


# -- the C side -------------------------------------------------------------------------
_P, _S = ctypes.c_void_p, ctypes.c_char_p
_I64, _SZ, _INT = ctypes.c_int64, ctypes.c_size_t, ctypes.c_int
_FIELDS = [
    ("open_read", ctypes.CFUNCTYPE(_I64, _P, _S)),
    ("read", ctypes.CFUNCTYPE(_I64, _P, _I64, ctypes.c_uint64, _SZ, _P)),
    ("open_write", ctypes.CFUNCTYPE(_I64, _P, _S, _INT)),
    ("write", ctypes.CFUNCTYPE(None, _P, _I64, _P, _SZ)),
    ("tell", ctypes.CFUNCTYPE(_I64, _P, _I64)),
    ("flush", ctypes.CFUNCTYPE(None, _P, _I64, _INT)),
    ("close", ctypes.CFUNCTYPE(None, _P, _I64)),
    ("release", ctypes.CFUNCTYPE(None, _I64)),
    ("exists", ctypes.CFUNCTYPE(None, _P, _S)),
    (
        "stat",
        ctypes.CFUNCTYPE(
            None, _P, _S, ctypes.POINTER(_I64), ctypes.POINTER(_I64), ctypes.POINTER(_INT)
        ),
    ),
    ("list", ctypes.CFUNCTYPE(_INT, _P, _S, ctypes.POINTER(_P))),
    ("mkdir", ctypes.CFUNCTYPE(None, _P, _S, _INT)),
    ("remove", ctypes.CFUNCTYPE(None, _P, _S, _INT)),
    ("rename", ctypes.CFUNCTYPE(None, _P, _S, _S)),
]


class _Callbacks(ctypes.Structure):
    _fields_ = _FIELDS


def _guarded(lib: Any, fn: Callable[..., Any], default: Any) -> Callable[..., Any]:
    """``fn(status, ...)`` whose exception becomes TensorFlow's status (through
    ``lib.tfyarn_set_status``) and ``default`` its result: never a crash in TensorFlow."""

    def call(status: int, *args: Any) -> Any:
        try:
            return fn(status, *args)
        except BaseException as exc:  # everything goes to TensorFlow, nothing crashes it
            message = f"{type(exc).__name__}: {exc}".encode(errors="replace")[:2000]
            lib.tfyarn_set_status(ctypes.c_void_p(status), status_code(exc), message)
            return default

    return call


def _operations(bridge: Bridge, lib: Any) -> dict[str, tuple[Callable[..., Any], Any]]:
    """Each callback of the C table: what it does with the bridge, and its result on error."""

    def text(raw: bytes) -> str:
        return raw.decode()

    def read(status: int, handle: int, offset: int, n: int, buffer: int) -> int:
        got = bridge.read_into(handle, offset, n, buffer)
        if got < n:
            lib.tfyarn_set_status(ctypes.c_void_p(status), OUT_OF_RANGE, b"read past the end")
        return got

    def stat(status: int, uri: bytes, length: Any, mtime: Any, isdir: Any) -> None:
        length[0], mtime[0], isdir[0] = bridge.stat(text(uri))

    def listing(status: int, uri: bytes, out: Any) -> int:
        names = bridge.list(text(uri))
        block = b"".join(n.encode() + b"\0" for n in names) or b"\0"
        ptr = lib.tfyarn_malloc(len(block))
        ctypes.memmove(ptr, block, len(block))
        out[0] = ptr
        return len(names)

    return {
        "open_read": (lambda s, uri: bridge.open_read(text(uri)), 0),
        "read": (read, -1),
        "open_write": (lambda s, uri, append: bridge.open_write(text(uri), bool(append)), 0),
        "write": (lambda s, h, buf, n: bridge.write(h, ctypes.string_at(buf, n)), None),
        "tell": (lambda s, h: bridge.tell(h), -1),
        "flush": (lambda s, h, sync: bridge.flush(h, bool(sync)), None),
        "close": (lambda s, h: bridge.close(h), None),
        "exists": (lambda s, uri: bridge.exists(text(uri)), None),
        "stat": (stat, None),
        "list": (listing, -1),
        "mkdir": (lambda s, uri, rec: bridge.mkdir(text(uri), bool(rec)), None),
        "remove": (lambda s, uri, kind: bridge.remove(text(uri), kind), None),
        "rename": (lambda s, a, b: bridge.rename(text(a), text(b)), None),
    }


def c_callbacks(bridge: Bridge, lib: Any) -> _Callbacks:
    """The bridge's operations as the C function pointers the plugin calls."""
    ops = _operations(bridge, lib)
    fields = {}
    for name, ftype in _FIELDS:
        if name == "release":  # no status to set: TensorFlow is discarding the file
            fields[name] = ftype(bridge.release)
        else:
            fn, default = ops[name]
            fields[name] = ftype(_guarded(lib, fn, default))
    return _Callbacks(**fields)


# -- registration -----------------------------------------------------------------------
_lock = threading.Lock()
_registered: dict[str, Any] = {}


def register(plugin: Path | None = None, bridge: Bridge | None = None) -> Path:
    """Make ``hdfs://`` and ``viewfs://`` open in this process's TensorFlow (importing it);
    the plugin's path. Idempotent; :class:`PluginError` says why it could not."""
    with _lock:
        if "path" in _registered:
            return _registered["path"]
        path = plugin or find_or_build()
        lib = ctypes.CDLL(str(path))
        lib.tfyarn_set_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
        lib.tfyarn_malloc.restype = ctypes.c_void_p
        lib.tfyarn_malloc.argtypes = [ctypes.c_size_t]
        callbacks = c_callbacks(bridge or Bridge(), lib)
        lib.tfyarn_set_callbacks(ctypes.byref(callbacks))
        import tensorflow as tf

        try:
            tf.experimental.register_filesystem_plugin(str(path))
        except Exception as exc:
            raise PluginError(f"TensorFlow refused the hdfs:// plugin {path}: {exc}") from exc
        _registered.update(path=path, lib=lib, callbacks=callbacks)
        return path


def registered() -> bool:
    return "path" in _registered


class _AfterImport(importlib.abc.MetaPathFinder):
    """Registers the plugin right after ``tensorflow`` is imported, once."""

    def __init__(
        self, on_error: Callable[[BaseException], None], on_imported: Callable[[], None] | None
    ) -> None:
        self.on_error, self.on_imported = on_error, on_imported
        self.busy = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "tensorflow" or self.busy:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None:
            return None
        loader, finder = spec.loader, self

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return loader.create_module(spec)

            def exec_module(self, module: Any) -> None:
                loader.exec_module(module)
                finder.remove()
                if finder.on_imported is not None:
                    finder.on_imported()
                try:
                    register()
                except Exception as exc:
                    finder.on_error(exc)

        spec.loader = Loader()
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def register_on_import(
    on_error: Callable[[BaseException], None], on_imported: Callable[[], None] | None = None
) -> None:
    """:func:`register` now if TensorFlow is imported, else right after it is; errors go to
    ``on_error`` (a warning: the rest of TensorFlow works without ``hdfs://``)."""
    if "tensorflow" in sys.modules:
        if on_imported is not None:
            on_imported()
        try:
            register()
        except Exception as exc:
            on_error(exc)
        return
    if not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(on_error, on_imported))
