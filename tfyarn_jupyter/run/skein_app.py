"""Building a run's skein application: payload, environment, the service script, the spec.

:func:`prepare` does everything up to submission. The cheap checks come
first (topology, options), then the function is serialised and loaded back
in a fresh interpreter while the environment is packed, and the queue is
asked whether the tasks fit: a bad request fails before anything is
allocated.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

import cloudpickle
import skein

from tfyarn_jupyter.core import recovery
from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import SpecError, TaskSpec
from tfyarn_jupyter.hadoop import filesystem, resourcemanager, tf_plugin
from tfyarn_jupyter.protocol import contract
from tfyarn_jupyter.protocol.contract import (
    ENV_DIR,
    OVERLAY,
    PAYLOAD,
    SOURCES,
    TASK_MODULE,
    TF_HDFS_PLUGIN,
    TaskContract,
)
from tfyarn_jupyter.run import checks
from tfyarn_jupyter.ship import layered_launch, packing
from tfyarn_jupyter.ship.shipped import ShippedEnv

#: Where the nodes' interpreter is, for a ``pyenv_archive`` built elsewhere.
INTERPRETER_VAR = "TFYARN_INTERPRETER"
#: The container side's entry point.

logger = logging.getLogger("tfyarn_jupyter")


def serialise(experiment_fn: Callable[[], Any]) -> bytes:
    """The function, pickled by value where it must be; a clear error where it cannot be."""
    if not callable(experiment_fn):
        raise SpecError(f"experiment_fn must be a function, got {type(experiment_fn).__name__}")
    try:
        return cloudpickle.dumps(experiment_fn)
    except Exception as exc:
        name = getattr(experiment_fn, "__name__", repr(experiment_fn))
        raise SpecError(
            f"experiment_fn {name!r} cannot be serialised ({type(exc).__name__}: {exc}); "
            "build unpicklable objects (sessions, open files, locks) inside the function"
        ) from exc


def start_load_check(payload: Path, pythonpath: Sequence[str]) -> subprocess.Popen:
    """Load the payload in a fresh interpreter: what the containers will do first."""
    code = "import sys, cloudpickle; cloudpickle.load(open(sys.argv[1], 'rb'))"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([*pythonpath, os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(payload)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=payload.parent,
    )


def finish_load_check(proc: subprocess.Popen) -> None:
    _, err = proc.communicate()
    if proc.returncode != 0:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit code {proc.returncode}"
        raise SpecError(
            f"experiment_fn pickles but does not load in a fresh interpreter ({last}). "
            "Ship the modules it needs with files= (or import them inside the function)."
        )


def acls_for(user: str, acls: skein.ACLs | Mapping[str, Sequence[str]]) -> skein.ACLs:
    """View and modify for the submitting user only, plus whatever ``acls`` grants."""
    if isinstance(acls, skein.ACLs):
        return acls
    return skein.ACLs(
        enable=True,
        view_users=sorted({user, *acls.get("view", ())}),
        modify_users=sorted({user, *acls.get("modify", ())}),
        ui_users=sorted({user, *acls.get("ui", ())}),
    )


def node_cache_script() -> str:
    """``node_cache.sh``: the shell function naming a node's cache folders, which both
    ``service.sh`` and a layered launch's ``assemble.sh`` call."""
    return (package_files("tfyarn_jupyter.container") / "sh" / "node_cache.sh").read_text()


def service_script(
    interpreter: str,
    pythonpath: Sequence[str],
    task_module: str = TASK_MODULE,
    pre_script_hook: str | None = None,
    prelude: str = "",
) -> str:
    """The container's script: ``service.sh`` after the lines that give it its inputs
    (and, for a layered environment, ``prelude``: the assembly of its layers)."""
    body = (package_files("tfyarn_jupyter.container") / "sh" / "service.sh").read_text()
    node_cache = node_cache_script()
    hook = f"tfyarn_pre_script_hook() {{\n{pre_script_hook}\n}}\n" if pre_script_hook else ""
    return (
        f"TFYARN_BASE_PYTHON={shlex.quote(interpreter)}\n"
        f"TFYARN_PYTHONPATH={shlex.quote(':'.join(pythonpath))}\n"
        f"TFYARN_TASK_MODULE={shlex.quote(task_module)}\n"
        f"TFYARN_OWN_TASK_MODULE={TASK_MODULE}\n{hook}{node_cache}{prelude}{body}"
    )


def tensorboard_env(spec: TaskSpec) -> dict[str, str]:
    """The tensorboard service's own variables, from its TaskSpec's ``tb_*`` fields."""
    timeout = spec.tb_termination_timeout_seconds
    return contract.TensorBoardContract(
        model_dir=spec.tb_model_dir or "",
        termination_timeout_s=contract.TB_DEFAULT_TIMEOUT_S if timeout < 0 else timeout,
        extra_args=spec.tb_extra_args or "",
    ).to_env()


