"""The ``%%tfyarn`` magic in real kernels (nbclient / jupyter_client) against the sandbox.

The kernels are the venv's ``python3`` kernel, started from this test process
(jupyter_client runs a kernelspec whose argv starts with ``python`` on this
process's interpreter, so the kernel is ``.venv/bin/python``; the quickstart
test asserts it). Each kernel works in a folder under ``tmp_path``; what a
test needs back from a kernel it prints as one JSON line after ``MARK``.

Runs are tiny (512 MiB - 1 GiB, 1 vcore, 100-600 steps or no training at
all), application names carry a per-test prefix, and the ``yarn_apps``
fixture kills whatever of that prefix is still live when the test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from .helpers import unique

pytestmark = pytest.mark.sandbox

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
MARK = "@@tfyarn-test@@"
CELL_TIMEOUT_S = 1800
LIVE_STATES = ["NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"]
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")
#: The heartbeat timeout the kernel-death test gives its runs (the default is 60 s).
HEARTBEAT_TIMEOUT_S = 20


def report(expr: str) -> str:
    """Code that prints ``expr`` as one JSON line the test can find."""
    return f"import json as _json\nprint({MARK!r} + _json.dumps({expr}, default=str))"


def reported(outputs: list[dict[str, Any]]) -> Any:
    """The value a :func:`report` cell printed."""
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            for line in out["text"].splitlines():
                if line.startswith(MARK):
                    return json.loads(line[len(MARK) :])
    raise AssertionError(f"no report in the cell's outputs: {outputs}")


def stream(outputs: list[dict[str, Any]], name: str) -> str:
    return "".join(
        o["text"] for o in outputs if o.get("output_type") == "stream" and o["name"] == name
    )


def kernel_env(folder: Path) -> dict[str, str]:
    """The kernel's environment: the test's, with temporary files (the notebooks'
    ``tempfile.mkdtemp`` model dirs) under ``folder`` so none is left in ``/tmp``."""
    tmp = folder / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


def execute(nb: Any, folder: Path, allow_errors: bool = False) -> float:
    """Run ``nb`` in ``folder`` with the venv's python3 kernel; the wall time.

    A cell whose magic raised UsageError replies "error" (with no traceback);
    ``allow_errors`` lets the run go on past such cells.
    """
    t0 = time.monotonic()
    NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(folder)}},
    ).execute(env=kernel_env(folder))
    return time.monotonic() - t0


@pytest.fixture
def yarn_apps(skein_client) -> Iterator[list[str]]:
    """Name prefixes (append to it); live applications so named are killed after the test."""
    prefixes: list[str] = []
    yield prefixes
    if not prefixes:
        return
    for app in skein_client.get_applications(states=LIVE_STATES):
        if any(app.name.startswith(p) for p in prefixes):
            with contextlib.suppress(Exception):
                skein_client.kill_application(app.id)


def wait_final(client: Any, app_id: str, timeout: float = 600) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        report_ = client.application_report(app_id)
        if str(report_.state) in FINAL_STATES:
            return report_
        if time.monotonic() > deadline:
            raise AssertionError(f"{app_id} still {report_.state} after {timeout}s")
        time.sleep(1)


class Kernel:
    """A venv python3 kernel started with jupyter_client, run a cell at a time."""

    def __init__(self, cwd: Path) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=kernel_env(cwd))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    @property
    def pid(self) -> int:
        return int(self.manager.provisioner.pid)  # type: ignore[union-attr]

    def run(self, code: str, timeout: float = 900) -> list[dict[str, Any]]:
        """Execute one cell; its outputs. Any error output fails the test."""
        outputs: list[dict[str, Any]] = []

        def hook(msg: dict[str, Any]) -> None:
            kind = msg["msg_type"]
            content = msg["content"]
            if kind == "stream":
                outputs.append({"output_type": "stream", **content})
            elif kind == "error":
                outputs.append({"output_type": "error", **content})

        reply = self.client.execute_interactive(code, output_hook=hook, timeout=timeout)
        errors = [o for o in outputs if o["output_type"] == "error"]
        assert reply["content"]["status"] == "ok" and not errors, (
            f"cell failed:\n{code}\n{errors or reply['content']}\n{stream(outputs, 'stderr')}"
        )
        return outputs

    def close(self) -> None:
        self.client.stop_channels()
        if self.manager.is_alive():
            self.manager.shutdown_kernel(now=False)
        else:
            self.manager.cleanup_resources()


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(stat.parent.name))
    return out


# -- the quickstart -------------------------------------------------------------------------
#: Run in a kernel before any panel exists: every panel then records, through a listener,
#: what it showed (each distinct task, type, state, node and gpu badge), how many
#: evaluations it showed while RUNNING, and when it first showed every task running.
RECORD_PANELS = """\
import time as _time
import tfyarn_jupyter.panel.widget as _widget
_panel_init = _widget.RunPanel.__init__
def _recording_init(self, *args, **kwargs):
    _panel_init(self, *args, **kwargs)
    rec = self.recorded = {"seen": set(), "metrics_seen_while_running": 0,
                           "first_all_running_s": None, "created": _time.monotonic()}
    def listen(st, rec=rec):
        rec["seen"].update((t.task, t.type, t.state, t.node, t.gpu) for t in st.tasks)
        if st.app.state == "RUNNING" and st.metrics:
            rec["metrics_seen_while_running"] = max(rec["metrics_seen_while_running"],
                                                    len(st.metrics))
        if (rec["first_all_running_s"] is None and st.tasks
                and all(t.state == "running" for t in st.tasks)):
            rec["first_all_running_s"] = _time.monotonic() - rec["created"]
    self.add_listener(listen)
