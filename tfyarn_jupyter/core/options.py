"""The launch keywords of ``run_on_yarn``, ``submit`` and ``%%tfyarn``, in one checked object.

:class:`LaunchOptions` is built once from the keywords (or from a ``%%tfyarn``
line) and validated at construction, so every way in runs the same checks,
in the same order, before anything touches the cluster.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import skein

from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.protocol import contract

ACL_KINDS = ("view", "modify", "ui")
MODES = ("experiment", "function")
#: Task modules that mean something here: the mode they run in, or None for tfyarn's own
#: task in the mode given. tf-yarn's are criteo/tf-yarn's (0.7.0, and the layouts before):
#: its default task (``tf_yarn/_env.py``'s INDEPENDENT_WORKERS_MODULE; in ``tf_yarn/tasks/``
#: from 2019-09 to 2022-01, in ``tf_yarn/`` before, ``_dispatch_task`` before 2018-12) and
#: ``tf_yarn.distributed.task`` (``tf_yarn/distributed/client.py``'s default).
MAPPED_TASK_MODULES: Mapping[str, str | None] = {
    "tf_yarn.tensorflow.tasks._independent_workers_task": None,
    "tf_yarn.tasks._independent_workers_task": None,
    "tf_yarn._independent_workers_task": None,
    "tf_yarn._dispatch_task": None,
    "tf_yarn.distributed.task": "function",
    "tfyarn_jupyter.distributed": "function",
    contract.TASK_MODULE: None,
    "tfyarn_jupyter.tasks": None,  # the shim an earlier tfyarn_jupyter's environment runs
}
#: tf-yarn's task modules that mean "run the function in every task" here.
FUNCTION_TASK_MODULES = frozenset(m for m, mode in MAPPED_TASK_MODULES.items() if mode)
_NO_MODULE = "give no custom_task_module"
_ALL_REDUCE = (
    "for all-reduce training return a KerasExperiment from experiment_fn and give "
    '"chief" and "worker" tasks (MultiWorkerMirroredStrategy), and ' + _NO_MODULE
)
#: tf-yarn's task modules with no counterpart here: what each did, and what to use instead.
REFUSED_TASK_MODULES: Mapping[tuple[str, ...], str] = {
    (
        "tf_yarn.tensorflow.tasks.gloo_allred_task",
        "tf_yarn.tasks.gloo_allred_task",
        "tf_yarn.tasks._gloo_allred_task",
    ): "is tf-yarn's Horovod task (all-reduce through Horovod over gloo); Horovod is not "
    f"shipped to tfyarn_jupyter's tasks and tf-yarn's modules are not either: {_ALL_REDUCE}",
    ("tf_yarn.tensorflow.tasks.evaluator_task", "tf_yarn.tasks.evaluator_task"): (
        "is tf-yarn's evaluator-only task (every other task does nothing); here an evaluator "
        'evaluates each checkpoint while the chief trains: add "evaluator": TaskSpec(...) '
        f"beside the trainers and {_NO_MODULE}"
    ),
    (
        "tf_yarn.tensorflow.tasks._tensorboard_task",
        "tf_yarn.tasks._tensorboard_task",
        "tf_yarn._tensorboard_task",
    ): 'is tf-yarn\'s TensorBoard task, which it ran for a "tensorboard" task by itself; so '
    f'does tfyarn_jupyter: add "tensorboard": TaskSpec(...) and {_NO_MODULE}',
    ("tf_yarn.tasks._standalone_client_task", "tf_yarn._standalone_client_task"): (
        "is tf-yarn's standalone-client task (bare TensorFlow servers for a client to "
        "drive, removed from tf-yarn in 2020); tfyarn_jupyter's tasks train by themselves: "
        + _ALL_REDUCE
    ),
    ("tf_yarn.pytorch.",): (
        "is tf-yarn's PyTorch task; tfyarn_jupyter has none: run the training as a function, "
        "tfyarn_jupyter.distributed.run_on_yarn(fn, task_specs) (mode='function'), whose "
        "tasks get RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and LOCAL_RANK for "
        "torch.distributed"
    ),
}
#: tf-yarn keywords with another name or no counterpart here, and what to use instead.
_RENAMED = {"pyenv_zip_path": "pyenv_archive"}
_REFUSED = {
    "eval_monitor_log_thresholds": "the evaluator's metrics are in RunResult.metrics, the "
    "panel and the run's log; filter them there",
}
#: The notebook's Keras choice: these travel from the client's environment to the tasks
#: unless ``env=`` sets them, so a notebook that trains with tf-keras (or a Keras backend)
#: launches tasks that do too, and the check before submission reads the same values.
INHERITED_ENV = (contract.LEGACY_KERAS_VAR, "KERAS_BACKEND")
_COLLECTIONS = frozenset({"files", "env", "pip_packages", "file_systems", "acls", "source_roots"})


def check_tf_yarn_module(module: str) -> None:
    """Refuse tf-yarn's task modules that have no counterpart here, saying what to use.

    A tf-yarn module run in a container fails there (``No module named 'tf_yarn'``)
    after everything was uploaded; this says so, and what does the job here, at once.
    """
    for names, why in REFUSED_TASK_MODULES.items():
        if any(module == n or (n.endswith(".") and module.startswith(n)) for n in names):
            raise SpecError(f"custom_task_module={module!r} {why}")
    if module.split(".")[0] == "tf_yarn":
        raise SpecError(
            f"custom_task_module={module!r} is not a tf-yarn task module tfyarn_jupyter "
            "knows, and tf_yarn is not shipped to the tasks: "
            f"{_NO_MODULE} for tf-yarn's default task (tf_yarn.tensorflow.tasks."
            "_independent_workers_task), or mode='function' for tf_yarn.distributed.task"
        )


#: Schemes of ``files`` sources YARN localises itself (checked on the cluster, not here).
REMOTE_FILE_SCHEMES = ("hdfs://", "viewfs://")


def split_files(
    files: Mapping[str, str | os.PathLike] | None,
) -> tuple[dict[str, Path], dict[str, str]]:
    """``files`` as local files (checked by :func:`check_files`) and HDFS URIs, which YARN
    localises into each container's folder (their existence is checked before upload)."""
    local: dict[str, str | os.PathLike] = {}
    remote: dict[str, str] = {}
    for target, source in (files or {}).items():
        if isinstance(source, str) and source.startswith(REMOTE_FILE_SCHEMES):
            _check_target(target)
            remote[target] = source
        else:
            local[target] = source
    return check_files(local), remote


