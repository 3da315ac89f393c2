"""The ``%%tfyarn`` line: its arguments, and their checks into :class:`LaunchArgs`.

Argument parsing is IPython's ``magic_arguments`` (argparse); every value is
checked (:func:`parse_launch`) before anything is serialised or submitted,
and a bad one is a :class:`~IPython.core.error.UsageError` that names the
argument and the form it takes, never a traceback. Pure: no cluster, no kernel.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from tfyarn_jupyter.core.options import LaunchOptions
from tfyarn_jupyter.core.spec import TASK_TYPES, NodeLabel, SpecError, TaskSpec, validate_task_specs

DEFAULT_CHIEF = "1G/1"
#: A TensorBoard's resources when ``--tensorboard`` names none.
DEFAULT_TENSORBOARD = "1G/1"


@dataclasses.dataclass
class LaunchArgs:
    """A ``%%tfyarn`` line, checked: the topology, the launch options, and the magic's own."""

    task_specs: dict[str, TaskSpec]
    options: LaunchOptions
    fn: str = "experiment_fn"
    #: ``--fn`` was given: only then may a cell with no code launch an existing function.
    fn_explicit: bool = False
    wait: bool = False
    var: str | None = None


def _task_argument(ttype: str, default: str | None = None) -> Any:
    help_default = f" (default {default})" if default else ""
    return argument(
        f"--{ttype}",
        metavar="MEM/VCORES[/GPUS]" + ("[xN]" if ttype in ("worker", "ps") else ""),
        default=default,
        help=f"resources of the {ttype} task{'s' if ttype in ('worker', 'ps') else ''}, "
        f"e.g. 2G/4{'x8' if ttype in ('worker', 'ps') else ''}, or with yarn.io/gpu "
        f"8G/4/1{'x4' if ttype in ('worker', 'ps') else ''}{help_default}",
    )


def _args_decorators(func: Any) -> Any:
    decorators = [
        magic_arguments(name="%tfyarn"),
        _task_argument("chief", DEFAULT_CHIEF),
        _task_argument("worker"),
        _task_argument("ps"),
        _task_argument("evaluator"),
        argument("--tensorboard", nargs="?", const=DEFAULT_TENSORBOARD, default=None,
                 metavar="MEM/VCORES",
                 help="also run TensorBoard on the model dir, linked from the panel through "
                      f"the ResourceManager's proxy (default {DEFAULT_TENSORBOARD})"),
        argument("--gpu", metavar="TYPES", default="",
                 help="comma-separated task types to run on nodes labelled 'gpu', "
                      "e.g. --gpu chief,worker (use with a queue that reaches them)"),
        argument("--queue", default="default", help="YARN queue (default: default)"),
        argument("--name", default="tfyarn", help="application name shown by YARN"),
        argument("--pip", action="append", default=[], metavar="PKG",
                 help="extra package installed beside the environment (repeatable)"),
        argument("--file", action="append", default=[], metavar="PATH[:TARGET]",
                 help="local file or folder shipped to each container (repeatable)"),
        argument("--env", action="append", default=[], metavar="K=V",
                 help="environment variable for the tasks (repeatable)"),
        argument("--file-system", action="append", default=[], metavar="URI",
                 help="extra filesystem to get delegation tokens for (repeatable)"),
        argument("--retries", default="0", metavar="N",
                 help="re-submit a failed run up to N times"),
        argument("--fn", default=None, metavar="NAME",
                 help="the function the cell defines (default experiment_fn); over a cell with "
                      "no code (a comment), launch the notebook's existing function NAME"),
        argument("--archive", default=None, metavar="PATH",
                 help="a pre-built environment archive (local path or hdfs://)"),
        argument("--function", action="store_true",
                 help="run the cell's function itself in every task (with TF_CONFIG, RANK, "
                      "WORLD_SIZE, MASTER_ADDR set) instead of the Experiment it returns"),
        argument("--layers", action=argparse.BooleanOptionalAction, default=None,
                 help="ship the environment as content-addressed layers (the default), so a "
                      "launch after installing one package moves only that package (see "
                      "%%tfyarn env); --no-layers ships one tar of the whole venv"),
        argument("--exclude-package", action="append", default=None, metavar="DIST",
                 help="a distribution left out of what is shipped (repeatable; "
                      "replaces the default list of notebook-only packages)"),
        argument("--shared-layer-cache", default=None, metavar="HDFS_DIR",
                 help="the cluster's world-readable folder for layers shared "
                      "between users"),
        argument("--layer-codec", choices=["zstd"], default=None,
                 help="compress the layers (zstd): fewer bytes to upload and localise, "
                      "more CPU; pays on networks slower than about 2 Gbit/s"),
        argument("--mlflow", action="store_true",
                 help="log the run to MLflow (on by itself when MLFLOW_TRACKING_URI is set)"),
        argument("--wait", action="store_true",
                 help="block until the run ends; interrupting the kernel cancels it"),
        argument("--detach", action="store_true",
                 help="keep the run going when this kernel exits"),
        argument("--var", default=None, metavar="NAME",
                 help="bind the Run handle to this notebook variable"),
    ]  # fmt: skip
    for dec in reversed(decorators):
        func = dec(func)
    return func


