"""What every section shares: the configuration, the topologies and the :class:`Bench` itself.

A :class:`Bench` holds one run's results (rows, details, notes, failures)
and everything it started on the resourcemanager, which :meth:`Bench.close` ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skein.model import ApplicationState

from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.core.state import ENDED_APP
from tfyarn_jupyter.hadoop import filesystem, resourcemanager

from .stats import Row, since

#: The benchmarks run from a source checkout (they are not installed): its parts by path.
PACKAGE = Path(__file__).resolve().parent
CANCER = PACKAGE.parent / "notebooks" / "cancer.py"


def state_name(x: Any) -> str:
    """A skein state (an enum) or its name, as its name."""
    return str(getattr(x, "name", x))


@dataclasses.dataclass
class Config:
    reps: int
    smoke: bool
    out: Path
    max_steps: int
    watch_sizes: tuple[int, ...]
    watch_polls: int
    bare_reps: int
    venv_pack_timeout_s: float
    tfyarn070: bool
    sandbox_start: bool

    @property
    def cache(self) -> Path:
        """Kept between runs and clones (tf-yarn 0.7.0's venv, venv-pack), like the jars."""
        root = os.environ.get("TFYARN_CACHE") or Path.home() / ".cache" / "tfyarn"
        return Path(root) / "bench"


def config(reps: int, smoke: bool, out: Path) -> Config:
    if smoke:  # tf-yarn 0.7.0 is a baseline, not our code path: the full run measures it
        return Config(reps, True, out, 100, (2,), 5, 1, 30.0, False, False)
    return Config(reps, False, out, 300, (1, 2, 8, 32, 48), 20, 5, 900.0, True, True)


def topologies(smoke: bool) -> dict[str, dict[str, TaskSpec]]:
    small = TaskSpec("1G", 1)
    out = {"chief+evaluator": {"chief": small, "evaluator": small}}
    if not smoke:
        out["chief+2 workers+ps+evaluator"] = {
            "chief": small,
            "worker": TaskSpec("1G", 1, instances=2),
            "ps": TaskSpec("512M", 1),
            "evaluator": small,
        }
    return out


class Bench:
    """Runs the measurements; everything it submits is killed in :meth:`close`."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.client = resourcemanager.get_client()
        self.tmp = Path(tempfile.mkdtemp(prefix="tfyarn-bench-"))
        self.rows: list[Row] = []
        self.details: dict[str, Any] = {}
        self.notes: list[str] = []
        #: What failed: a --smoke run with any exits non-zero, so CI notices a rotten path.
        self.failures: list[str] = []
        self.apps: list[str] = []
        self.runs: list[Any] = []
        self.hdfs_leftovers: list[str] = []

    # -- bookkeeping ---------------------------------------------------------------------------
    def row(self, section: str, name: str, unit: str, values: Sequence[float | None] = (),
            note: str = "") -> Row:  # fmt: skip
        r = Row(section, name, unit, [float(v) for v in values if v is not None], note)
        self.rows.append(r)
        return r

    def log(self, msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)

    def failed(self, msg: str) -> None:
        """Record a failed measurement: a note in the output, and a failure for the exit code."""
        self.log(f"  !! {msg}")
        self.notes.append(msg)
        self.failures.append(msg)

    def tiny_venv(self) -> Path:
        """A venv with no packages (made once per run): what --smoke packs and ships, so that
        a path that packs the environment runs in seconds instead of over its 2 GB."""
        prefix = self.tmp / "tiny-venv"
        if not prefix.exists():
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)],
                           check=True, capture_output=True)  # fmt: skip
        return prefix

    def submit_app(self, spec: Any) -> str:
        app_id = self.client.submit(spec)
        self.apps.append(app_id)
        return app_id

    def kill(self, app_id: str) -> None:
        with contextlib.suppress(Exception):
            if state_name(self.client.application_report(app_id).state) not in ENDED_APP:
                self.client.kill_application(app_id)

    def close(self) -> None:
        for run in self.runs:
            with contextlib.suppress(Exception):
                if not run.source.ended:
                    run.cancel()
        for app_id in self.apps:
            self.kill(app_id)
        for path in self.hdfs_leftovers:
            self.hdfs_delete(path)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def hdfs_delete(self, path: str) -> None:
        with contextlib.suppress(Exception):
            filesystem.client().delete(filesystem.strip_scheme(path))

    # -- plain skein applications (the floor, the bare application) ---------------------------
    def watch_skein_app(self, app_id: str, t0: float, n_tasks: int, timeout: float = 600) -> dict:
        """Poll a plain skein application to its end; moments relative to ``t0`` (seconds)."""
        deadline = time.monotonic() + timeout
        am = None
        starts: dict[str, float] = {}
        running_at = None
        while True:
            report = self.client.application_report(app_id)
            state = state_name(report.state)
            if state == ApplicationState.RUNNING and running_at is None:
                running_at = time.time()
            if state == ApplicationState.RUNNING:
                with contextlib.suppress(Exception):
                    am = am or self.client.connect(app_id, wait=False)
                    for c in am.get_containers(states=["RUNNING", "SUCCEEDED", "FAILED", "KILLED"]):
                        if c.start_time:
                            starts[c.id] = c.start_time.timestamp()
            if state in ENDED_APP:
                break
            if time.monotonic() > deadline:
                self.kill(app_id)
                raise TimeoutError(f"{app_id} still {state} after {timeout}s")
            time.sleep(0.2)
        finish = report.finish_time.timestamp() if report.finish_time else time.time()
        return {
            "final": f"{state}/{state_name(report.final_status)}",
            "app_running": since(t0, running_at),
            "all_running": since(t0, max(starts.values())) if len(starts) >= n_tasks else None,
            "done": finish - t0,
        }
