"""The container contract: what the client hands each task, typed on both sides.

A task's container gets a working folder with the files named here (payload,
sources, environment) and a few ``TFYARN_*`` environment variables. The
client writes them with :meth:`TaskContract.to_env`; the container side
(:mod:`tfyarn_jupyter.container.task`) reads them back with :meth:`TaskContract.from_env`.
With :mod:`tfyarn_jupyter.protocol.events`, this is the only module both sides share.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Mapping

#: The module every container runs (``python -m``), unless the user names another.
TASK_MODULE = "tfyarn_jupyter.container"
#: "1": the chief waits for each checkpoint push, as before pushes ran beside training
#: (the training benchmark's baseline; unset, pushes never stop training).
SYNC_PUSH_VAR = "TFYARN_SYNC_CHECKPOINT_PUSH"
#: Seconds each checkpoint push holds its files at their temporary names before the
#: renames: a slow HDFS made on purpose (fault injection, for tests and benchmarks).
PUSH_DELAY_VAR = "TFYARN_CHECKPOINT_PUSH_DELAY"
#: A Keras run's trainers checkpoint every that many epochs (and at the end of training);
#: unset, every epoch. For a model whose checkpoint takes long to write.
CHECKPOINT_EPOCHS_VAR = "TFYARN_CHECKPOINT_EPOCHS"
#: TensorFlow's hdfs:// plugin as the client built it (tfyarn_jupyter.hadoop.tf_filesystem).
TF_HDFS_PLUGIN = "tfyarn_tf_hdfs.so"
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
RESERVED_NAMES = frozenset({"", ".", "..", ENV_DIR, ENV_TAR, OVERLAY, PAYLOAD, TF_HDFS_PLUGIN})

#: The task types that train (the rest serve variables or evaluate).
TRAINERS = ("chief", "worker")

#: How long a task waits for all its peers to publish their address.
PEER_TIMEOUT_S = 300.0
#: How often an attached client refreshes its heartbeat.
HEARTBEAT_INTERVAL_S = 5.0
#: How soon the client tries again while its first heartbeat has not reached the master.
FIRST_HEARTBEAT_RETRY_S = 0.5
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
PROGRAM_VAR = "TFYARN_PROGRAM"
#: What a task runs: the Experiment (or KerasExperiment) ``experiment_fn`` returns, or the
#: function itself in every task (tf-yarn's ``tf_yarn.distributed``).
MODES = ("experiment", "function")
#: What the client found ``experiment_fn`` returns (or a plain function): the program's kind.
ESTIMATOR, KERAS, FUNCTION, UNKNOWN = "estimator", "keras", "function", "unknown"
PROGRAMS = (ESTIMATOR, KERAS, FUNCTION, UNKNOWN)
#: Settable on the nodes' side only: where unpacked environments are cached, how many kept.
NODE_ENV_CACHE_VAR = "TFYARN_ENV_CACHE"
NODE_ENV_KEEP_VAR = "TFYARN_ENV_KEEP"


class ContractError(ValueError):
    """A task's environment does not hold a valid contract."""


def checkpoint_epochs(environ: Mapping[str, str]) -> int:
    """Every how many epochs a Keras run checkpoints (:data:`CHECKPOINT_EPOCHS_VAR`, 1 unset).

    Read by the client before anything is submitted and by the trainers, from the same
    environment (``env=`` over the notebook's); a :class:`ContractError` names a bad value.
    """
    value = environ.get(CHECKPOINT_EPOCHS_VAR, "").strip()
    if not value:
        return 1
    if not value.isdecimal() or int(value) < 1:
        raise ContractError(
            f"{CHECKPOINT_EPOCHS_VAR}={value!r}: give a whole number of epochs, 1 or more "
            f'(env={{"{CHECKPOINT_EPOCHS_VAR}": "3"}} checkpoints every third epoch and at '
            "the end of training)"
        )
    return int(value)


class StrategyError(ValueError):
    """The program cannot train on this topology, or not with this Keras."""


