"""The events protocol: what tasks write to skein's key-value store, and how it reads back.

With :mod:`tfyarn_jupyter.protocol.contract`, this is the only code the container side
(:mod:`tfyarn_jupyter.container.task`) shares with the client. Each event is one key; its
value is a small JSON object with the time it happened. Keys:

``task/<type:index>/<kind>``
    ``container`` (the process started; host, attempt), ``init`` (the
    address this task serves TensorFlow on), ``start``, ``train_start``,
    ``train_stop``, ``eval_start``, ``eval_stop``, ``phases`` (when the task reached each
    phase of its start: interpreter, TensorFlow imported, cluster, model, restored, first
    step; epoch seconds, rewritten as phases come) and ``stop`` (the task ended;
    ``traceback`` is empty on success). A ``tensorboard`` task's ``start`` has
    its page through the ResourceManager's proxy (``url``), the address that
    page proxies to (``target``) and the folder it reads (``logdir``).
``progress/<type:index>``
    A trainer's latest ``step``, ``max_steps``, ``steps_per_s`` and ``loss``
    (and other training metrics), and every task's resources (``rss_bytes``
    and ``cpu_percent`` of its process tree, ``memory_limit_bytes``, ``gpu``
    where ``nvidia-smi`` exists), overwritten in place at most every 2 s: one
    key per task, however long the run, so the store stays small.
``restarts/<type:index>/<n, zero-padded>``
    The task's ``n``-th restart inside the application (its container was lost and YARN's
    application master started another): ``cause`` (:class:`.causes.Cause`: ``preempted``,
    ``node lost``, ``container killed``, ``killed``, ``failed``, ``peer restarted``: it was
    stopped so that its cluster restarts together),
    ``exit_status`` of the lost container where YARN gave one, ``step`` (the last step the
    task reported before the loss) and ``resumed_step`` once it restored a checkpoint, so
    that the steps lost are ``step - resumed_step``. Written by the restarted container.
``metrics/<global step, zero-padded>``
    One evaluation's results, published by the evaluator as it computes them.
``client/heartbeat``
    Refreshed by an attached client; the application watches it so a dead
    kernel does not leave training running.
``client/detached``
    Present when the run was launched to outlive its kernel.
``client/capacity``
    The client's explanation of why some tasks are still waiting for
    containers (the queue and partition that are full, with figures), so that
    a task tired of waiting for its peers can name the real cause.
``client/ack/<type:index>``
    The client has read that task's ``stop`` event. A task that ends while a
    client is attached waits (briefly) for this before exiting: the
    application master, and its store, go away with the last container.

A client reads everything with one ``get_range()`` call per poll.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping
from typing import Any

TASK_KINDS = (
    "phases",
    "container",
    "init",
    "start",
    "train_start",
    "train_stop",
    "eval_start",
    "eval_stop",
    "stop",
)
HEARTBEAT = "client/heartbeat"
DETACHED = "client/detached"
CAPACITY = "client/capacity"


def ack_key(task: str) -> str:
    return f"client/ack/{task}"


def task_key(task: str, kind: str) -> str:
    if kind not in TASK_KINDS:
        raise ValueError(f"unknown event kind {kind!r}")
    return f"task/{task}/{kind}"


def progress_key(task: str) -> str:
    return f"progress/{task}"


def restart_key(task: str, n: int) -> str:
    """The key of ``task``'s ``n``-th restart (``n`` from 1)."""
    return f"restarts/{task}/{int(n):04d}"


def metrics_key(step: int) -> str:
    return f"metrics/{int(step):012d}"


def _clean(value: Any) -> Any:
    """Make a metric JSON-safe: numpy scalars to Python, NaN/inf to None."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def encode(payload: Mapping[str, Any] | None = None, *, t: float | None = None) -> bytes:
    """One event's value: the payload plus its time ``t`` (epoch seconds)."""
    body = {k: _clean(v) for k, v in (payload or {}).items()}
    body.setdefault("t", time.time() if t is None else t)
    return json.dumps(body, sort_keys=True).encode()


def decode(value: bytes | str) -> dict[str, Any]:
    try:
        out = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return {"raw": value.decode(errors="replace") if isinstance(value, bytes) else value}
    return out if isinstance(out, dict) else {"raw": out}


@dataclasses.dataclass
class Events:
    """Everything the tasks have reported so far, parsed from one key-value snapshot."""

    tasks: dict[str, dict[str, dict[str, Any]]] = dataclasses.field(default_factory=dict)
    metrics: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    progress: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    heartbeat: float | None = None
    detached: bool = False
    #: The client's latest explanation of what is pending and why ("" when nothing waits).
    capacity: str = ""
    acked: set[str] = dataclasses.field(default_factory=set)
    #: Each task's restarts inside the application, oldest first (each with its ``n``).
    restarts: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def task(self, name: str) -> dict[str, dict[str, Any]]:
        return self.tasks.get(name, {})

    def traceback(self, name: str) -> str:
        return str(self.task(name).get("stop", {}).get("traceback") or "")

    def unacked_stops(self) -> list[str]:
        """Tasks whose end the client has not acknowledged yet."""
        return [t for t, kinds in self.tasks.items() if "stop" in kinds and t not in self.acked]

    def client_may_read(self, now: float, timeout: float) -> bool:
        """Whether a task's last events may still be read by a client: one attached, or
        one not heard from yet (it submitted the run and may be connecting), not detached."""
        return not self.detached and (self.heartbeat is None or now - self.heartbeat < timeout)


def parse(kv: Mapping[str, bytes]) -> Events:
    """Read a ``get_range()`` snapshot of the key-value store into :class:`Events`."""
    ev = Events()
    for key in sorted(kv):
        parts = key.split("/")
        if parts[0] == "task" and len(parts) == 3 and parts[2] in TASK_KINDS:
            ev.tasks.setdefault(parts[1], {})[parts[2]] = decode(kv[key])
        elif parts[0] == "progress" and len(parts) == 2:
            ev.progress[parts[1]] = decode(kv[key])
        elif parts[0] == "restarts" and len(parts) == 3 and parts[2].isdigit():
            ev.restarts.setdefault(parts[1], []).append({**decode(kv[key]), "n": int(parts[2])})
        elif parts[0] == "metrics" and len(parts) == 2:
            m = decode(kv[key])
            if "step" in m:
                ev.metrics.append(m)
        elif key == HEARTBEAT:
            ev.heartbeat = decode(kv[key]).get("t")
        elif key == DETACHED:
            ev.detached = True
        elif key == CAPACITY:
            ev.capacity = str(decode(kv[key]).get("message") or "")
        elif key.startswith("client/ack/"):
            ev.acked.add(key[len("client/ack/") :])
    ev.metrics.sort(key=lambda m: m["step"])
    return ev