def _parse_pairs(values: list[str], sep: str, flag: str, form: str) -> list[tuple[str, str]]:
    out = []
    for v in values:
        key, found, value = v.partition(sep)
        if not found or not key:
            raise UsageError(f"%%tfyarn {flag} {v!r}: expected {form}")
        out.append((key, value))
    return out


def parse_launch(line: str) -> LaunchArgs:
    """Parse and check a ``%%tfyarn`` line; raise UsageError naming the culprit."""
    try:
        args = parse_argstring(_launch_parser, line)
    except UsageError as exc:
        raise UsageError(f"%%tfyarn: {exc} (see %%tfyarn --help)") from None
    except SystemExit as exc:  # argparse's --help or an error it printed
        raise UsageError(f"%%tfyarn: bad arguments {line!r} (see %%tfyarn --help)") from exc
    except ValueError as exc:  # shlex: unbalanced quotes
        raise UsageError(f"%%tfyarn: cannot split {line!r}: {exc}") from exc
    specs = _parse_topology(args)
    try:  # isdecimal(), not isdigit(): int() refuses superscripts; and it caps the digits
        nb_retries = int(args.retries) if args.retries.isdecimal() else -1
    except ValueError:
        nb_retries = -1
    if nb_retries < 0:
        raise UsageError(f"%%tfyarn --retries {args.retries!r}: expected a whole number >= 0")
    if args.var is not None and not args.var.isidentifier():
        raise UsageError(f"%%tfyarn --var {args.var!r}: not a Python name")
    fn_explicit = args.fn is not None
    fn_name = args.fn if fn_explicit else "experiment_fn"
    if not fn_name.isidentifier():
        raise UsageError(f"%%tfyarn --fn {fn_name!r}: not a Python name")
    if args.wait and args.detach:
        raise UsageError("%%tfyarn: --wait and --detach exclude each other")
    try:
        options = LaunchOptions(
            files=_parse_files(args.file),
            env=_parse_env(args.env),
            queue=args.queue,
            name=args.name,
            pip_packages=list(args.pip),
            file_systems=list(args.file_system),
            nb_retries=nb_retries,
            pyenv_archive=args.archive,
            detach=args.detach,
            mode="function" if args.function else "experiment",
            mlflow=True if args.mlflow else None,
            **_layer_options(args),
        )
    except SpecError as exc:
        raise UsageError(f"%%tfyarn: {exc}") from None
    return LaunchArgs(task_specs=specs, options=options, fn=fn_name, wait=args.wait,
                      var=args.var, fn_explicit=fn_explicit)  # fmt: skip