# -- the tensorboard task -----------------------------------------------------------------------
#: The tensorboard service's own variables (tf-yarn's TaskSpec ``tb_*`` fields).
TB_MODEL_DIR_VAR = "TFYARN_TB_MODEL_DIR"
TB_TIMEOUT_VAR = "TFYARN_TB_TERMINATION_TIMEOUT"
TB_ARGS_VAR = "TFYARN_TB_EXTRA_ARGS"
#: How long TensorBoard stays up after the other tasks ended, when the spec says -1 (tf-yarn's).
TB_DEFAULT_TIMEOUT_S = 30
#: TensorBoard flags the tensorboard task sets itself: where it reads and where it serves, which
#: the ResourceManager's proxy must reach.
TB_RESERVED_FLAGS = ("--logdir", "--logdir_spec", "--port", "--host", "--bind_all", "--path_prefix")


def split_tb_args(text: str) -> list[str]:
    """``tb_extra_args`` as TensorBoard's arguments (shell words); a reserved flag is refused."""
    try:
        args = shlex.split(text)
    except ValueError as exc:
        raise ContractError(f"tb_extra_args {text!r} cannot be split: {exc}") from None
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in TB_RESERVED_FLAGS:
            raise ContractError(
                f"tb_extra_args: {flag} is set by the tensorboard task itself (it reads the "
                "run's model dir, or tb_model_dir, and serves on a port the ResourceManager's "
                "proxy reaches); drop it"
            )
    return args


@dataclasses.dataclass(frozen=True)
class TensorBoardContract:
    """What the tensorboard task is told: what to read, how long to outlive training, extra args.

    An empty ``model_dir`` means the model dir of the Experiment ``experiment_fn`` returns.
    """

    model_dir: str = ""
    termination_timeout_s: int = TB_DEFAULT_TIMEOUT_S
    extra_args: str = ""

    def to_env(self) -> dict[str, str]:
        env = {TB_TIMEOUT_VAR: str(self.termination_timeout_s)}
        if self.model_dir:
            env[TB_MODEL_DIR_VAR] = self.model_dir
        if self.extra_args:
            env[TB_ARGS_VAR] = self.extra_args
        return env

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TensorBoardContract:
        env = os.environ if environ is None else environ
        timeout = env.get(TB_TIMEOUT_VAR, str(TB_DEFAULT_TIMEOUT_S))
        if not timeout.isdecimal():
            raise ContractError(f"{TB_TIMEOUT_VAR}={timeout!r} is not a whole number of seconds")
        return cls(env.get(TB_MODEL_DIR_VAR, ""), int(timeout), env.get(TB_ARGS_VAR, ""))

    @property
    def argv(self) -> list[str]:
        return split_tb_args(self.extra_args)


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
    #: The program's kind as the client found it (``unknown``: the tasks tell by what it returns).
    program: str = UNKNOWN

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
        if self.program not in PROGRAMS:
            raise ContractError(
                f"program must be one of {', '.join(PROGRAMS)}, got {self.program!r}"
            )

    def to_env(self) -> dict[str, str]:
        """The contract as environment variables for the tasks."""
        env = {
            TASKS_VAR: _topology_text(self.topology),
            ATTEMPT_VAR: str(self.attempt),
            PEER_TIMEOUT_VAR: repr(float(self.peer_timeout_s)),
            HEARTBEAT_TIMEOUT_VAR: repr(float(self.heartbeat_timeout_s)),
            ACK_TIMEOUT_VAR: repr(float(self.ack_timeout_s)),
            MODE_VAR: self.mode,
            PROGRAM_VAR: self.program,
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
            program=env.get(PROGRAM_VAR, UNKNOWN),
        )

    def with_attempt(self, attempt: int) -> TaskContract:
        return dataclasses.replace(self, attempt=attempt)


# -- the strategy table -------------------------------------------------------------------------
#: What trains, per topology: TensorFlow's own strategies, or an Estimator's own distribution.
DEFAULT = "default"
MULTI_WORKER_MIRRORED = "multi_worker_mirrored"
PARAMETER_SERVER = "parameter_server"
STRATEGIES = (DEFAULT, MULTI_WORKER_MIRRORED, PARAMETER_SERVER, ESTIMATOR)


