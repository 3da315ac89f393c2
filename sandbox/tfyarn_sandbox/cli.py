"""The ``tfyarn-sandbox`` command: start, stop, status, env, logs, failover and restart.

``start`` takes the shape options (``--kerberos``, ``--ha``, ``--viewfs``,
``--hosts``, ``--nodes-without-python``, ``--gpus N``, ``--preemption``, any
together); the other commands read the shape from the sandbox's state.
``env --user NAME`` prints the exports of a shell acting as that user (a ticket
from its keytab on a Kerberized sandbox); ``restart DAEMON`` stops and starts one
daemon and says how long it was down.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from tfyarn_sandbox.config import DAEMONS, SandboxError, default_root, parse_ports
from tfyarn_sandbox.sandbox import Sandbox
from tfyarn_sandbox.shapes.shape import Shape


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tfyarn-sandbox",
        description="A real single-host Hadoop YARN + HDFS cluster for tfyarn_jupyter.",
    )
    p.add_argument("--dir", type=Path, default=None, help="sandbox folder")
    sub = p.add_subparsers(dest="cmd", required=True)
    p_start = sub.add_parser("start", help="start (or reuse) the sandbox")
    p_start.add_argument(
        "--port", action="append", default=[], metavar="NAME=PORT", help="fix one port"
    )
    p_start.add_argument("--kerberos", action="store_true", help="own KDC, Hadoop in secure mode")
    p_start.add_argument("--ha", action="store_true", help="two NameNodes behind a nameservice")
    p_start.add_argument("--viewfs", action="store_true", help="viewfs:// as the default FS")
    p_start.add_argument("--hosts", action="store_true", help="an address and name per daemon")
    p_start.add_argument(
        "--nodes-without-python",
        action="store_true",
        help="NodeManagers where the client's Python (venv, base, system) is hidden",
    )
    p_start.add_argument(
        "--gpus", type=gpu_count, default=0, metavar="N", help="yarn.io/gpu on the gpu node"
    )
    p_start.add_argument(
        "--preemption", action="store_true", help="queues low and high, and YARN's preemption"
    )
    p_stop = sub.add_parser("stop", help="stop the sandbox's daemons and containers")
    p_stop.add_argument(
        "--discard-data", action="store_true", help="also remove its HDFS data and node caches"
    )
    sub.add_parser("status", help="report each daemon and whether the cluster is ready")
    p_env = sub.add_parser("env", help="print the shell exports that point clients at the sandbox")
    p_env.add_argument("--user", default=None, help="act as this user (alice, mallory...)")
    sub.add_parser("failover", help="switch the active NameNode (--ha sandboxes)")
    p_restart = sub.add_parser("restart", help="stop one daemon and start it again")
    p_restart.add_argument("daemon", choices=(*DAEMONS, "namenode2"))
    p_logs = sub.add_parser("logs", help="print a daemon's log (or list them)")
    p_logs.add_argument("daemon", nargs="?", choices=(*DAEMONS, "namenode2", "kdc"))
    p_logs.add_argument("-n", type=int, default=100, help="lines from the end")
    return p


def gpu_count(text: str) -> int:
    """``--gpus``: a whole number of GPUs, 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GPUs (0, 1, 2...)")
    return int(text)


def _shape(args: argparse.Namespace) -> Shape | None:
    """The shape ``start`` asks for; None (the recorded one) when no option is given."""
    if args.cmd != "start":
        return None
    shape = Shape(
        kerberos=args.kerberos,
        ha=args.ha,
        viewfs=args.viewfs,
        hosts=args.hosts,
        nodes_without_python=args.nodes_without_python,
        gpus=args.gpus,
        preemption=args.preemption,
    )
    return None if shape.is_default else shape


def _start(box: Sandbox) -> None:
    t0 = time.monotonic()
    box.start()
    print(f"sandbox ready in {time.monotonic() - t0:.1f}s at {box.root}", file=sys.stderr)
    print('point a shell at it with: eval "$(tfyarn-sandbox env)"', file=sys.stderr)


def _status(box: Sandbox) -> int:
    st = box.status()
    for name, d in st["daemons"].items():
        print(f"{name:16} pid {d['pid']:>7}  {'running' if d['alive'] else 'DOWN'}")
    shape = " ".join(st.get("shape") or [])
    print(f"cluster: {'ready' if st['ready'] else 'NOT ready'} ({st['root']})")
    if shape:
        print(f"shape: {shape}")
    return 0 if st["ready"] else 1


def _env(box: Sandbox, user: str | None) -> None:
    for k, v in box.env(user).items():
        print(f"export {k}={shlex.quote(v)}")
    for k in box.unset_vars(user):
        print(f"unset {k}")


def _restart(box: Sandbox, daemon: str) -> None:
    stopped, down = box.restart(daemon)
    print(
        f"{daemon} restarted: down {down:.1f}s (stopped in {stopped:.1f}s, "
        f"back with the cluster ready {down - stopped:.1f}s later)"
    )


def _logs(box: Sandbox, daemon: str | None, n: int) -> None:
    if daemon is None:
        for p in sorted(box.log_dir.glob("*.log")):
            print(p)
    else:
        lines = (box.log_dir / f"{daemon}.log").read_text(errors="replace")
        print("\n".join(lines.splitlines()[-n:]))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        box = Sandbox(
            args.dir or default_root(),
            fixed_ports=parse_ports(",".join(getattr(args, "port", []))),
            shape=_shape(args),
        )
        if args.cmd == "start":
            _start(box)
        elif args.cmd == "stop":
            box.stop(discard_data=args.discard_data)
        elif args.cmd == "status":
            return _status(box)
        elif args.cmd == "env":
            _env(box, args.user)
        elif args.cmd == "failover":
            old, new, seconds = box.failover()
            print(f"active NameNode: {old} -> {new} ({seconds:.1f}s)")
        elif args.cmd == "restart":
            _restart(box, args.daemon)
        elif args.cmd == "logs":
            _logs(box, args.daemon, args.n)
    except SandboxError as exc:
        print(f"tfyarn-sandbox: {exc}", file=sys.stderr)
        return 1
    return 0
