"""``%%tfyarn`` (launch the cell's ``experiment_fn``) and ``%tfyarn`` (list, attach, cancel, logs).

The line's arguments are parsed and checked in :mod:`.magic_args` before
anything is serialised or submitted.
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
from IPython.display import HTML, display

from tfyarn_jupyter.core.spec import SpecError
from tfyarn_jupyter.hadoop import tf_plugin
from tfyarn_jupyter.magic.arguments import LaunchArgs, launch_help, parse_launch
from tfyarn_jupyter.magic.cell import MISSING, cell_function, existing_function, is_empty, python_of


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
            print(launch_help())
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
        from tfyarn_jupyter.run import launch as runs

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
        from tfyarn_jupyter.panel.summary import status_html
        from tfyarn_jupyter.panel.widget import RunPanel

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
        from tfyarn_jupyter.hadoop import resourcemanager
        from tfyarn_jupyter.run import launch as runs
        from tfyarn_jupyter.ship import layered_launch

        words = shlex.split(line)
        if not words or words[0] in ("-h", "--help", "help"):
            print(self.tfyarn_line.__doc__)
            return None
        cmd, rest = words[0], words[1:]
        if cmd == "env":  # what a launch ships: layers and sizes (layered_launch.py)
            print(layered_launch.environment_report())
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
        client = resourcemanager.get_client()
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

        from tfyarn_jupyter.hadoop.filesystem import hadoop_user
        from tfyarn_jupyter.run.polling import app_info

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
    # hdfs:// and viewfs:// for TensorFlow in this kernel, once it is imported (not now).
    tf_plugin.register_on_import(_plugin_unavailable)


def _plugin_unavailable(exc: BaseException) -> None:
    print(f"tfyarn: TensorFlow cannot open hdfs:// paths in this kernel: {exc}", file=sys.stderr)