def strategy_for(kind: str, topology: Mapping[str, int]) -> str:
    """How ``kind`` (estimator, keras or function) trains on ``topology``; why not if it cannot.

    A ps means ParameterServerStrategy (the chief coordinates); several trainers
    without one, MultiWorkerMirroredStrategy (worker 0 acts as chief when there
    is no chief); a single trainer, the default strategy. An Estimator keeps its
    own rules: a chief, and a ps beside any workers. A function gets the
    strategy its topology implies; it builds it itself.
    """
    if kind not in (ESTIMATOR, KERAS, FUNCTION):
        raise ValueError(f"kind must be {ESTIMATOR}, {KERAS} or {FUNCTION}, got {kind!r}")
    chief, workers, ps = (topology.get(t, 0) for t in ("chief", "worker", "ps"))
    if not chief and not workers:
        raise StrategyError("nothing trains: add a chief, or workers (worker 0 acts as chief)")
    if ps and not chief:
        raise StrategyError('a "ps" needs a "chief" to coordinate parameter-server training')
    if kind == ESTIMATOR:
        if not chief:
            raise StrategyError('an Estimator experiment needs a "chief"')
        if workers and not ps:
            raise StrategyError(
                'an Estimator experiment trains with workers through a "ps": add "ps": '
                "TaskSpec(...), or return a KerasExperiment for all-reduce training"
            )
        return ESTIMATOR
    if ps:
        if kind == KERAS and not workers:
            raise StrategyError(
                'ParameterServerStrategy trains on workers: add "worker" tasks beside the ps, '
                "or drop the ps to train on the chief alone"
            )
        return PARAMETER_SERVER
    return DEFAULT if chief + workers == 1 else MULTI_WORKER_MIRRORED


def known_strategy(kind: str, topology: Mapping[str, int]) -> str:
    """:func:`strategy_for`, or the default strategy where the program is unknown (a run
    attached from elsewhere) or cannot train (it never started): what a lost task's
    restart involves, as far as the client knows."""
    try:
        return DEFAULT if kind == UNKNOWN else strategy_for(kind, topology)
    except StrategyError:
        return DEFAULT


#: The Keras a task builds models with (``tf.keras``): measured in /work/notes/keras_strategies.md.
KERAS_2 = "tf.keras 2"  # TensorFlow 2.15 and earlier
KERAS_3 = "Keras 3"  # TensorFlow 2.16 and later, by default
TF_KERAS = "tf-keras"  # TensorFlow 2.16 and later with TF_USE_LEGACY_KERAS=1
LEGACY_KERAS_VAR = "TF_USE_LEGACY_KERAS"
#: What fails, with which Keras, under which strategy (everything else trains).
KERAS_UNSUPPORTED: Mapping[tuple[str, str], str] = {
    (KERAS_3, MULTI_WORKER_MIRRORED): (
        "Keras 3's model.fit fails under MultiWorkerMirroredStrategy (it reduces the first "
        "distributed batch into one tensor: ValueError: Attempt to convert a value "
        "(PerReplica:...) with an unsupported type; keras-team/keras#20585)"
    ),
    (KERAS_3, PARAMETER_SERVER): (
        "Keras 3 has no ParameterServerStrategy support in model.fit (no DatasetCreator; "
        "ValueError: To use this dataset, you need to pass this dataset to "
        "ClusterCoordinator.create_per_worker_dataset)"
    ),
}


def keras_flavour(tf_version: tuple[int, int] | None, environ: Mapping[str, str]) -> str:
    """Which Keras ``tf.keras`` is, from TensorFlow's version and the tasks' environment."""
    if tf_version is not None and tf_version < (2, 16):
        return KERAS_2
    return TF_KERAS if environ.get(LEGACY_KERAS_VAR) in ("true", "True", "1") else KERAS_3


def check_keras(strategy: str, flavour: str) -> None:
    """Refuse a strategy that the Keras in use cannot train with, saying what works instead."""
    why = KERAS_UNSUPPORTED.get((flavour, strategy))
    if why:
        raise StrategyError(
            f"{strategy.replace('_', ' ')} training with {flavour}: {why}. Train with tf-keras "
            f'instead: env={{"{LEGACY_KERAS_VAR}": "1"}} with the tf-keras release matching '
            "TensorFlow in the environment, and the model built with tf.keras (not `import "
            "keras`); or train on a chief alone"
        )