def _layer_options(args: Any) -> dict[str, Any]:
    """The layer options the line sets; the others keep LaunchOptions' defaults."""
    out: dict[str, Any] = {}
    if args.layers is not None:
        out["layers"] = args.layers
    if args.exclude_package is not None:
        out["exclude_packages"] = tuple(args.exclude_package)
    if args.shared_layer_cache is not None:
        out["shared_layer_cache"] = args.shared_layer_cache
    if args.layer_codec is not None:
        out["layer_codec"] = args.layer_codec
    layered = out.get("layers", LaunchOptions.layers)
    if not layered and len(out) > ("layers" in out):
        raise UsageError(
            "%%tfyarn --exclude-package, --shared-layer-cache and --layer-codec shape a layered "
            "environment: drop --no-layers"
        )
    return out


def _parse_topology(args: Any) -> dict[str, TaskSpec]:
    """The task specs of a parsed line: resources, gpu labels, and the topology's rules."""
    gpu = {t.strip() for t in args.gpu.split(",") if t.strip()}
    unknown = gpu - set(TASK_TYPES)
    if unknown:
        raise UsageError(
            f"%%tfyarn --gpu {args.gpu!r}: unknown task type(s) {', '.join(sorted(unknown))}; "
            f"use a comma-separated list of {', '.join(TASK_TYPES)}"
        )
    specs: dict[str, TaskSpec] = {}
    for ttype in TASK_TYPES:
        text = getattr(args, ttype)
        if text is None:
            continue
        label = NodeLabel.GPU if ttype in gpu else NodeLabel.CPU
        try:
            specs[ttype] = TaskSpec.parse(text, label=label)
        except SpecError as exc:
            raise UsageError(f"%%tfyarn --{ttype}: {exc}") from None
        if ttype in ("chief", "evaluator", "tensorboard") and specs[ttype].instances != 1:
            raise UsageError(f"%%tfyarn --{ttype} {text!r}: a run has exactly one {ttype}")
    missing_gpu = gpu - set(specs)
    if missing_gpu:
        raise UsageError(
            f"%%tfyarn --gpu: {', '.join(sorted(missing_gpu))} not requested; add --"
            f"{sorted(missing_gpu)[0]} MEM/VCORES"
        )
    try:
        specs = validate_task_specs(specs)
    except SpecError as exc:
        flag = next((f"--{t}" for t in ("tensorboard", "ps") if t in str(exc)), "--chief")
        raise UsageError(f"%%tfyarn {flag}: {exc}") from None
    return specs


def _parse_files(items: list[str]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for item in items:
        path, _, target = item.partition(":")
        target = target or Path(path).name
        try:
            exists = Path(path).expanduser().exists()
        except (RuntimeError, OSError):  # ~user of an unknown user; a name too long
            exists = False
        if not exists:
            raise UsageError(f"%%tfyarn --file {item!r}: {path} does not exist")
        files[target] = Path(path)
    return files


def _parse_env(items: list[str]) -> dict[str, str]:
    env = dict(_parse_pairs(items, "=", "--env", "K=V"))
    for key in env:
        if not key.isidentifier():
            raise UsageError(f"%%tfyarn --env {key!r}: not a variable name")
    return env


@_args_decorators
def _launch_parser(line: str, cell: str | None = None) -> None:
    """Launch the cell's ``experiment_fn`` on YARN and show a live panel under the cell.

    Task resources are MEM/VCORES (``2G/4``, ``512M/1``); workers and ps
    take an instance count (``--worker 2G/4x8``). A third figure asks YARN
    for that many ``yarn.io/gpu`` per task (``--chief 8G/4/1``,
    ``--worker 8G/4/2x4``). ``--gpu chief,worker`` puts those types on nodes
    labelled ``gpu`` (a ``@gpu`` suffix on one resource, ``--chief 2G/4@gpu``,
    does the same); the two combine. Without ``--wait`` the
    cell returns at once and the panel updates in the background.
    """


def launch_help() -> str:
    """The ``%%tfyarn --help`` text: every flag of the launch line."""
    return str(_launch_parser.parser.format_help())