#: The run's restarts for lost containers, as the tasks read it (``container.regroup``'s).
PREEMPTIONS_VAR = recovery.PREEMPTIONS_VAR


def task_env(options: LaunchOptions, contract: TaskContract) -> dict[str, str]:
    """The tasks' environment: the user's, then the contract (which reads the user's bounds)."""
    bound = {PREEMPTIONS_VAR: str(recovery.DEFAULT_PREEMPTIONS)}
    return {**bound, **options.env, **contract.to_env(), "PYTHONUNBUFFERED": "1"}


def max_restarts(task_type: str, instances: int, preemptions: int) -> int:
    """skein's ``max_restarts`` for a service: YARN's application master starts a replacement
    for each FAILED container. A task nothing waits on restarts alone; a loss in the
    TensorFlow cluster restarts each of its tasks once (``container.regroup``), so a service
    of the cluster restarts ``instances`` containers per loss (the tasks themselves end the
    run past ``preemptions`` losses; one round more here for a loss seen late). A task whose
    own code raised ends the application itself instead of being restarted."""
    if task_type in recovery.INDEPENDENT:
        return preemptions
    return (preemptions + 1) * instances


@dataclasses.dataclass
class Prepared:
    """A run ready to submit: its spec, and what building it measured and left on disk."""

    spec: skein.ApplicationSpec
    task_specs: dict[str, TaskSpec]
    contract: TaskContract
    phases: dict[str, float]
    env_report: ShippedEnv | None
    #: Holds the payload and sources the spec names: kept while a retry may resubmit them.
    workdir: tempfile.TemporaryDirectory


@dataclasses.dataclass
class _Staged:
    workdir: tempfile.TemporaryDirectory
    sources: Path | None
    check: subprocess.Popen

    @property
    def payload(self) -> Path:
        return Path(self.workdir.name) / PAYLOAD


def _stage(experiment_fn: Callable[[], Any], options: LaunchOptions) -> _Staged:
    """Write the payload and sources, and start loading them back in a fresh interpreter."""
    payload = serialise(experiment_fn)
    workdir = tempfile.TemporaryDirectory(prefix="tfyarn-launch-")
    wd = Path(workdir.name)
    (wd / PAYLOAD).write_bytes(payload)
    (wd / PAYLOAD).chmod(0o600)
    roots = dict(options.source_roots)
    if options.pyenv_archive is None:
        for root in packing.editable_roots(packing.venv_prefix()):
            roots.setdefault(str(root), root)
    sources = None
    if roots:
        sources = wd / SOURCES
        packing.zip_sources(roots, sources)
    # The fresh-interpreter check sees what a container sees: the files' targets.
    stage = wd / "stage"
    stage.mkdir()
    for target, src in options.files.items():
        (stage / target).symlink_to(src)
    path = [str(stage), *([str(sources)] if sources else [])]
    return _Staged(workdir, sources, start_load_check(wd / PAYLOAD, path))


def _environment(
    options: LaunchOptions, phases: dict[str, float], experiment_fn: Callable[[], Any]
) -> tuple[ShippedEnv | None, str, str]:
    """``(env report or None, archive, interpreter)``: the packed venv, or the user's archive."""
    if options.pyenv_archive is not None:
        return None, options.pyenv_archive, os.environ.get(INTERPRETER_VAR, "/usr/bin/env")
    if options.layers:  # layered environment (issue 14): see layered_launch.py
        layered = layered_launch.launch_layers(experiment_fn, options, phases)
        return layered, "", packing.base_interpreter(packing.venv_prefix())
    report = packing.ensure_env()
    phases.update({f"env_{k}": v for k, v in report.times.items()})
    return report, report.archive, packing.base_interpreter(packing.venv_prefix())


def _timed(phases: dict[str, float], name: str, fn: Callable[[], Any]) -> Any:
    t = time.perf_counter()
    try:
        return fn()
    finally:
        phases[name] = time.perf_counter() - t


def _shipped_files(
    staged: _Staged,
    options: LaunchOptions,
    report: ShippedEnv | None,
    archive: str,
    phases: dict[str, float],
) -> tuple[dict[str, skein.File], list[str]]:
    """The container's folder (``{name: skein.File}``) and its ``PYTHONPATH`` entries."""
    pythonpath = ["."]
    shipped = {PAYLOAD: skein.File(source=str(staged.payload), type="file")}
    if report is not None:
        shipped.update(report.container_files())
    else:
        shipped[ENV_DIR] = skein.File(
            source=file_source(archive), type="archive", visibility="private"
        )
    if staged.sources:
        shipped[SOURCES] = skein.File(source=str(staged.sources), type="file")
        pythonpath.append(SOURCES)
    if options.pip_packages:
        base = report.key if report else archive
        overlay, _ = _timed(
            phases, "pip_overlay", lambda: packing.ensure_overlay(list(options.pip_packages), base)
        )
        shipped[OVERLAY] = skein.File(source=overlay, type="archive", visibility="private")
        pythonpath.append(OVERLAY)
    for target, src in options.files.items():
        shipped[target] = skein.File(source=str(src))
    for target, uri in options.remote_files.items():  # localised by YARN from HDFS
        shipped[target] = skein.File(source=uri, type="file")
    if report is not None:  # the client's own environment: its TensorFlow is the tasks'
        plugin = _timed(phases, "tf_hdfs_plugin", _tf_hdfs_plugin)
        if plugin is not None:
            shipped[TF_HDFS_PLUGIN] = skein.File(source=str(plugin), type="file")
    return shipped, pythonpath


