"""Container side: what a task leaves on its node (temporary files) and holds there (its port).

Temporary files go in the container's working folder, which YARN deletes with
the container: TensorFlow's autograph writes ``__autograph_generated_file*.py``
modules to the temporary folder and removes them at exit, which a task's
``os._exit`` skips, so in the node's ``/tmp`` they would pile up.

A task publishes its TensorFlow port before TensorFlow's server binds it: the
socket that found the port stays bound until then, with ``SO_REUSEPORT`` (which
TensorFlow's gRPC server sets too), so the server can bind beside it while no
other program on the node can take the port in between.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time


def use_container_tmp(workdir: str | None = None) -> str:
    """Point ``TMPDIR`` and :mod:`tempfile` at ``<workdir>/tmp``; call before importing TF."""
    path = os.path.join(os.path.abspath(workdir or os.getcwd()), "tmp")
    os.makedirs(path, exist_ok=True)
    os.environ["TMPDIR"] = path
    tempfile.tempdir = path
    return path


def _bound_socket() -> socket.socket:
    """A TCP socket bound to a free port on every address (IPv6 and IPv4, else IPv4 only)."""
    for family, address in ((socket.AF_INET6, "::"), (socket.AF_INET, "")):
        sock = None
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((address, 0))
            return sock
        except OSError:
            if sock is not None:
                sock.close()
            if family == socket.AF_INET:
                raise
    raise AssertionError("unreachable")


def listening(port: int, timeout: float = 0.2) -> bool:
    """Whether something accepts connections on ``port`` on this host."""
    for host in ("127.0.0.1", "::1"):
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout):
            return True
    return False


class PortHold:
    """A free port, kept bound (never listening) until :meth:`release`."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = _bound_socket()
        self.port: int = self._sock.getsockname()[1]
        self._lock = threading.Lock()

    @property
    def held(self) -> bool:
        return self._sock is not None

    def release(self) -> None:
        """Let the port go (idempotent): the server has bound it, or nobody will."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def release_when_listening(self, poll_s: float = 0.1) -> threading.Thread:
        """Release as soon as a server listens on the port (one TensorFlow starts by itself)."""

        def watch() -> None:
            while self.held:
                if listening(self.port):
                    self.release()
                    return
                time.sleep(poll_s)

        thread = threading.Thread(target=watch, name="tfyarn-port-hold", daemon=True)
        thread.start()
        return thread
