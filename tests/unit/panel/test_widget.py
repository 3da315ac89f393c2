"""The panel's model: traits from a status, actions from the front end (no cluster).

The run is a stand-in object: the panel only calls ``advance``, ``cancel``,
``kill_task`` and ``logs`` on it, and here those record what they were asked.
"""

from __future__ import annotations

from typing import Any

import pytest

from tfyarn_jupyter.core.state import AppInfo, RunStatus, TaskState
from tfyarn_jupyter.panel.widget import RunPanel
from tfyarn_jupyter.run.logs import TaskLogs


class RecordingRun:
    app_id = "application_1_0001"
    last_status = None
    resourcemanager_unreachable = ""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def advance(self) -> RunStatus:
        return running()

    def cancel(self) -> None:
        self.calls.append(("cancel", None))

    def kill_task(self, task: str) -> None:
        if task == "worker:9":
            raise ValueError("no task worker:9 in this run")
        self.calls.append(("kill", task))

    def logs(self, task: str) -> TaskLogs:
        self.calls.append(("logs", task))
        return TaskLogs("live", "step 1\n", "", {"chief.log": "step 1\n"})


def running(state: str = "RUNNING", final: str = "UNDEFINED") -> RunStatus:
    ended = final != "UNDEFINED"
    app = AppInfo(
        app_id="application_1_0001",
        name="<b>demo</b>",
        queue="ml-gpu",
        state=state,
        final_status=final,
        start_time=1000.0,
        finish_time=61000.0 if ended else 0.0,
    )
    tasks = [
        TaskState("chief:0", "chief", 0, "running", "gpu-node:8042", True, "c_2", 2000.0),
        TaskState("evaluator:0", "evaluator", 0, "running", "cpu-node:8042", False, "c_3", 2000.0),
    ]
    metrics = [{"global_step": 100, "loss": 0.5, "accuracy": 0.9}]
    return RunStatus(app, tasks, [], metrics, None)


@pytest.fixture
def panel():
    run = RecordingRun()
    p = RunPanel(run, start=False)  # type: ignore[arg-type]
    sent: list[dict] = []
    p.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    p.sent = sent  # type: ignore[attr-defined]
    yield p
    p.close()


def from_front_end(panel: RunPanel, content: dict) -> None:
    """Deliver ``content`` the way a browser's ``model.send`` arrives: a comm message."""
    panel._handle_msg({"content": {"data": {"method": "custom", "content": content}},
                       "buffers": []})  # fmt: skip


def test_update_puts_the_status_in_the_synced_traits_and_tells_the_listeners(panel):
    heard: list[RunStatus] = []
    panel.add_listener(heard.append)
    st = running()
    panel.update(st)
    assert panel.app["state"] == "RUNNING" and panel.app["queue"] == "ml-gpu"
    assert [(t["task"], t["node"], t["gpu"]) for t in panel.tasks] == [
        ("chief:0", "gpu-node:8042", True), ("evaluator:0", "cpu-node:8042", False)]  # fmt: skip
    assert panel.metrics == [{"global_step": 100, "loss": 0.5, "accuracy": 0.9}]
    assert panel.summary is None
    assert heard == [st]


def test_cancel_kill_and_logs_messages_from_the_browser_reach_the_run(panel):
    from_front_end(panel, {"type": "cancel"})
    from_front_end(panel, {"type": "kill", "task": "worker:1"})
    from_front_end(panel, {"type": "logs", "task": "chief:0"})
    assert panel.run.calls == [("cancel", None), ("kill", "worker:1"), ("logs", "chief:0")]
    assert panel.sent == [{"type": "logs", "task": "chief:0", "source": "live",
                           "stdout": "step 1\n", "stderr": "",
                           "files": {"chief.log": "step 1\n"}}]  # fmt: skip
    assert panel.error == ""


def test_a_failing_or_unknown_action_is_reported_in_the_panel_not_raised(panel):
    from_front_end(panel, {"type": "kill", "task": "worker:9"})
    assert "no task worker:9" in panel.error
    from_front_end(panel, {"type": "explode"})
    assert "unknown action 'explode'" in panel.error
    assert [m["type"] for m in panel.sent] == ["error", "error"]


