"""Daemons at addresses and hostnames of their own (``--hosts``), all on this machine.

Each role of the sandbox (NameNodes, DataNode, ResourceManager, each
NodeManager) gets a loopback address ``127.0.<block>.<n>``, added to ``lo``
(so a Kerberos client can bind to its own host's address, as Hadoop's RPC
client does), and a name ``<role>.s<block>.tfyarn.test`` in ``/etc/hosts``,
on lines that end with this sandbox's marker. Every daemon binds to its own
address only, so anything that reaches a peer through ``localhost`` fails.
``stop`` removes the lines and the addresses; traffic never leaves the machine.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from tfyarn_sandbox.config import SandboxError
from tfyarn_sandbox.daemons import command_path
from tfyarn_sandbox.jars import locked

HOSTS_FILE = Path("/etc/hosts")
#: Serialises edits of ``/etc/hosts`` between sandboxes.
HOSTS_LOCK = Path("/tmp/tfyarn-sandbox-etc-hosts.lock")
Plan = Mapping[str, Mapping[str, str]]


def marker(root: Path) -> str:
    """How this sandbox's lines in ``/etc/hosts`` end."""
    return f"# tfyarn-sandbox {root}"


def without_lines(text: str, root: Path) -> str:
    """``text`` (an ``/etc/hosts``) without the lines of the sandbox at ``root``."""
    mark = marker(root)
    kept = [line for line in text.splitlines() if not line.rstrip().endswith(mark)]
    return "".join(f"{line}\n" for line in kept)


def with_lines(text: str, plan: Plan, root: Path) -> str:
    """``text`` with exactly one line per host of ``plan``, marked as this sandbox's."""
    lines = [f"{h['address']}\t{h['name']}\t{marker(root)}\n" for h in plan.values()]
    return without_lines(text, root) + "".join(lines)


def blocks_in_use(text: str, addresses: Iterable[str], root: Path) -> set[int]:
    """The ``127.0.<block>.*`` blocks others use (in ``/etc/hosts`` or on an interface)."""
    theirs = without_lines(text, root).splitlines()
    words = [line.split("#", 1)[0].split()[:1] for line in theirs]
    found = [w[0] for w in words if w] + list(addresses)
    return {int(m.group(1)) for a in found if (m := re.fullmatch(r"127\.0\.(\d+)\.\d+", a))}


def pick_block(text: str, addresses: Iterable[str], root: Path, previous: int | None) -> int:
    """The block of the previous start if still free, else the first free one."""
    used = blocks_in_use(text, addresses, root)
    for block in ([previous] if previous else []) + list(range(1, 255)):
        if block not in used:
            return block
    raise SandboxError("no free 127.0.<n>.0/24 block left for the sandbox's hosts")


# -- the machine -----------------------------------------------------------------------------
def loopback_addresses() -> list[str]:
    """The IPv4 addresses on ``lo``."""
    out = subprocess.run(
        [command_path("ip"), "-o", "-4", "addr", "show", "dev", "lo"],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    return re.findall(r"inet (\d+\.\d+\.\d+\.\d+)", out)


def choose_block(root: Path, previous: int | None) -> int:
    text = HOSTS_FILE.read_text() if HOSTS_FILE.exists() else ""
    return pick_block(text, loopback_addresses(), root, previous)


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([command_path("ip"), *args], capture_output=True, text=True)


def add(plan: Plan, root: Path) -> None:
    """Each host's address on ``lo`` and its name in ``/etc/hosts``."""
    have = set(loopback_addresses())
    for host in plan.values():
        if host["address"] in have:
            continue
        proc = _ip("addr", "add", f"{host['address']}/32", "dev", "lo")
        if proc.returncode != 0:
            raise SandboxError(
                f"adding {host['address']} to lo failed ({proc.stderr.strip()}): "
                "--hosts needs root (CAP_NET_ADMIN)"
            )
    with locked(HOSTS_LOCK):
        text = HOSTS_FILE.read_text() if HOSTS_FILE.exists() else ""
        # Written in place: /etc/hosts is often a bind mount that a rename would break.
        HOSTS_FILE.write_text(with_lines(text, plan, root))


def remove(plan: Plan, root: Path) -> None:
    """Undo :func:`add`: this sandbox's lines, and the addresses of ``plan``."""
    if HOSTS_FILE.exists():
        with locked(HOSTS_LOCK):
            text = HOSTS_FILE.read_text()
            if marker(root) in text:
                HOSTS_FILE.write_text(without_lines(text, root))
    have = set(loopback_addresses())
    for host in plan.values():
        if host["address"] in have:
            _ip("addr", "del", f"{host['address']}/32", "dev", "lo")
