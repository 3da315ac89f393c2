"""A failure before the failed task reported anything: which task, and what the error says."""

from __future__ import annotations

from tfyarn_jupyter.core.spec import TaskSpec
from tfyarn_jupyter.core.state import AppInfo, ContainerInfo, Failure, derive
from tfyarn_jupyter.protocol import events
from tfyarn_jupyter.run.result import failure_of, unreported_failure, with_error_line

APP = "application_1_0002"
SPECS = {"chief": TaskSpec(1024, 1), "worker": TaskSpec(1024, 1, instances=2)}
SEE_LOGS = "Failure in service {}, see logs for more information."
LINE = "ModuleNotFoundError: No module named 'tf_yarn'"


def ended(service: str, **kv: dict) -> tuple:
    """A run skein's master failed naming ``service``; each task's containers seen running."""
    app = AppInfo(APP, state="FINISHED", final_status="FAILED", start_time=1.0, finish_time=9.0,
                  diagnostics=SEE_LOGS.format(service))  # fmt: skip
    containers = [
        ContainerInfo(t, "RUNNING", f"c_{t}", "n1:8042", 2.0)
        for t in ("chief:0", "worker:0", "worker:1")
    ]
    ev = events.parse(
        {events.task_key(t, k): events.encode(v) for (t, k), v in kv.get("events", {}).items()}
    )
    return derive(app, SPECS, containers, ev, {}), ev


def test_a_task_that_never_reported_is_the_one_whose_logs_say_why():
    st, ev = ended("chief")
    assert st.failure == Failure("chief:0", SEE_LOGS.format("chief"))
    assert unreported_failure(st, ev) == "chief:0"


def test_when_yarn_names_a_service_of_many_its_first_unreported_task_is_read():
    st, ev = ended("worker", events={("worker:0", "container"): {"host": "n1"}})
    assert st.failure is not None and st.failure.task == ""
    assert unreported_failure(st, ev) == "worker:1"


def test_a_task_that_reported_is_not_read_its_own_report_says_why():
    reported = {("chief:0", "container"): {"host": "n1"},
                ("chief:0", "stop"): {"traceback": "Traceback...\nKeyError: 'x'"}}  # fmt: skip
    st, ev = ended("chief", events=reported)
    assert unreported_failure(st, ev) is None
    # A run that did not fail, or has not ended, has nothing to read.
    ok = derive(AppInfo(APP, state="FINISHED", final_status="SUCCEEDED"), SPECS, [], ev, {})
    assert unreported_failure(ok, ev) is None
    running = derive(AppInfo(APP, state="RUNNING"), SPECS, [], ev, {})
    assert unreported_failure(running, ev) is None


def test_the_failure_quotes_the_error_line_instead_of_see_logs():
    st, _ = ended("chief")
    assert st.failure is not None
    quoted = with_error_line(st.failure, "chief:0", LINE)
    assert quoted.task == "chief:0"
    assert quoted.traceback == (
        f"chief:0 ended before reporting to tfyarn; the last error in its stderr:\n{LINE}"
    )
    st.failure = quoted
    message = str(failure_of(st, APP))
    assert message.startswith(f"{APP} ended FINISHED/FAILED in task chief:0:\n")
    assert message.endswith(LINE) and "see logs" not in message


def test_the_service_scripts_exit_report_is_kept_after_the_quoted_line():
    report = Failure("worker:1", "worker:1: its process exited with status 1")
    quoted = with_error_line(report, "worker:1", LINE)
    assert quoted.traceback.splitlines() == [
        "worker:1 ended before reporting to tfyarn; the last error in its stderr:",
        LINE,
        "worker:1: its process exited with status 1",
    ]


def test_the_result_lists_each_tasks_restarts_inside_the_application():
    from tfyarn_jupyter.run.result import make_result

    app = AppInfo(APP, state="FINISHED", final_status="SUCCEEDED", start_time=1.0, finish_time=9.0)
    lost = ContainerInfo("worker:1", "FAILED", "c_1", "n1:8042", 2.0, 4.0, "preempted", 1)
    containers = [lost, ContainerInfo("worker:1", "SUCCEEDED", "c_2", "n1:8042", 5.0, 8.0, "", 3)]
    record = {"cause": "preempted", "exit_status": -102, "step": 1200, "resumed_step": 1000}
    ev = events.parse({events.restart_key("worker:1", 1): events.encode(record)})
    res = make_result(derive(app, SPECS, containers, ev, {}), ev, [APP])
    assert res.task_restarts == {
        "worker:1": [{"n": 1, "cause": "preempted", "exit_status": -102, "step": 1200,
                      "resumed_step": 1000, "steps_lost": 200}]
    }  # fmt: skip
    assert res.restarts == []  # no new application was needed
    quiet = make_result(derive(app, SPECS, containers[1:], ev.__class__(), {}), ev, [APP])
    assert quiet.task_restarts == {}
