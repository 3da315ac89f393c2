"""What a run asks for: task types, their resources and node labels.

Everything here is validated at construction and free of I/O, so a bad
request fails in the notebook before any cluster resource is asked for.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

#: The task types, in the order a panel shows them: TensorFlow's, and tf-yarn's ``tensorboard``.
TASK_TYPES = ("chief", "worker", "ps", "evaluator", "tensorboard")
#: The fields of a TaskSpec that only the tensorboard task reads, and their defaults.
TB_DEFAULTS = {"tb_termination_timeout_seconds": -1, "tb_model_dir": None, "tb_extra_args": None}


class SpecError(ValueError):
    """A run's request is malformed; the message says which part and how to fix it."""


class NodeLabel(str, enum.Enum):
    """YARN node label a task must run on (``CPU`` is the unlabelled partition)."""

    CPU = ""
    GPU = "gpu"

    @classmethod
    def parse(cls, value: NodeLabel | str) -> NodeLabel:
        if isinstance(value, NodeLabel):
            return value
        if not isinstance(value, str):
            raise SpecError(f"node label must be NodeLabel.CPU or NodeLabel.GPU, not {value!r}")
        for label in cls:
            if value.lower() in (label.value, label.name.lower()):
                return label
        raise SpecError(f"unknown node label {value!r}: use NodeLabel.CPU or NodeLabel.GPU")


class Experiment(NamedTuple):
    """What ``experiment_fn`` returns: a ``tf.estimator`` and its train/eval specs."""

    estimator: Any
    train_spec: Any
    eval_spec: Any


class KerasExperiment(NamedTuple):
    """What ``experiment_fn`` returns for Keras: a compiled model and how to fit it (tf-yarn's).

    ``experiment_fn`` is called inside the distribution strategy's scope in
    each task, so the model is built there. ``train_params`` go to
    ``model.fit``; ``input_data_fn``/``target_data_fn`` give ``x``/``y`` (or
    ``input_data_fn`` a dataset with both); ``validation_data_fn`` what the
    evaluator evaluates each checkpoint on. ``model_dir`` may be ``hdfs://``.
    """

    model: Any
    model_dir: str
    train_params: dict
    input_data_fn: Any = None
    target_data_fn: Any = None
    validation_data_fn: Any = None


# ASCII only: case-insensitive Unicode matching lets a Kelvin sign stand for "k".
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\s*$", re.IGNORECASE | re.ASCII)
_UNIT_MIB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_memory(value: int | str) -> int:
    """Memory in MiB from an int (MiB) or a string such as ``"2G"``, ``"512M"``, ``"1.5GiB"``."""
    if isinstance(value, bool):
        raise SpecError(f"memory must be MiB or a size like '2G', not {value!r}")
    if isinstance(value, int):
        mib = value
    elif isinstance(value, str):
        m = _MEMORY.match(value)
        if not m:
            raise SpecError(f"memory {value!r} is not a size: write e.g. 2048, '2G' or '512M'")
        unit = (m.group(2) or "")[:1].upper()
        try:
            mib = int(float(m.group(1)) * _UNIT_MIB[unit])
        except OverflowError:
            raise SpecError(f"memory {value!r} is too large") from None
    else:
        raise SpecError(f"memory must be MiB or a size like '2G', not {type(value).__name__}")
    if mib <= 0:
        raise SpecError(f"memory must be positive, got {value!r}")
    return mib


_FIELDS = ("memory", "vcores", "instances", "nb_proc_per_worker", "label",
           "tb_termination_timeout_seconds", "tb_model_dir", "tb_extra_args", "gpus")  # fmt: skip
#: What ``to_dict`` leaves out when it has this value, so older readers see tf-yarn's fields only.
_DEFAULTS: dict[str, Any] = {"nb_proc_per_worker": 1, **TB_DEFAULTS, "gpus": 0}


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{name} must be an int, got {value!r}")
    if value <= 0:
        raise SpecError(f"{name} must be positive, got {value}")
    return value


