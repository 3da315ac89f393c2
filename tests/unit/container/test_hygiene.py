"""What a task leaves on its node: temporary files in its own folder; its port held until bound."""

from __future__ import annotations

import os
import socket
import tempfile

import pytest

from tfyarn_jupyter.container import hygiene


def test_temporary_files_go_to_the_containers_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/tmp")
    monkeypatch.setattr(tempfile, "tempdir", None)
    path = hygiene.use_container_tmp(str(tmp_path))
    assert path == str(tmp_path / "tmp") and os.path.isdir(path)
    assert os.environ["TMPDIR"] == path
    with tempfile.NamedTemporaryFile(prefix="__autograph_generated_file") as fh:
        assert os.path.dirname(fh.name) == path


def plain_bind(port: int) -> None:
    with socket.socket() as s:
        s.bind(("", port))


def test_a_held_port_cannot_be_taken_by_another_program_until_released():
    hold = hygiene.PortHold()
    try:
        with pytest.raises(OSError):
            plain_bind(hold.port)
    finally:
        hold.release()
    hold.release()  # idempotent
    assert not hold.held
    plain_bind(hold.port)


def reuseport_listener(port: int) -> socket.socket:
    """What TensorFlow's gRPC server does: SO_REUSEPORT, bind, listen."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("::", port))
    s.listen()
    return s


def test_the_server_binds_beside_the_hold_which_then_lets_go():
    hold = hygiene.PortHold()
    assert not hygiene.listening(hold.port), "the hold itself must not accept connections"
    watcher = hold.release_when_listening(poll_s=0.01)
    server = reuseport_listener(hold.port)
    try:
        watcher.join(timeout=5)
        assert not watcher.is_alive() and not hold.held
        assert hygiene.listening(hold.port)
    finally:
        server.close()
