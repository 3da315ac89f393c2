"""The container contract: what the client hands each task, typed on both sides.

A task's container gets a working folder with the files named here (payload,
sources, environment) and a few ``TFYARN_*`` environment variables. The
client writes them with :meth:`TaskContract.to_env`; the container side
(:mod:`tfyarn_jupyter.tasks`) reads them back with :meth:`TaskContract.from_env`.
With :mod:`tfyarn_jupyter.events`, this is the only module both sides share.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

#: The experiment function, pickled with cloudpickle, in the container's folder.
PAYLOAD = "experiment.pkl"
#: The notebook's own modules and editable installs, zipped; on the tasks' ``PYTHONPATH``.
SOURCES = "tfyarn_sources.zip"
#: The packed environment as shipped: a plain file, unpacked by the service script.
ENV_TAR = "env.tar"
#: Where the environment is reachable in the container's folder (a link or a folder).
ENV_DIR = "env"
#: The ``pip_packages`` overlay, unpacked by YARN; on the tasks' ``PYTHONPATH``.
OVERLAY = "overlay"
#: Names in the container's folder that user ``files`` may not take.
RESERVED_NAMES = frozenset({"", ".", "..", ENV_DIR, ENV_TAR, OVERLAY, PAYLOAD})

#: The task types that train (the rest serve variables or evaluate).
TRAINERS = ("chief", "worker")

#: How long a task waits for all its peers to publish their address.
PEER_TIMEOUT_S = 300.0
#: How often an attached client refreshes its heartbeat.
HEARTBEAT_INTERVAL_S = 5.0
#: How long the application outlives a silent client (0: nobody watches).
HEARTBEAT_TIMEOUT_S = 60.0
#: How long an ended task waits for the client to read its last events.
ACK_TIMEOUT_S = 10.0

#: The environment variables of the contract (the user may set the two bounds with ``env=``).
TASKS_VAR = "TFYARN_TASKS"
ATTEMPT_VAR = "TFYARN_ATTEMPT"
PEER_TIMEOUT_VAR = "TFYARN_PEER_TIMEOUT"
HEARTBEAT_TIMEOUT_VAR = "TFYARN_HEARTBEAT_TIMEOUT"
ACK_TIMEOUT_VAR = "TFYARN_ACK_TIMEOUT"
ENV_KEY_VAR = "TFYARN_ENV_KEY"
MODE_VAR = "TFYARN_MODE"
#: What a task runs: the Experiment (or KerasExperiment) ``experiment_fn`` returns, or the
#: function itself in every task (tf-yarn's ``tf_yarn.distributed``).
MODES = ("experiment", "function")
#: Settable on the nodes' side only: where unpacked environments are cached, how many kept.
NODE_ENV_CACHE_VAR = "TFYARN_ENV_CACHE"
NODE_ENV_KEEP_VAR = "TFYARN_ENV_KEEP"


class ContractError(ValueError):
    """A task's environment does not hold a valid contract."""


def _topology_text(topology: Mapping[str, int]) -> str:
    # YARN writes env values into a shell script between double quotes without
    # escaping them, so this stays free of quotes.
    return ",".join(f"{t}={n}" for t, n in topology.items())


def _parse_topology(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in text.split(","):
        ttype, sep, count = item.partition("=")
        if not sep or not ttype or not count.isdecimal():
            raise ContractError(f"{TASKS_VAR}={text!r}: expected type=count[,type=count...]")
        out[ttype] = int(count)
    return out


@dataclasses.dataclass(frozen=True)
class TaskContract:
    """What every task of one attempt is told: topology, attempt and the bounds it keeps."""

    topology: Mapping[str, int]
    attempt: int = 0
    peer_timeout_s: float = PEER_TIMEOUT_S
    #: 0 when no client watches the run (detached): the application never ends itself.
    heartbeat_timeout_s: float = 0.0
    ack_timeout_s: float = ACK_TIMEOUT_S
    #: The environment's key, when the client shipped its own tar (see ``ENV_TAR``).
    env_key: str = ""
    mode: str = "experiment"

    def __post_init__(self) -> None:
        if not self.topology or any(n < 0 for n in self.topology.values()):
            raise ContractError(f"topology must count each task type, got {self.topology!r}")
        for name in ("peer_timeout_s", "heartbeat_timeout_s", "ack_timeout_s"):
            if getattr(self, name) < 0:
                raise ContractError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.attempt < 0:
            raise ContractError(f"attempt must be >= 0, got {self.attempt}")
        if self.mode not in MODES:
            raise ContractError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")

    def to_env(self) -> dict[str, str]:
        """The contract as environment variables for the tasks."""
        env = {
            TASKS_VAR: _topology_text(self.topology),
            ATTEMPT_VAR: str(self.attempt),
            PEER_TIMEOUT_VAR: repr(float(self.peer_timeout_s)),
            HEARTBEAT_TIMEOUT_VAR: repr(float(self.heartbeat_timeout_s)),
            ACK_TIMEOUT_VAR: repr(float(self.ack_timeout_s)),
            MODE_VAR: self.mode,
        }
        if self.env_key:
            env[ENV_KEY_VAR] = self.env_key
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TaskContract:
        """Read the contract back (inside a container: from ``os.environ``)."""
        env = os.environ if environ is None else environ
        if TASKS_VAR not in env:
            raise ContractError(f"{TASKS_VAR} is not set: not started by tfyarn_jupyter")

        def seconds(var: str, default: float) -> float:
            try:
                return float(env.get(var, default))
            except ValueError:
                raise ContractError(f"{var}={env[var]!r} is not a number of seconds") from None

        return cls(
            topology=_parse_topology(env[TASKS_VAR]),
            attempt=int(env.get(ATTEMPT_VAR, "0")),
            peer_timeout_s=seconds(PEER_TIMEOUT_VAR, PEER_TIMEOUT_S),
            heartbeat_timeout_s=seconds(HEARTBEAT_TIMEOUT_VAR, 0.0),
            ack_timeout_s=seconds(ACK_TIMEOUT_VAR, ACK_TIMEOUT_S),
            env_key=env.get(ENV_KEY_VAR, ""),
            mode=env.get(MODE_VAR, "experiment"),
        )

    def with_attempt(self, attempt: int) -> TaskContract:
        return dataclasses.replace(self, attempt=attempt)