def _gpu_count(value: Any) -> int:
    """A task's ``yarn.io/gpu`` count: a whole number, 0 (none) or more."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"gpus must be a whole number of GPUs (an int >= 0), got {value!r}")
    if value < 0:
        raise SpecError(f"gpus must be >= 0 (0: no GPU), got {value}")
    return value


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """Resources of one task type: memory (MiB), vcores, instances and node label.

    The fields and their positional order are tf-yarn's. ``nb_proc_per_worker``
    must be 1 (run more ``instances`` instead). The ``tb_*`` fields are the
    ``tensorboard`` task's: how many seconds it stays up after training ended
    (-1: 30), the folder it reads (None: the Experiment's model dir; ``hdfs://``
    too) and extra TensorBoard arguments (shell words). ``gpus`` (keyword only,
    after tf-yarn's fields) is how many ``yarn.io/gpu`` YARN reserves for each
    instance: counted and placed by the scheduler, unlike the ``gpu`` node label,
    which only chooses the nodes (both may be given).
    """

    memory: int
    vcores: int
    instances: int = 1
    nb_proc_per_worker: int = 1
    label: NodeLabel = NodeLabel.CPU
    tb_termination_timeout_seconds: int = -1
    tb_model_dir: str | None = None
    tb_extra_args: str | None = None
    gpus: int = 0

    def __init__(
        self,
        memory: int | str,
        vcores: int,
        instances: int = 1,
        nb_proc_per_worker: int = 1,
        label: NodeLabel | str = NodeLabel.CPU,
        tb_termination_timeout_seconds: int = -1,
        tb_model_dir: str | None = None,
        tb_extra_args: str | None = None,
        *,
        gpus: int = 0,
    ) -> None:
        if isinstance(nb_proc_per_worker, (NodeLabel, str)):
            raise SpecError(
                f"TaskSpec's fourth argument is nb_proc_per_worker (tf-yarn's order), got "
                f"{nb_proc_per_worker!r}: pass the node label as label="
            )
        set_ = object.__setattr__
        set_(self, "vcores", _positive_int("vcores", vcores))
        set_(self, "instances", _positive_int("instances", instances))
        if _positive_int("nb_proc_per_worker", nb_proc_per_worker) != 1:
            raise SpecError(
                f"nb_proc_per_worker={nb_proc_per_worker}: one process per container here; "
                "ask for more instances instead (e.g. TaskSpec(..., instances=4))"
            )
        set_(self, "nb_proc_per_worker", 1)
        set_(self, "memory", parse_memory(memory))
        set_(self, "label", NodeLabel.parse(label))
        set_(self, "gpus", _gpu_count(gpus))
        if isinstance(tb_termination_timeout_seconds, bool) or not isinstance(
            tb_termination_timeout_seconds, int
        ):
            raise SpecError(f"tb_termination_timeout_seconds must be an int, got "
                            f"{tb_termination_timeout_seconds!r}")  # fmt: skip
        if tb_termination_timeout_seconds < -1:
            raise SpecError(f"tb_termination_timeout_seconds must be >= 0 (or -1: 30 s), got "
                            f"{tb_termination_timeout_seconds}")  # fmt: skip
        set_(self, "tb_termination_timeout_seconds", tb_termination_timeout_seconds)
        for name, value in (("tb_model_dir", tb_model_dir), ("tb_extra_args", tb_extra_args)):
            if value is not None and not isinstance(value, str):
                raise SpecError(f"{name} must be a string, got {value!r}")
            set_(self, name, value)

    # The GPU figure is read loosely ([^/]*?) so that "8G/4/-1" or "8G/4/x" gets its own error.
    _FORM = re.compile(
        r"^(?P<mem>\d+(?:\.\d+)?[KMGT]?i?B?)/(?P<vcores>\d+)(?:/(?P<gpus>[^/]*?))?"
        r"(?:x(?P<n>\d+))?(?P<gpu>@gpu)?$",
        re.IGNORECASE | re.ASCII,
    )

    @classmethod
    def parse(cls, text: str, label: NodeLabel | str = NodeLabel.CPU) -> TaskSpec:
        """Parse the magic's short form ``MEM/VCORES[/GPUS][xINSTANCES][@gpu]``, e.g. ``2G/4x8``
        or ``8G/4/2x4`` (8 GiB, 4 vcores and 2 ``yarn.io/gpu`` for each of 4 instances)."""
        m = cls._FORM.match(text.strip())
        if not m:
            raise SpecError(
                f"{text!r} is not MEMORY/VCORES[/GPUS][xINSTANCES][@gpu], e.g. 2G/4, 512M/1, "
                "2G/4x8, 8G/4/1"
            )
        if m.group("gpu"):
            label = NodeLabel.GPU
        gpus_text = m.group("gpus")
        if gpus_text is not None and not re.fullmatch(r"[0-9]+", gpus_text):
            raise SpecError(
                f"{text!r}: gpus {gpus_text!r} is not a whole number of GPUs >= 0 "
                "(MEMORY/VCORES/GPUS, e.g. 8G/4/1 or 8G/4/2x4)"
            )
        try:
            vcores, instances = int(m.group("vcores")), int(m.group("n") or 1)
            gpus = int(gpus_text or 0)
        except ValueError:  # more digits than int() converts
            raise SpecError(f"{text!r}: vcores, instances or gpus too large") from None
        return cls(m.group("mem"), vcores, instances, label=label, gpus=gpus)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``label`` as its value), omitting ``nb_proc_per_worker``, the ``tb_*``
        fields and ``gpus`` left at their defaults."""
        d = {f: getattr(self, f) for f in _FIELDS}
        d["label"] = self.label.value
        return {k: v for k, v in d.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TaskSpec:
        unknown = set(d) - set(_FIELDS)
        if unknown:
            raise SpecError(f"unknown TaskSpec field(s): {', '.join(sorted(unknown))}")
        return cls(**d)

    def __str__(self) -> str:
        gpu = "@gpu" if self.label is NodeLabel.GPU else ""
        n = f"x{self.instances}" if self.instances != 1 else ""
        gpus = f"/{self.gpus}" if self.gpus else ""
        return f"{self.memory}M/{self.vcores}{gpus}{n}{gpu}"


def validate_task_specs(task_specs: Mapping[str, TaskSpec]) -> dict[str, TaskSpec]:
    """Check a topology; return it in panel order.

    Something trains (a chief, or workers of which worker 0 acts as chief), at
    most one chief and one evaluator, and a ps only beside a chief (which
    coordinates parameter-server training). Which program runs on which
    topology (an Estimator needs a ps beside workers) is the strategy table's
    rule, in :mod:`~tfyarn_jupyter.protocol.contract`.
    """
    if not isinstance(task_specs, Mapping) or not task_specs:
        raise SpecError('task_specs must be a non-empty dict such as {"chief": TaskSpec(...)}')
    unknown = [t for t in task_specs if t not in TASK_TYPES]
    if unknown:
        raise SpecError(
            f"unknown task type(s) {', '.join(map(repr, unknown))}: use {', '.join(TASK_TYPES)}"
        )
    for name, spec in task_specs.items():
        if not isinstance(spec, TaskSpec):
            raise SpecError(f"task_specs[{name!r}] must be a TaskSpec, got {type(spec).__name__}")
    chief = task_specs.get("chief")
    if chief is None and "worker" not in task_specs:
        raise SpecError(
            'a run needs something that trains: add "chief": TaskSpec(...) '
            '(or "worker" tasks, of which worker 0 acts as chief)'
        )
    if chief is not None and chief.instances != 1:
        raise SpecError(f"a run needs exactly one chief, got instances={chief.instances}")
    evaluator = task_specs.get("evaluator")
    if evaluator is not None and evaluator.instances != 1:
        raise SpecError(f"a run takes at most one evaluator, got instances={evaluator.instances}")
    check_tensorboard(task_specs)
    if "ps" in task_specs and chief is None:
        raise SpecError(
            'a "ps" needs a "chief" to coordinate parameter-server training: add '
            '"chief": TaskSpec(...), or drop the ps for all-reduce training between workers'
        )
    return {t: task_specs[t] for t in TASK_TYPES if t in task_specs}


def check_tensorboard(task_specs: Mapping[str, TaskSpec]) -> None:
    """One tensorboard task at most, with arguments it can pass on; ``tb_*`` fields only there."""
    from tfyarn_jupyter.protocol.contract import ContractError, split_tb_args

    for name, spec in task_specs.items():
        given = [f for f, default in TB_DEFAULTS.items() if getattr(spec, f) != default]
        if name != "tensorboard" and given:
            raise SpecError(
                f"task_specs[{name!r}]: {', '.join(given)} belong to the 'tensorboard' task: "
                f'add "tensorboard": TaskSpec(..., {given[0]}=...) instead'
            )
    tb = task_specs.get("tensorboard")
    if tb is None:
        return
    if tb.instances != 1:
        raise SpecError(f"a run takes at most one tensorboard task, got instances={tb.instances}")
    if tb.gpus:
        raise SpecError(f"the tensorboard task reads event files and uses no GPU, got "
                        f"gpus={tb.gpus}: drop gpus= from it")  # fmt: skip
    for field in ("tb_model_dir", "tb_extra_args"):
        value = getattr(tb, field) or ""
        if '"' in value or "\n" in value:
            # YARN pastes environment values into its launch script between double quotes.
            raise SpecError(f"{field} {value!r}: a double quote or a newline cannot reach the "
                            "container (YARN's launch script); use single quotes")  # fmt: skip
    if tb.tb_model_dir is not None and not tb.tb_model_dir.strip():
        raise SpecError("tb_model_dir is empty: give a folder, or None for the model dir")
    try:
        split_tb_args(tb.tb_extra_args or "")
    except ContractError as exc:
        raise SpecError(str(exc)) from None


def task_names(task_specs: Mapping[str, TaskSpec]) -> list[str]:
    """Every task of a topology as ``type:index``, in panel order."""
    return [
        f"{t}:{i}" for t in TASK_TYPES if t in task_specs for i in range(task_specs[t].instances)
    ]