_widget.RunPanel.__init__ = _recording_init
"""

PANELS_REPORT = report(
    """[
    {
        "app_id": p.run.app_id,
        "seen": sorted(p.recorded["seen"]),
        "metrics_seen_while_running": p.recorded["metrics_seen_while_running"],
        "first_all_running_s": p.recorded["first_all_running_s"],
        "final": f"{p.run.status().app.state}/{p.run.status().app.final_status}",
        "poller_errors": p.poller.errors,
    }
    for p in get_ipython().magics_manager.registry["TfyarnMagics"].panels
]"""
)


def test_quickstart_notebook_runs_and_its_panels_held_every_task_on_a_node_with_metrics(
    sandbox, tmp_path, yarn_apps
):
    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns("__pycache__", ".ipynb*"))
    nb = nbformat.read(work / "quickstart.ipynb", as_version=4)
    # Unique application names, so that cleanup kills only this test's runs.
    prefix = unique("tfyarn-test-nbquick")
    yarn_apps.append(prefix)
    renamed = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("%%tfyarn"):
            first, _, body = cell.source.partition("\n")
            assert "--name quickstart" in first
            cell.source = first.replace("--name quickstart", f"--name {prefix}") + "\n" + body
            renamed += 1
    assert renamed == 2
    nb.cells.insert(0, new_code_cell(RECORD_PANELS))
    nb.cells.append(new_code_cell("import sys\n" + report("sys.executable")))
    nb.cells.append(new_code_cell(PANELS_REPORT))

    wall = execute(nb, work)

    assert reported(nb.cells[-2].outputs) == sys.executable  # the venv's own kernel
    panels = reported(nb.cells[-1].outputs)
    print(f"\nquickstart notebook: {wall:.0f}s wall")
    assert len(panels) == 2
    expected = [
        {"chief:0": "chief", "evaluator:0": "evaluator"},
        {
            "chief:0": "chief",
            "worker:0": "worker",
            "worker:1": "worker",
            "ps:0": "ps",
            "evaluator:0": "evaluator",
        },
    ]
    for panel, tasks in zip(panels, expected, strict=True):
        print(
            f"  {panel['app_id']}: first all running after {panel['first_all_running_s']}s, "
            f"{panel['metrics_seen_while_running']} evaluations seen while RUNNING, "
            f"final {panel['final']}; states seen: "
            f"{sorted({(t, st) for t, _, st, _, _ in panel['seen']})}"
        )
        assert panel["final"] == "FINISHED/SUCCEEDED"
        running = {
            (task, ttype): node
            for task, ttype, state, node, _ in panel["seen"]
            if state == "running" and node
        }
        for task, ttype in tasks.items():
            assert (task, ttype) in running, f"{task} never shown running on a node: {panel}"
        assert {task for task, *_ in panel["seen"]} == set(tasks)
        assert panel["metrics_seen_while_running"] > 0
        # first_all_running_s stays None when no single poll saw every task running:
        # on a busy cluster the evaluator's container may come after the trainers ended.
    first = panels[0]["seen"]
    # --queue ml-gpu --gpu chief: the chief ran on the gpu node, the evaluator did not.
    assert {gpu for task, _, state, node, gpu in first if task == "chief:0" and node} == {True}
    assert {gpu for task, _, state, node, gpu in first if task == "evaluator:0" and node} == {False}


@pytest.mark.current_tf
@pytest.mark.tf221_only  # the notebook asks for tf-keras, which the 2.15 environment lacks
def test_keras_quickstart_notebook_trains_a_chief_and_two_workers_into_hdfs(
    sandbox, tmp_path, yarn_apps
):
    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns("__pycache__", ".ipynb*"))
    nb = nbformat.read(work / "quickstart_keras.ipynb", as_version=4)
    prefix = unique("tfyarn-test-nbkeras")
    yarn_apps.append(prefix)
    (launch,) = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%tfyarn")]
    assert "--worker 1G/1x2" in launch.source and "--name quickstart-keras" in launch.source
    launch.source = launch.source.replace("--name quickstart-keras", f"--name {prefix}")
    nb.cells.append(new_code_cell(report("[result.final_status, sorted(result.tasks)]")))

    wall = execute(nb, work)

    final, tasks = reported(nb.cells[-1].outputs)
    print(f"\nKeras quickstart notebook: {wall:.0f}s wall, {final}, tasks {tasks}")
    assert final == "SUCCEEDED"
    assert tasks == ["chief:0", "evaluator:0", "worker:0", "worker:1"]


# -- a local module edited between runs ---------------------------------------------------
def _failing_launch(name: str, var: str) -> str:
    return textwrap.dedent(
        f"""\
        %%tfyarn --chief 512M/1 --wait --var {var} --name {name}
        def experiment_fn():
            raise RuntimeError(f"value={{mymod.VALUE}}")
        """
    )


def test_local_module_edited_between_runs_ships_its_new_source_with_or_without_reload(
    sandbox, tmp_path, yarn_apps
):
    prefix = unique("tfyarn-test-nbmod")
    yarn_apps.append(prefix)
    (tmp_path / "mymod.py").write_text("VALUE = 1\n")
    nb = new_notebook()
    nb.cells = [
        new_code_cell("%load_ext tfyarn_jupyter"),
        new_code_cell("import importlib, pathlib\nimport mymod"),
        new_code_cell(_failing_launch(f"{prefix}-1", "r1")),
        # Edit the file and re-run, without reloading: the kernel still has VALUE 1.
        new_code_cell(
            'pathlib.Path("mymod.py").write_text("VALUE = 2\\n")\n' + report("mymod.VALUE")
        ),
        new_code_cell(_failing_launch(f"{prefix}-2", "r2")),
        # Edit it and reload it, as a user who knows about importlib.reload would.
        new_code_cell(
            'pathlib.Path("mymod.py").write_text("VALUE = 3\\n")\n'
            "importlib.reload(mymod)\n" + report("mymod.VALUE")
        ),
        new_code_cell(_failing_launch(f"{prefix}-3", "r3")),
        new_code_cell(
            report(
                '[{"app_id": r.app_id, "state": r.status().app.state, '
                '"failure": r.status().to_dict()["failure"], "result": repr(r.result)} '
                "for r in (r1, r2, r3)]"
            )
        ),
    ]

    wall = execute(nb, tmp_path)

    print(f"\nthree failing launches with --wait: {wall:.0f}s wall")
    assert reported(nb.cells[3].outputs) == 1  # not reloaded: the kernel's module is stale
    assert reported(nb.cells[5].outputs) == 3
    runs = reported(nb.cells[-1].outputs)
    # Run n failed with value=n: each launch zipped mymod.py as it was on disk then.
    for value, run, cell in zip((1, 2, 3), runs, nb.cells[2:7:2], strict=True):
        assert run["state"] == "FINISHED", run
        assert run["failure"]["task"] == "chief:0"
        assert f"RuntimeError: value={value}" in run["failure"]["traceback"], run
        # The user sees the remote traceback under the cell (--wait prints RunFailed).
        stderr = stream(cell.outputs, "stderr")
        assert f"RuntimeError: value={value}" in stderr, stderr
        assert "in task chief:0" in stderr
        assert "FAILED" in run["result"]


# -- bad arguments ----------------------------------------------------------------------------
BAD_LINES = [
    ("--chief 2X/4", ["--chief", "2X/4"]),
    ("--chief 512M/1 --worker 1G/1x0", ["--worker"]),
    ("--trainer 1G/1", ["--trainer"]),
    ("--chief 512M/1 --gpu trainer", ["--gpu", "trainer"]),
    ("--chief 512M/1 --evaluator 1G/1x2", ["--evaluator"]),
]


def test_bad_arguments_print_a_usage_error_naming_them_and_submit_nothing(
    sandbox, tmp_path, app_names, yarn_apps
):
    prefix = unique("tfyarn-test-nbbad")
    yarn_apps.append(prefix)
    before = app_names()
    nb = new_notebook()
    nb.cells = [new_code_cell("%load_ext tfyarn_jupyter")]
    for i, (line, _) in enumerate(BAD_LINES):
        nb.cells.append(
            new_code_cell(
                f"%%tfyarn {line} --name {prefix}-{i}\nran_{i} = True\n"
                "def experiment_fn():\n    return None"
            )
        )
    # A line that parses but names a queue the cluster lacks: refused before submission.
    nb.cells.append(
        new_code_cell(
            f"%%tfyarn --chief 512M/1 --queue no-such-queue --name {prefix}-q\n"
            "def experiment_fn():\n    return None"
        )
    )
    nb.cells.append(new_code_cell(report("[n for n in globals() if n.startswith('ran_')]")))

    execute(nb, tmp_path, allow_errors=True)

    for (_, names), cell in zip(BAD_LINES, nb.cells[1:6], strict=True):
        assert all(o["output_type"] == "stream" for o in cell.outputs), cell.outputs
        stderr = stream(cell.outputs, "stderr")
        assert stderr.startswith("UsageError: %%tfyarn"), stderr
        for name in names:
            assert name in stderr, (name, stderr)
        assert "Traceback" not in stderr
    queue_err = stream(nb.cells[-2].outputs, "stderr")
    assert queue_err.startswith("UsageError: %%tfyarn: queue 'no-such-queue' does not exist")
    # A bad line is refused before the cell body even runs.
    assert reported(nb.cells[-1].outputs) == []
    new = app_names() - before
    assert not [n for n in new if n.startswith(prefix)]


# -- kernel death ------------------------------------------------------------------------------
SLEEPER = "import time\ndef experiment_fn():\n    time.sleep(3600)"
WAIT_RUNNING = """\
import time as _t
_deadline = _t.monotonic() + 600
while not all(
    any(t.state == "running" for t in r.status().tasks) for r in ({runs})
):
    assert _t.monotonic() < _deadline, [r.status() for r in ({runs})]
    _t.sleep(1)