def _tf_hdfs_plugin() -> Path | None:
    """The client's build of TensorFlow's hdfs:// plugin, shipped so that a node needs no
    compiler; None (the tasks build their own, or say why they cannot) where this
    environment has no TensorFlow or no compiler."""
    try:
        return tf_plugin.build()
    except (tf_plugin.PluginError, OSError) as exc:
        logger.info("hdfs:// plugin for TensorFlow not shipped (%s): the tasks build it", exc)
        return None


def prepare(
    experiment_fn: Callable[[], Any], task_specs: Mapping[str, TaskSpec], options: LaunchOptions
) -> Prepared:
    """Everything up to submission: checks, payload, environment, the skein spec."""
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    kind = checks.check_program(experiment_fn, task_specs, options)
    checks.check_tensorboard(task_specs, options)
    checks.check_remote_files(options)
    staged = _stage(experiment_fn, options)
    phases["validate"] = time.perf_counter() - t0
    try:
        # Identity (Kerberos ticket or keytab) and queue ACLs, before anything is uploaded.
        login = (options.principal, options.keytab)
        _timed(phases, "preflight", lambda: resourcemanager.preflight(*login, options.queue))
        client = options.skein_client or _timed(
            phases, "client", lambda: resourcemanager.get_client(*login)
        )
        _timed(
            phases,
            "queue_check",
            lambda: resourcemanager.check_queue(client, options.queue, task_specs),
        )
        # After the queue check: a run the queue can never hold is refused before any upload.
        report, archive, interpreter = _environment(options, phases, experiment_fn)
        _timed(phases, "load_check_wait", lambda: finish_load_check(staged.check))
        shipped, pythonpath = _shipped_files(staged, options, report, archive, phases)
    except BaseException:
        staged.check.kill()
        staged.workdir.cleanup()
        raise
    topology = {t: s.instances for t, s in task_specs.items()}
    contract = options.contract(topology, env_key=report.key if report else "", program=kind)
    prelude = report.assembly() if report is not None else ""
    script = service_script(
        interpreter,
        pythonpath,
        options.custom_task_module or TASK_MODULE,
        options.pre_script_hook,
        prelude,
    )
    spec = application_spec(task_specs, options, contract, shipped, script)
    return Prepared(spec, dict(task_specs), contract, phases, report, staged.workdir)


def application_spec(
    task_specs: Mapping[str, TaskSpec],
    options: LaunchOptions,
    contract: TaskContract,
    shipped: Mapping[str, skein.File],
    script: str,
) -> skein.ApplicationSpec:
    """One skein service per task type, all with the same folder, script and environment."""
    env = task_env(options, contract)
    services = {
        ttype: skein.Service(
            resources=skein.Resources(memory=s.memory, vcores=s.vcores, gpus=s.gpus),
            script=script,
            instances=s.instances,
            files=dict(shipped),
            env={**env, **tensorboard_env(s)} if ttype == "tensorboard" else env,
            node_label=s.label.value,
            # YARN's application master restarts a lost container (issue 25).
            max_restarts=max_restarts(ttype, s.instances, recovery.preemptions_bound(env)),
        )
        for ttype, s in task_specs.items()
    }
    return skein.ApplicationSpec(
        name=options.name,
        queue=options.queue,
        services=services,
        file_systems=filesystem.token_targets(options.file_systems),
        acls=acls_for(filesystem.hadoop_user(), options.acls),
        max_attempts=1,
        tags=["tfyarn"],
    )


def with_attempt(spec: skein.ApplicationSpec, contract: TaskContract, attempt: int):
    """The same application for another attempt: only the contract's attempt differs."""
    d = spec.to_dict()
    for svc in d["services"].values():
        svc["env"].update(contract.with_attempt(attempt).to_env())
    return skein.ApplicationSpec.from_dict(d)


def file_source(path: str) -> str:
    """A skein file source: a URI as it is, an HDFS home path qualified, else local."""
    if "://" in path:
        return path
    if path.startswith("/user/") or path.startswith("/tmp/"):
        return filesystem.qualify(path)
    return str(Path(path).expanduser().absolute())