def test_progress_capacity_and_tensorboard_url_reach_the_front_end(panel):
    st = running()
    st.progress = {
        "chief:0": {"step": 120, "max_steps": 400, "steps_per_s": 12.5, "loss": 0.4,
                    "history": [[100, 0.5], [120, 0.4]], "rss_bytes": 900 << 20,
                    "memory_limit_bytes": 1 << 30},
    }  # fmt: skip
    panel.run.tensorboard_url = "http://rm:8088/proxy/application_1_0001/"
    panel.update(st)
    assert panel.progress["chief:0"]["step"] == 120
    assert "history" not in panel.progress["chief:0"]  # sent apart: see the test below
    assert panel.sent == [{"type": "history", "tasks": {
        "chief:0": {"from": 0, "points": [[100, 0.5], [120, 0.4]]}}}]  # fmt: skip
    assert panel.capacity is None
    assert panel.tensorboard_url == "http://rm:8088/proxy/application_1_0001/"
    synced = panel.get_state()
    assert {"progress", "capacity", "tensorboard_url"} <= set(synced)
    assert synced["progress"]["chief:0"]["rss_bytes"] == 900 << 20


def test_the_resourcemanager_unreachable_note_follows_the_run_into_a_synced_trait(panel):
    panel.update(running())
    assert panel.unreachable == ""
    panel.run.resourcemanager_unreachable = "ResourceManager unreachable since 06:50:12 (9 s)"
    panel.update(running())
    assert panel.get_state()["unreachable"].startswith("ResourceManager unreachable since")
    panel.run.resourcemanager_unreachable = ""
    panel.update(running())
    assert panel.unreachable == ""


def test_loss_histories_go_as_deltas_and_whole_to_a_view_that_asks(panel):
    def with_history(points):
        st = running()
        st.progress = {"chief:0": {"step": points[-1][0], "loss": points[-1][1],
                                   "history": points}}  # fmt: skip
        return st

    panel.update(with_history([[1, 0.9], [2, 0.8]]))
    panel.update(with_history([[1, 0.9], [2, 0.8]]))  # nothing new: no message
    panel.update(with_history([[1, 0.9], [2, 0.8], [3, 0.7]]))
    assert [m["tasks"]["chief:0"] for m in panel.sent] == [
        {"from": 0, "points": [[1, 0.9], [2, 0.8]]},
        {"from": 2, "points": [[3, 0.7]]},
    ]
    from_front_end(panel, {"type": "history-sync"})
    assert panel.sent[-1] == {"type": "history", "tasks": {
        "chief:0": {"from": 0, "points": [[1, 0.9], [2, 0.8], [3, 0.7]]}}}  # fmt: skip
    assert panel.error == ""


def test_the_status_own_capacity_and_tensorboard_url_win(panel, monkeypatch):
    st = running("ACCEPTED")
    d = st.to_dict()
    d["capacity"] = {"message": "queue ml-gpu: 8 GiB of 8 GiB in use; 2 GiB more needed"}
    d["tensorboard_url"] = "http://rm:8088/proxy/application_1_0001/tb/"
    monkeypatch.setattr(RunStatus, "to_dict", lambda self: d)
    panel.update(st)
    assert panel.capacity == {"message": "queue ml-gpu: 8 GiB of 8 GiB in use; 2 GiB more needed"}
    assert panel.tensorboard_url.endswith("/tb/")
    assert panel.progress == {}


def test_the_poller_goes_on_through_an_ended_attempt_while_another_is_coming():
    import threading

    from tfyarn_jupyter.panel.widget import PanelPoller

    ended = RunStatus(AppInfo("application_1_0001", state="FINISHED", final_status="FAILED",
                              start_time=1.0, finish_time=2.0), [], [], [], None)  # fmt: skip
    seen: list[RunStatus] = []
    steps = iter([ended, ended, ended, running(), ended])
    run_over = threading.Event()

    def step() -> RunStatus:
        st = next(steps)
        if len(seen) == 4:  # the retry's attempt ended too, and no retry is left
            run_over.set()
        return st

    poller = PanelPoller(step, seen.append, interval=0.01, done=run_over.is_set).start()
    poller._thread.join(timeout=5)
    assert not poller._thread.is_alive()
    assert len(seen) == 5, "it stopped at an attempt's end while the run was not over"
