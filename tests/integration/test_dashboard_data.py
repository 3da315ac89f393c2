"""The dashboard's data against the sandbox: progress, resources, timeline, durations, capacity.

- A topology the queue can never hold (the issue's 8 tasks of 2 GiB / 4 vcores on a queue that
  reaches 8 GiB / 8 vcores) is refused with the figures before anything is uploaded or
  submitted.
- A run with every task type reports, while it trains, its step of ``max_steps``, the rate, a
  loss history that grows, and each task's memory and CPU (evaluator and ps included); at the
  end every task's duration is above 0 in ``RunResult``, the status and the static summary.
- A run that fits the queue but waits behind another says what waits and why, in the status,
  in ``run_on_yarn``'s log, and in the peer-timeout message of its tasks.

The sandbox's queues (``hadoop_conf.capacity_scheduler``): ``default`` reaches the unlabelled
NodeManager (8 GiB / 8 vcores), ``ml-gpu`` that one and the ``gpu`` one; other sessions share
them, so figures are read, not assumed, where another run could change them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from tfyarn_jupyter import RunFailed, SpecError, TaskSpec, submit
from tfyarn_jupyter.panel.summary import status_html
from tfyarn_jupyter.ship import layered_launch, packing

from .helpers import unique

pytestmark = pytest.mark.sandbox

RUN_TIMEOUT_S = 900
MAX_STEPS = 3000


def test_a_topology_the_queue_can_never_hold_is_refused_before_upload_or_submission(
    sandbox, app_names, monkeypatch
):
    packed: list[str] = []
    for module, fn in ((packing, "ensure_env"), (layered_launch, "launch_layers")):
        monkeypatch.setattr(module, fn, lambda *a, _fn=fn, **k: packed.append(_fn))
    name = unique("tfyarn-test-toobig")
    specs = {"chief": TaskSpec("2G", 4), "worker": TaskSpec("2G", 4, instances=7)}
    with pytest.raises(SpecError) as exc:
        submit(lambda: None, specs, name=name, queue="default")
    text = str(exc.value)
    assert text.startswith("the run needs 16896 MiB / 33 vcores in the unlabelled partition")
    assert "queue 'default' can hold at most 8192 MiB / 8 vcores there" in text
    assert "16896 MiB > 8192 MiB and 33 vcores > 8 vcores" in text
    assert packed == [], "the environment was packed/uploaded before the refusal"
    assert name not in app_names()

    gpu = {"chief": TaskSpec("512M", 1), "worker": TaskSpec("3G", 1, instances=3, label="gpu")}
    with pytest.raises(SpecError, match=r"9216 MiB / 3 vcores in partition 'gpu'"):
        submit(lambda: None, gpu, name=name, queue="ml-gpu")
    assert name not in app_names()


def progress_of(st: Any, task: str) -> dict[str, Any]:
    return st.to_dict()["progress"].get(task, {})


def test_progress_resources_and_durations_of_every_task(sandbox, cancer, launch, tmp_path):
    model_dir = str(tmp_path / "model")

    def experiment_fn():
        return cancer.experiment(model_dir, max_steps=MAX_STEPS, save_checkpoints_steps=500)

    specs = {
        "chief": TaskSpec("1G", 1),
        "worker": TaskSpec("1G", 1),
        "ps": TaskSpec("512M", 1),
        "evaluator": TaskSpec("1G", 1),
    }
    run = launch(experiment_fn, specs, "tfyarn-test-dashboard")
    deadline = time.monotonic() + RUN_TIMEOUT_S
    seen: dict[str, list[dict[str, Any]]] = {"chief:0": [], "worker:0": []}
    others: dict[str, dict[str, Any]] = {}
    while not (st := run.status()).ended:
        assert time.monotonic() < deadline, f"{run.app_id} still {st.app.state}: {st.pending}"
        for task, snapshots in seen.items():
            p = progress_of(st, task)
            if p.get("step") is not None and (not snapshots or snapshots[-1]["t"] != p["t"]):
                snapshots.append(p)
        for task in ("evaluator:0", "ps:0"):
            if progress_of(st, task).get("rss_bytes"):
                others[task] = progress_of(st, task)
        time.sleep(1.0)
    result = run.wait(timeout=120)

    # While training: step of max_steps, a rate, a growing loss history, resources. Under a
    # ps, the chief and the worker share the global step; the one that ran most steps tells.
    training = max(seen.values(), key=lambda ps: len({p["step"] for p in ps}))
    print(f"FIGURE progress writes seen: { {t: len(ps) for t, ps in seen.items()} }")
    assert len(training) >= 3, seen
    assert all(p["max_steps"] == MAX_STEPS for p in training)
    assert training[-1]["step"] > training[0]["step"]
    assert any(p["steps_per_s"] > 0 for p in training)
    assert len(training[-1]["history"]) > len(training[0]["history"]) >= 1
    steps = [s for s, _ in training[-1]["history"]]
    # each trainer may take one step past max_steps before it sees the shared global step
    assert steps == sorted(steps) and steps[-1] <= MAX_STEPS + len(seen), steps[-5:]
    assert all(p["rss_bytes"] > 50 << 20 for p in training)  # a TensorFlow process
    assert training[-1]["memory_limit_bytes"] == 1024 << 20  # YARN's limit for a 1G task
    assert any(isinstance(p["cpu_percent"], float) and p["cpu_percent"] > 0 for p in training)
    # The tasks that do not train report their resources in the same key.
    assert set(others) == {"evaluator:0", "ps:0"}, others
    assert others["ps:0"]["memory_limit_bytes"] == 512 << 20
    assert others["evaluator:0"]["step"] is None

    # At the end: every task's timeline and duration, the same in the result and the summary.
    final = run.status()
    assert final.succeeded
    tasks = final.to_dict()["tasks"]
    for t in tasks:
        assert 0 < t["requested_time"] <= t["allocated_time"] <= t["running_time"], t
        assert t["running_time"] < t["end_time"], t
        assert t["duration_s"] > 0, t
        assert (t["memory_mb"], t["vcores"]) == (specs[t["type"]].memory, 1)
    durations = {t["task"]: t["duration_s"] for t in tasks}
    print(f"FIGURE durations={durations}")
    assert {t: d["duration_s"] for t, d in result.tasks.items()} == durations
    assert all(v is not None and v.total_seconds() > 0 for v in result.container_duration.values())
    summary = status_html(final)
    for d in durations.values():
        assert f"{d:.1f}s" in summary
    assert result.metrics.get("global_step", 0) >= MAX_STEPS


def test_a_run_waiting_behind_another_says_what_waits_and_why_and_its_peers_name_it(
    sandbox, runs, caplog
):
    def sleeper():
        import time

        time.sleep(1800)

    blocker = submit(sleeper, {"chief": TaskSpec("5G", 1)}, name=unique("tfyarn-test-blocker"))
    runs.append(blocker)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while (st := blocker.status()).tasks[0].state != "running":
        assert not st.ended and time.monotonic() < deadline, (st.app.state, st.pending)
        time.sleep(1.0)

    # 3.5 GiB with its master: fits the queue's 8 GiB, but not beside the blocker's 5.5 GiB.
    specs = {"chief": TaskSpec("512M", 1), "ps": TaskSpec("512M", 1), "worker": TaskSpec("2G", 1)}
    caplog.set_level(logging.INFO, logger="tfyarn_jupyter")
    run = submit(lambda: None, specs, name=unique("tfyarn-test-waits"), peer_timeout_s=40.0)
    runs.append(run)
    seen: list[str] = []

    def watch() -> None:
        st = run.advance()
        if st.capacity:
            seen.append(st.capacity["message"])

    while not run.ended:
        assert time.monotonic() < deadline, run.status().pending
        watch()
        time.sleep(1.0)
    with pytest.raises(RunFailed) as exc:
        run.wait(timeout=60)
    blocker.cancel()

    assert seen, "the status never said why the worker waits"
    # Other sessions share the sandbox: more may wait beside the worker, but the worker and
    # where it waits are named, with the queue's use of that partition.
    said = [m for m in seen if "worker:0" in m and "2048 MiB/1 vcores" in m]
    assert said, seen
    assert all("in the unlabelled partition: queue 'default' " in m for m in said), said
    assert all(" MiB, " in m and " vcores in use)" in m for m in said), said
    logged = [r.getMessage() for r in caplog.records if " waiting: " in r.getMessage()]
    assert any("worker:0" in line for line in logged), [r.getMessage() for r in caplog.records]
    tb = exc.value.traceback
    assert "waited 40s for its peers: worker:0 was never allocated: " in tb, tb
    assert "2048 MiB/1 vcores in the unlabelled partition: queue 'default'" in tb, tb
    assert "TFYARN_PEER_TIMEOUT=SECONDS waits longer" in tb


def test_a_launch_cell_has_one_output_holding_the_widget_and_the_final_summary(
    sandbox, tmp_path, app_names
):
    """In a real kernel (nbclient): one display output per launch cell, whose bundle has the
    widget view and the static summary, updated in place to the final state; and a cell
    that does not define its function is refused, though an earlier cell defined it."""
    import nbformat
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook

    prefix = unique("tfyarn-test-oneout")
    nb = new_notebook()
    nb.cells = [
        new_code_cell("%load_ext tfyarn_jupyter"),
        new_code_cell("def train():\n    import time\n    time.sleep(3)"),
        new_code_cell(f"%%tfyarn --chief 512M/1 --function --fn train --name {prefix}-x\nx = 1"),
        new_code_cell(  # no code: IPython refuses a cell magic with nothing under it
            f"%%tfyarn --chief 512M/1 --function --wait --fn train --name {prefix}\n# train"
        ),
    ]
    NotebookClient(nb, timeout=900, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, saved)
    nb = nbformat.read(saved, as_version=4)

    stale = nb.cells[2].outputs  # a UsageError: IPython prints it, no traceback
    assert [(o["output_type"], o.get("name")) for o in stale] == [("stream", "stderr")], stale
    assert stale[0]["text"].startswith("UsageError: %%tfyarn: the cell defines no function 'train'")
    assert "`%%tfyarn --fn train` over a cell with no code" in stale[0]["text"]
    assert f"{prefix}-x" not in app_names()

    outputs = nb.cells[3].outputs
    shown = [o for o in outputs if o["output_type"] in ("display_data", "execute_result")]
    assert len(shown) == 1, outputs
    data = shown[0]["data"]
    assert "application/vnd.jupyter.widget-view+json" in data
    summary = data["text/html"]
    assert "tfyarn-static" in summary and "FINISHED/SUCCEEDED" in summary, summary
    assert "chief:0" in summary and "succeeded" in summary, summary
    assert [o for o in outputs if o["output_type"] == "error"] == []
