"""A run's tasks as local processes: the container side's own code, without YARN or skein.

Each task is a process started in its own working folder (as a container's)
with the contract's environment, running :func:`tfyarn_jupyter.container.main.main`
with a :class:`FileApp` in place of skein's application client: its key-value
store is a folder with one file per key, which every task and the test share.
The node's temporary folder (``TMPDIR`` as YARN sets it) is a folder of its own,
so a test sees what the tasks leave there.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import cloudpickle

from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.protocol.contract import PAYLOAD, TaskContract

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
KV_VAR = "TFYARN_TEST_KV"
DRIVER = (
    "import os\n"
    "from tests.integration.local_cluster import FileApp\n"
    "from tfyarn_jupyter.container import main\n"
    f"main.main([], app=FileApp(os.environ[{KV_VAR!r}]))\n"
)


class FileKV:
    """skein's key-value store as a folder: one file per key, each written atomically."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / quote(key, safe="")

    def __setitem__(self, key: str, value: bytes) -> None:
        tmp = self.root / f".{quote(key, safe='')}.{os.getpid()}.tmp"
        tmp.write_bytes(value)
        os.replace(tmp, self._path(key))

    def __getitem__(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._path(key).exists()

    def get_range(self) -> dict[str, bytes]:
        out = {}
        for path in self.root.iterdir():
            if not path.name.startswith("."):
                try:
                    out[unquote(path.name)] = path.read_bytes()
                except FileNotFoundError:
                    continue
        return out


class FileApp:
    """What a task uses of skein's application client: the store; no containers end unseen."""

    def __init__(self, root: str | Path) -> None:
        self.kv = FileKV(root)

    def get_containers(self, **_kwargs: Any) -> list:
        return []

    def shutdown(self, *_args: Any, **_kwargs: Any) -> None:
        pass


@dataclasses.dataclass
class LocalRun:
    codes: dict[str, int | None]
    kv: dict[str, bytes]
    workdirs: dict[str, Path]
    node_tmp: Path

    @property
    def events(self) -> events.Events:
        return events.parse(self.kv)

    def output(self, task: str) -> str:
        return (self.workdirs[task] / "output.log").read_text(errors="replace")

    def failures(self) -> str:
        """Every task that did not exit 0, with the end of its output."""
        return "\n".join(
            f"--- {t} exited {c}:\n{self.output(t)[-3000:]}" for t, c in self.codes.items() if c
        )


def run_tasks(
    root: Path,
    topology: dict[str, int],
    fn: Any,
    *,
    mode: str = "experiment",
    program: str = "unknown",
    env: dict[str, str] | None = None,
    timeout_s: float = 300.0,
) -> LocalRun:
    """Start every task of ``topology`` running ``fn``; wait for all of them to exit."""
    payload = cloudpickle.dumps(fn)
    contract = TaskContract(topology, mode=mode, program=program, peer_timeout_s=120.0)
    node_tmp = root / "node-tmp"
    node_tmp.mkdir(parents=True, exist_ok=True)
    pythonpath = [str(ROOT), str(NOTEBOOKS), os.environ.get("PYTHONPATH", "")]
    base_env = {
        **os.environ,
        **contract.to_env(),
        KV_VAR: str(root / "kv"),
        "PYTHONPATH": os.pathsep.join(p for p in pythonpath if p),
        "TMPDIR": str(node_tmp),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    FileKV(root / "kv")
    procs, workdirs = {}, {}
    for ttype, count in topology.items():
        for i in range(count):
            name, wd = f"{ttype}:{i}", root / f"{ttype}_{i}"
            wd.mkdir(parents=True)
            (wd / PAYLOAD).write_bytes(payload)
            with open(wd / "output.log", "wb") as log:
                procs[name] = subprocess.Popen(
                    [sys.executable, "-c", DRIVER],
                    cwd=wd,
                    env={**base_env, "SKEIN_CONTAINER_ID": f"{ttype}_{i}"},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            workdirs[name] = wd
    codes = _wait(procs, time.monotonic() + timeout_s)
    return LocalRun(codes, FileKV(root / "kv").get_range(), workdirs, node_tmp)


def _wait(procs: dict[str, subprocess.Popen], deadline: float) -> dict[str, int | None]:
    """Each process's exit code; None for one still running at the deadline (then killed)."""
    codes: dict[str, int | None] = {}
    for name, proc in procs.items():
        try:
            codes[name] = proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            codes[name] = None
    return codes