def _check_target(target: str) -> None:
    if "/" in target.strip("/") or target in contract.RESERVED_NAMES:
        raise SpecError(f"files: {target!r} is not a plain name for the container's folder")


def check_files(files: Mapping[str, str | os.PathLike] | None) -> dict[str, Path]:
    """``{target name: absolute source}``; each source exists, each target is a plain name."""
    out: dict[str, Path] = {}
    for target, source in (files or {}).items():
        try:
            path = Path(source).expanduser()
            exists = path.exists()
        except (RuntimeError, OSError):  # ~user of an unknown user; a name too long
            exists = False
        if not exists:
            raise SpecError(f"files[{target!r}]: {source} does not exist")
        _check_target(target)
        out[target] = path.absolute()
    return out


def inherited_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of :data:`INHERITED_ENV` the client's environment sets (``os.environ``)."""
    environ = os.environ if environ is None else environ
    return {k: environ[k] for k in INHERITED_ENV if k in environ}


def _check_bound(env: Mapping[str, str], key: str, least: float) -> None:
    if key not in env:
        return
    try:
        ok = float(env[key]) >= least
    except ValueError:
        ok = False
    if not ok:
        raise SpecError(f"env: {key}={env[key]!r} must be a number of seconds >= {least:g}")


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Variables YARN's launch script can carry; the contract's bounds as usable seconds."""
    out = {}
    for k, v in (env or {}).items():
        if not isinstance(k, str) or not k.isidentifier() or not isinstance(v, str):
            raise SpecError(f"env: {k!r} must map a variable name to a string")
        if '"' in v or "\n" in v:
            # YARN pastes values into its launch script between double quotes.
            raise SpecError(
                f"env: the value of {k} contains a double quote or a newline, "
                "which YARN's launch script cannot carry; encode it (e.g. base64)"
            )
        out[k] = v
    _check_bound(out, contract.PEER_TIMEOUT_VAR, 1.0)
    _check_bound(out, contract.HEARTBEAT_TIMEOUT_VAR, 3 * contract.HEARTBEAT_INTERVAL_S)
    return out


def check_acls(acls: skein.ACLs | Mapping[str, Sequence[str]] | None) -> skein.ACLs | dict:
    if acls is None or isinstance(acls, skein.ACLs):
        return acls or {}
    if not isinstance(acls, Mapping):
        raise SpecError(f"acls must be a dict such as {{'view': ['bob']}}, got {acls!r}")
    unknown = set(acls) - set(ACL_KINDS)
    if unknown:
        raise SpecError(f"acls: unknown key(s) {sorted(unknown)}: use view, modify, ui")
    return {k: tuple(v) for k, v in acls.items()}


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"{name} must be an int >= 0, got {value!r}")
    return value


#: What ``layer_codec`` may be: plain tars, or zstd-compressed ones.
LAYER_CODECS = (None, "zstd")


@dataclasses.dataclass(frozen=True)
class LaunchOptions:
    """Everything a launch takes besides the function and the task specs.

    The keywords are tf-yarn's (``files``, ``env``, ``queue``, ``pip_packages``,
    ``file_systems``, ``nb_retries``) plus ``name``, ``acls`` (extra users for
    ``view``/``modify``/``ui``; the submitting user always has all three),
    ``pyenv_archive`` (a pre-built environment instead of the packed venv),
    ``detach`` (the run outlives the kernel), ``source_roots`` (folders of
    local modules to ship), ``peer_timeout_s``, and ``principal``/``keytab`` (a
    Kerberos login from a keytab instead of the ticket cache).

    ``env`` is what the tasks get on top of the contract's variables; it starts from
    the client's :data:`INHERITED_ENV` (the notebook's Keras choice), which ``env=`` overrides.
    """

    #: Local files; ``hdfs://``/``viewfs://`` sources given here move to :attr:`remote_files`.
    files: Mapping[str, Path] = dataclasses.field(default_factory=dict)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    queue: str = "default"
    pip_packages: Sequence[str] = ()
    file_systems: Sequence[str] = ()
    name: str = "tfyarn"
    acls: skein.ACLs | Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)
    nb_retries: int = 0
    pyenv_archive: str | None = None
    detach: bool = False
    source_roots: Mapping[str, Path] = dataclasses.field(default_factory=dict)
    peer_timeout_s: float = contract.PEER_TIMEOUT_S
    #: "experiment": ``experiment_fn`` returns an Experiment or KerasExperiment; "function":
    #: the function itself runs in every task (tf-yarn's ``tf_yarn.distributed`` mode).
    mode: str = "experiment"
    #: A module run with ``python -m`` in each container instead of tfyarn's own task.
    custom_task_module: str | None = None
    #: Shell commands run in each container before the task starts (tf-yarn's).
    pre_script_hook: str | None = None
    #: A skein client to submit with instead of this process's own.
    skein_client: skein.Client | None = None
    #: Log the run to MLflow (:mod:`.mlflow_log`); None: when a tracking URI is set.
    mlflow: bool | None = None
    #: Kerberos: the principal to launch as, with ``keytab`` to log in from it (as skein's
    #: ``Client(principal=, keytab=)``); alone, it must be the ticket cache's principal.
    principal: str | None = None
    keytab: str | None = None
    #: Ship the venv as content-addressed layers (``ship/layered_launch.py``), not one tar.
    layers: bool = True
    #: Ship the venv's base interpreter as a layer: "auto" (a self-contained one), True, False.
    ship_interpreter: bool | str = "auto"
    #: Distributions left out of the layers; None: :data:`.layers.DEFAULT_EXCLUDE`.
    exclude_packages: Sequence[str] | None = None
    #: A world-readable HDFS folder an administrator named, for layers shared (PUBLIC).
    shared_layer_cache: str | None = None
    #: "zstd": layers ship compressed (fewer bytes to upload and localise, more CPU on
    #: each side: it pays on networks slower than about 2 Gbit/s, docs/performance.md);
    #: None: plain tars.
    layer_codec: str | None = None
    #: ``files`` whose source is on HDFS: YARN localises each into the containers' folders.
    remote_files: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        local, remote = split_files(self.files)
        set_(self, "files", local)
        set_(self, "remote_files", {**dict(self.remote_files or {}), **remote})
        set_(self, "env", check_env({**inherited_env(), **(self.env or {})}))
        if not isinstance(self.queue, str) or not self.queue:
            raise SpecError(f"queue must be a queue name, got {self.queue!r}")
        set_(self, "pip_packages", tuple(self.pip_packages or ()))
        set_(self, "file_systems", tuple(self.file_systems or ()))
        set_(self, "acls", check_acls(self.acls))
        set_(self, "nb_retries", _check_int("nb_retries", self.nb_retries))
        set_(self, "source_roots", dict(self.source_roots or {}))
        if not isinstance(self.peer_timeout_s, (int, float)) or self.peer_timeout_s < 1:
            raise SpecError(f"peer_timeout_s must be >= 1 second, got {self.peer_timeout_s!r}")
        if self.mlflow is not None and not isinstance(self.mlflow, bool):
            raise SpecError(f"mlflow must be True, False or None (auto), got {self.mlflow!r}")
        self._check_program()
        self._check_login()
        self._check_layers()

    def _check_layers(self) -> None:
        if self.ship_interpreter not in ("auto", True, False):
            raise SpecError(
                f"ship_interpreter must be 'auto', True or False, got {self.ship_interpreter!r}"
            )
        if self.exclude_packages is not None:
            if isinstance(self.exclude_packages, str) or not all(
                isinstance(p, str) for p in self.exclude_packages
            ):
                raise SpecError(
                    "exclude_packages must be a list of distribution names, "
                    f"got {self.exclude_packages!r}"
                )
            object.__setattr__(self, "exclude_packages", tuple(self.exclude_packages))
        cache = self.shared_layer_cache
        if cache is not None and not (
            isinstance(cache, str) and cache.startswith(("/", "hdfs://"))
        ):
            raise SpecError(f"shared_layer_cache must be an absolute HDFS folder, got {cache!r}")
        if self.layer_codec not in LAYER_CODECS:
            raise SpecError(
                f"layer_codec must be None (plain tars) or 'zstd', got {self.layer_codec!r}"
            )

    def _check_login(self) -> None:
        if self.principal is not None and (
            not isinstance(self.principal, str) or not self.principal.strip()
            or any(c.isspace() for c in self.principal)
        ):  # fmt: skip
            raise SpecError(f"principal must be a Kerberos principal (you@REALM), got "
                            f"{self.principal!r}")  # fmt: skip
        if self.keytab is None:
            return
        if not self.principal:
            raise SpecError(f"keytab={self.keytab!r} needs principal= (see `klist -k KEYTAB`)")
        path = Path(str(self.keytab)).expanduser()
        if not path.is_file() or not os.access(path, os.R_OK):
            raise SpecError(f"keytab {self.keytab!r} is not a readable file")
        object.__setattr__(self, "keytab", str(path.absolute()))

    def _check_program(self) -> None:
        module = self.custom_task_module
        if isinstance(module, str) and module in MAPPED_TASK_MODULES:
            mode = MAPPED_TASK_MODULES[module]
            object.__setattr__(self, "mode", mode or self.mode)
            object.__setattr__(self, "custom_task_module", None)
        elif module is not None and not (
            isinstance(module, str) and all(p.isidentifier() for p in module.split("."))
        ):
            raise SpecError(f"custom_task_module must be a module name, got {module!r}")
        elif module is not None:
            check_tf_yarn_module(module)
        if self.mode not in MODES:
            raise SpecError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.pre_script_hook is not None and not isinstance(self.pre_script_hook, str):
            raise SpecError(f"pre_script_hook must be shell commands, got {self.pre_script_hook!r}")
        if self.pyenv_archive is not None and not isinstance(self.pyenv_archive, str):
            raise SpecError(
                f"pyenv_archive (tf-yarn's pyenv_zip_path) must be one archive path for every "
                f"node label, got {type(self.pyenv_archive).__name__}"
            )

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> LaunchOptions:
        """Build from ``submit``'s keywords; an unknown keyword names the ones there are."""
        keywords = dict(keywords)
        for name, why in _REFUSED.items():
            if keywords.get(name) is not None:
                raise SpecError(f"{name} is not supported: {why}")
            keywords.pop(name, None)
        for old, new in _RENAMED.items():
            if old in keywords:
                if keywords.get(new) is not None and keywords[old] is not None:
                    raise SpecError(f"give {new} or its tf-yarn name {old}, not both")
                value = keywords.pop(old)
                keywords.setdefault(new, value)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(keywords) - known)
        if unknown:
            raise TypeError(
                f"unknown launch keyword(s) {', '.join(unknown)}; "
                f"the keywords are: {', '.join(sorted(known))}"
            )
        # ``None`` means "not given" for the optional collections, as in tf-yarn.
        given = {k: v for k, v in keywords.items() if v is not None or k not in _COLLECTIONS}
        return cls(**given)

    def contract(
        self, topology: Mapping[str, int], *, env_key: str = "", program: str = contract.UNKNOWN
    ) -> contract.TaskContract:
        """The tasks' contract: the user's bounds where set; a detached run has no watchdog."""
        heartbeat = 0.0
        if not self.detach:
            heartbeat = float(
                self.env.get(contract.HEARTBEAT_TIMEOUT_VAR, contract.HEARTBEAT_TIMEOUT_S)
            )
        return contract.TaskContract(
            topology=dict(topology),
            mode=self.mode,
            program=program,
            peer_timeout_s=float(self.env.get(contract.PEER_TIMEOUT_VAR, self.peer_timeout_s)),
            heartbeat_timeout_s=heartbeat,
            env_key=env_key,
        )