"""


def test_killed_kernel_ends_its_run_while_a_detached_run_survives_and_attaches_elsewhere(
    sandbox, skein_client, tmp_path, yarn_apps
):
    from tfyarn_jupyter.protocol import events

    prefix = unique("tfyarn-test-nbkill")
    yarn_apps.append(prefix)
    first = Kernel(tmp_path)
    leftovers: list[int] = []
    try:
        first.run(
            "%load_ext tfyarn_jupyter\nimport tfyarn_jupyter.protocol.contract as _contract\n"
            f"_contract.HEARTBEAT_TIMEOUT_S = {HEARTBEAT_TIMEOUT_S}"
        )
        first.run(f"%%tfyarn --chief 512M/1 --name {prefix}-owned --var owned\n{SLEEPER}")
        first.run(f"%%tfyarn --chief 512M/1 --name {prefix}-detached --detach --var det\n{SLEEPER}")
        owned_id, det_id = reported(first.run(report("[owned.app_id, det.app_id]")))
        first.run(WAIT_RUNNING.format(runs="owned, det"), timeout=700)
        # The kernel heartbeats into the owned run, and only there.
        owned_kv = skein_client.connect(owned_id).kv
        det_kv = skein_client.connect(det_id).kv
        deadline = time.monotonic() + 30
        while events.HEARTBEAT not in owned_kv.get_range():
            assert time.monotonic() < deadline, "the kernel never heartbeated"
            time.sleep(1)
        assert events.DETACHED in det_kv.get_range()
        leftovers = _children(first.pid)
        killed_at = time.monotonic()
        os.kill(first.pid, signal.SIGKILL)

        owned_report = wait_final(skein_client, owned_id, timeout=300)
        ended_after = time.monotonic() - killed_at
        print(
            f"\nrun of a kill -9'ed kernel ended {owned_report.state}/"
            f"{owned_report.final_status} {ended_after:.1f}s after the kill "
            f"(heartbeat timeout {HEARTBEAT_TIMEOUT_S}s)"
        )
        assert str(owned_report.final_status) in ("FAILED", "KILLED")
        assert "heartbeat" in (owned_report.diagnostics or "")
        assert ended_after < HEARTBEAT_TIMEOUT_S + 60
        # Well past the heartbeat timeout, the detached run still runs.
        assert str(skein_client.application_report(det_id).state) == "RUNNING"
    finally:
        first.close()
        alive = [pid for pid in leftovers if Path(f"/proc/{pid}").exists()]
        print(f"children of the killed kernel still alive: {alive} of {leftovers}")
        for pid in alive:  # the dead kernel's skein driver, if it outlived it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    second = Kernel(tmp_path)
    try:
        second.run("%load_ext tfyarn_jupyter\n" + RECORD_PANELS)
        second.run(f"%tfyarn attach {det_id}")
        second.run(
            "_m = get_ipython().magics_manager.registry['TfyarnMagics']\n"
            "det = _m.panels[0].run\n" + WAIT_RUNNING.format(runs="det,"),
            timeout=120,
        )
        panels = reported(
            second.run(report("[(p.run.app_id, sorted(p.recorded['seen'])) for p in _m.panels]"))
        )
        assert [app_id for app_id, _ in panels] == [det_id]
        assert any(
            task == "chief:0" and state == "running" and node
            for task, _, state, node, _ in panels[0][1]
        )
        out = second.run(f"%tfyarn cancel {det_id}")
        assert f"killed {det_id}" in stream(out, "stdout")
        det_report = wait_final(skein_client, det_id, timeout=120)
        assert str(det_report.state) == "KILLED"
    finally:
        second.close()


# -- several runs from one kernel ------------------------------------------------------------
def _gated_launch(name: str, var: str, model_dir: str) -> str:
    """A short training run that first waits (bounded) for the file ``go`` beside the notebook."""
    return textwrap.dedent(
        f"""\
        %%tfyarn --chief 1G/1 --name {name} --var {var}
        {model_dir} = tempfile.mkdtemp(prefix="three-")
        def experiment_fn():
            import time
            deadline = time.monotonic() + 600
            while not os.path.exists(go) and time.monotonic() < deadline:
                time.sleep(1)
            return cancer.experiment({model_dir}, max_steps=100)
        """
    )


def test_three_runs_from_one_kernel_get_their_own_panels_and_cancelling_one_spares_the_others(
    sandbox, tmp_path, yarn_apps
):
    prefix = unique("tfyarn-test-nbthree")
    yarn_apps.append(prefix)
    shutil.copy(NOTEBOOKS / "cancer.py", tmp_path / "cancer.py")
    nb = new_notebook()
    nb.cells = [
        new_code_cell("%load_ext tfyarn_jupyter"),
        # The sandbox is one host: the containers see this folder, so a file gates them.
        new_code_cell("import os, pathlib, tempfile\nimport cancer\ngo = os.path.abspath('go')"),
        new_code_cell(_gated_launch(f"{prefix}-1", "r1", "dir_1")),
        new_code_cell(f"%%tfyarn --chief 512M/1 --name {prefix}-2 --var r2\n{SLEEPER}"),
        new_code_cell(_gated_launch(f"{prefix}-3", "r3", "dir_3")),
        # All three hold a running chief; cancel the second while the others wait for `go`.
        new_code_cell(
            WAIT_RUNNING.format(runs="r1, r2, r3")
            + 'get_ipython().run_line_magic("tfyarn", f"cancel {r2.app_id}")\n'
            + "others_at_cancel = [r.status().app.state for r in (r1, r3)]\n"
            + "pathlib.Path(go).touch()"
        ),
        new_code_cell("res1, res3 = r1.wait(timeout=900), r3.wait(timeout=900)"),
        new_code_cell(
            report(
                '{"panels": [p.run.app_id for p in '
                'get_ipython().magics_manager.registry["TfyarnMagics"].panels], '
                '"runs": [r.app_id for r in (r1, r2, r3)], '
                '"states": [f"{r.status().app.state}/{r.status().app.final_status}" '
                "for r in (r1, r2, r3)], "
                '"others_at_cancel": others_at_cancel, '
                '"durations": [res1.duration_s, res3.duration_s]}'
            )
        ),
    ]

    wall = execute(nb, tmp_path)

    out = reported(nb.cells[-1].outputs)
    print(f"\nthree runs, one cancelled: {wall:.0f}s wall; {out}")
    assert out["panels"] == out["runs"]
    assert len(set(out["runs"])) == 3
    assert out["others_at_cancel"] == ["RUNNING", "RUNNING"]
    assert out["states"][1] == "KILLED/KILLED"
    assert out["states"][0] == out["states"][2] == "FINISHED/SUCCEEDED"
