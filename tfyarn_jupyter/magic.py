"""``%%tfyarn`` (launch the cell's ``experiment_fn``) and ``%tfyarn`` (list, attach, cancel, logs).

Argument parsing is IPython's ``magic_arguments`` (argparse); every value is
checked (:func:`parse_launch`) before anything is serialised or submitted,
and a bad one is a :class:`~IPython.core.error.UsageError` that names the
argument and the form it takes, never a traceback.
"""

from __future__ import annotations

import dataclasses
import html
import os
import shlex
import sys
import sysconfig
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import HTML, display

from .cell import MISSING, cell_function, existing_function, is_empty, python_of
from .options import LaunchOptions
from .spec import TASK_TYPES, NodeLabel, SpecError, TaskSpec, validate_task_specs

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
        metavar="MEM/VCORES" + ("[xN]" if ttype in ("worker", "ps") else ""),
        default=default,
        help=f"resources of the {ttype} task{'s' if ttype in ('worker', 'ps') else ''}, "
        f"e.g. 2G/4{'x8' if ttype in ('worker', 'ps') else ''}{help_default}",
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
        )
    except SpecError as exc:
        raise UsageError(f"%%tfyarn: {exc}") from None
    return LaunchArgs(task_specs=specs, options=options, fn=fn_name, wait=args.wait,
                      var=args.var, fn_explicit=fn_explicit)  # fmt: skip


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
        flag = "--ps" if "ps" in str(exc) else "--chief"
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
    take an instance count (``--worker 2G/4x8``). ``--gpu chief,worker``
    puts those types on nodes labelled ``gpu`` (a ``@gpu`` suffix on one
    resource, ``--chief 2G/4@gpu``, does the same). Without ``--wait`` the
    cell returns at once and the panel updates in the background.
    """


def local_module_roots(base: Path, modules: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """Folders of the modules the notebook imported from under ``base`` (not installed ones)."""
    base = base.resolve()
    excluded = {
        Path(p).resolve()
        for p in (sys.prefix, sys.base_prefix, sysconfig.get_path("stdlib"),
                  sysconfig.get_path("purelib"))
    }  # fmt: skip
    roots: dict[str, Path] = {}
    for name, mod in list((modules if modules is not None else sys.modules).items()):
        file = getattr(mod, "__file__", None)
        if not file or name == "__main__" or "." in name:
            continue
        path = Path(file).resolve()
        if not path.is_relative_to(base) or any(path.is_relative_to(e) for e in excluded):
            continue
        root = path.parent.parent if path.name == "__init__.py" else path.parent
        roots[str(root)] = root
    return roots


@magics_class
class TfyarnMagics(Magics):
    """The ``%%tfyarn`` cell magic and ``%tfyarn`` line magic."""

    shell: Any

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.runs: list[Any] = []
        self.panels: list[Any] = []

    @cell_magic("tfyarn")  # type: ignore[arg-type]
    def tfyarn_cell(self, line: str, cell: str) -> Any:
        if "--help" in shlex.split(line) or "-h" in shlex.split(line):
            print(_launch_parser.parser.format_help())
            return None
        args = parse_launch(line)
        ns = self.shell.user_ns
        source = python_of(self.shell, cell)
        if source is not None and is_empty(source):
            return self._launch(args, existing_function(args.fn, args.fn_explicit, ns))
        before, previous = set(ns), ns.get(args.fn, MISSING)
        result = self.shell.run_cell(cell, store_history=False, silent=False)
        if not result.success:
            raise UsageError("%%tfyarn: the cell raised; nothing was submitted")
        return self._launch(args, cell_function(ns, args.fn, source, before, previous))

    def _launch(self, args: LaunchArgs, fn: Any) -> Any:
        from . import run as runs

        roots = local_module_roots(Path(os.getcwd()))
        options = dataclasses.replace(args.options, source_roots=roots)
        try:
            run = runs.submit(fn, args.task_specs, options=options)
        except SpecError as exc:
            raise UsageError(f"%%tfyarn: {exc}") from None
        self.runs.append(run)
        if args.var:
            self.shell.user_ns[args.var] = run
        self.shell.user_ns["_tfyarn_run"] = run
        panel = self._show(run)
        if args.wait:
            try:
                run.wait()
            except KeyboardInterrupt:
                run.cancel()
                print(f"cancelled {run.app_id}")
            except runs.RunFailed as exc:
                print(str(exc), file=sys.stderr)
            if panel is not None:
                panel.update(run.status())
        return None

    def _show(self, run: Any) -> Any:
        """One output: the live panel, whose display bundle carries the static summary
        (``text/html``) too, re-sent in place as the run's state changes so that a saved or
        exported notebook shows where the run got to."""
        from .widget import RunPanel, status_html

        try:
            panel = RunPanel(run, start=False)
        except Exception as exc:  # no widget front end here: the static summary only
            print(f"tfyarn: live panel unavailable ({exc}); showing a static summary")
            return display(HTML(status_html(run.status())))
        handle = display(panel, display_id=True)
        last_key: list[Any] = [None]

        def refresh(st: Any) -> None:
            key = (st.app.app_id, st.app.state, tuple(t.state for t in st.tasks),
                   len(st.metrics), bool(st.capacity), st.ended)  # fmt: skip
            if handle is not None and key != last_key[0]:
                last_key[0] = key
                handle.update(panel)

        panel.add_listener(refresh)
        self.panels.append(panel)
        panel.poller.start()
        return panel

    @line_magic("tfyarn")  # type: ignore[arg-type]
    def tfyarn_line(self, line: str) -> Any:
        """``%tfyarn list | attach APP_ID | cancel APP_ID | logs APP_ID [TASK] | env``."""
        from . import cluster, layer_cache
        from . import run as runs

        words = shlex.split(line)
        if not words or words[0] in ("-h", "--help", "help"):
            print(self.tfyarn_line.__doc__)
            return None
        cmd, rest = words[0], words[1:]
        if cmd == "env":  # what a launch ships: layers and sizes (layer_cache.py)
            print(layer_cache.environment_report())
            return None
        need_id = {"attach": 1, "cancel": 1, "logs": 1}
        if cmd not in ("list", *need_id):
            raise UsageError(f"%tfyarn {cmd!r}: use list, attach APP_ID, cancel APP_ID, "
                             "logs APP_ID [TASK]")  # fmt: skip
        if cmd in need_id and not rest:
            raise UsageError(f"%tfyarn {cmd}: give the application id (see %tfyarn list)")
        if cmd in need_id and not rest[0].startswith("application_"):
            raise UsageError(f"%tfyarn {cmd} {rest[0]!r}: not an application id "
                             "(application_<cluster>_<n>)")  # fmt: skip
        client = cluster.get_client()
        if cmd == "list":
            return self._list(client)
        app_id = rest[0]
        try:  # another user's run refuses (ACLs): say so in one line, with no Java trace
            run = client.kill_application(app_id) if cmd == "cancel" else runs.attach(app_id)
        except Exception as exc:
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UsageError(f"%tfyarn {cmd} {app_id}: {why}") from None
        if cmd == "cancel":
            print(f"killed {app_id}")
            return None
        if cmd == "attach":
            self.runs.append(run)
            self._show(run)
            return None
        task = rest[1] if len(rest) > 1 else "chief:0"
        logs = run.logs(task)
        print(f"== {app_id} {task} ({logs.source}) stdout ==\n{logs.stdout}")
        print(f"== {app_id} {task} stderr ==\n{logs.stderr}")
        return None

    def _list(self, client: Any) -> HTML:
        from skein.model import ApplicationState

        from .filesystem import hadoop_user
        from .status import app_info

        states = [s for s in ApplicationState if s not in ("NEW", "NEW_SAVING")]
        reports = [r for r in client.get_applications(states=states) if r.user == hadoop_user()]
        rows = []
        for r in sorted(reports, key=lambda r: r.id):
            a = app_info(r)
            started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a.start_time / 1000))
            cells = (a.app_id, a.name, a.queue, a.state, a.final_status, started)
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        body = "".join(rows) or "<tr><td colspan=6>no applications</td></tr>"
        head = "<tr><th>application</th><th>name</th><th>queue</th><th>state</th>" \
               "<th>final status</th><th>started</th></tr>"  # fmt: skip
        return HTML(f"<table class='tfyarn-list'>{head}{body}</table>")


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(TfyarnMagics)
