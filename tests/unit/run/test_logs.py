"""Parsing what YARN returns for a container's logs (pure, no cluster)."""

import pytest

from tfyarn_jupyter.core.state import ContainerInfo
from tfyarn_jupyter.run import logs
from tfyarn_jupyter.run.logs import (
    last_error_line,
    live_log_names,
    node_access,
    parse_yarn_logs,
    remote_message,
    split_streams,
)

#: What ``yarn logs`` prints before each file of a container.
CONTAINER = """\
Container: container_1_0001_01_000002 on localhost_41471
LogAggregationType: AGGREGATED
====================================================================
"""
# Three files of one container, as ``yarn logs -containerId`` prints them.
YARN_LOGS = (
    CONTAINER
    + """\
LogType:directory.info
LogLastModifiedTime:Wed Dec 02 14:10:05 +0000 2026
LogLength:10
LogContents:
ls -l:

End of LogType:directory.info
*******************************************************************************

"""
    + CONTAINER
    + """\
LogType:worker.log
LogLastModifiedTime:Wed Dec 02 14:10:05 +0000 2026
LogLength:24
LogContents:
step 1
LogType: not a header
step 2

End of LogType:worker.log
***************************************************************************

"""
    + CONTAINER
    + """\
LogType:stderr
LogLastModifiedTime:Wed Dec 02 14:10:05 +0000 2026
LogLength:0
LogContents:

End of LogType:stderr
"""
)


def test_yarn_logs_output_is_split_per_file_without_the_nodemanagers_debug_files():
    files = parse_yarn_logs(YARN_LOGS)
    assert files == {"worker.log": "step 1\nLogType: not a header\nstep 2\n", "stderr": ""}


def test_running_container_frame_from_the_nodemanager_is_unwrapped():
    text = (
        "LogType:chief.log\nLogLastModifiedTime:x\nLogLength:10\nLogContents:\nhello\n"
        "End of LogType:chief.log.This log file belongs to a running container (c) and so "
        "may not be complete.\n****\n\n"
    )
    assert parse_yarn_logs(text) == {"chief.log": "hello"}


def test_nodemanager_listing_gives_file_names_for_one_or_many_log_dirs():
    one = {"containerLogsInfo": {"containerLogInfo": [{"fileName": "chief.log"},
                                                      {"fileName": "stderr"}]}}  # fmt: skip
    many = [{"containerLogInfo": {"fileName": "a.log"}},
            {"containerLogInfo": [{"fileName": "a.log"}, {"fileName": "stderr"}]}]  # fmt: skip
    assert live_log_names(one) == ["chief.log", "stderr"]
    assert live_log_names(many) == ["a.log", "stderr"]
    assert live_log_names({"unexpected": 1}) == []


def test_service_log_is_stdout_and_the_stderr_file_is_stderr():
    out = split_streams({"worker.log": "o", "stderr": "e", "prelaunch.err": ""}, "live", "worker")
    assert (out.stdout, out.stderr, out.source) == ("o", "e", "live")
    assert sorted(out.files) == ["prelaunch.err", "stderr", "worker.log"]
    assert split_streams({}, "aggregated", "ps").stdout == ""


# -- how to call a NodeManager -----------------------------------------------------------------
SECURE = {"hadoop.security.authentication": "kerberos"}


def test_a_simple_cluster_gets_the_owner_in_user_name_over_http():
    access = node_access({}, {}, "alice")
    assert (access.scheme, dict(access.params), access.spnego) == ("http", {"user.name": "alice"},
                                                                   False)  # fmt: skip


def test_a_kerberized_cluster_gets_spnego_and_no_user_name():
    access = node_access(SECURE, {"yarn.http.policy": "HTTP_ONLY"}, "alice")
    assert (access.scheme, dict(access.params), access.spnego) == ("http", {}, True)


def test_https_only_switches_the_scheme():
    access = node_access(SECURE, {"yarn.http.policy": "https_only"}, "alice")
    assert (access.scheme, access.spnego) == ("https", True)
    assert node_access({}, {"yarn.http.policy": "HTTP_AND_HTTPS"}, "bob").scheme == "http"


def test_a_web_service_error_says_its_remote_message():
    body = (
        '{"RemoteException":{"exception":"WebApplicationException","message":"User [mallory] '
        'is not authorized to view the logs for application application_1_0021"}}'
    )
    assert remote_message(body) == (
        "User [mallory] is not authorized to view the logs for application application_1_0021"
    )
    assert remote_message("<html>Bad gateway</html>\n") == "<html>Bad gateway</html>"
    assert remote_message("") == "(no message)"


# -- a failed task's last error line --------------------------------------------------------------
#: The stderr of a container whose task module cannot import tf_yarn, as the sandbox wrote it
#: (a custom module importing tf-yarn's helpers), with log lines after the traceback.
TRACEBACK_STDERR = """\
2026-12-08 10:01:02,003 INFO starting the task
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/grid/container/my_tasks/gloo.py", line 3, in <module>
    from tf_yarn import event
ModuleNotFoundError: No module named 'tf_yarn'
2026-12-08 10:01:02,410 INFO shutting down
"""
#: What ``python -m`` itself prints when the module is not there (no traceback).
RUNPY_STDERR = (
    "/grid/nm/usercache/me/appcache/application_1_0001/container_1_0001_01_000002/env/bin/"
    "python: Error while finding module specification for "
    "'tf_yarn.tensorflow.tasks.gloo_allred_task' (ModuleNotFoundError: No module named "
    "'tf_yarn')\n"
)


def test_the_last_error_line_of_a_traceback_is_its_exception_line():
    assert last_error_line(TRACEBACK_STDERR) == "ModuleNotFoundError: No module named 'tf_yarn'"


def test_the_last_error_line_of_python_m_not_finding_the_module_is_its_message():
    assert last_error_line(RUNPY_STDERR) == RUNPY_STDERR.strip()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("ValueError: first\nwarming up\nKeyError: 'second'\n", "KeyError: 'second'"),
        (
            "tensorflow.python.framework.errors_impl.NotFoundError: /data: no such file\n",
            "tensorflow.python.framework.errors_impl.NotFoundError: /data: no such file",
        ),
        ("tfyarn: pre_script_hook failed (1)\n", "tfyarn: pre_script_hook failed (1)"),
        ("    raise ValueError(x)\nKeyboardInterrupt\n", "KeyboardInterrupt"),
        ("UserWarning: deprecated\nall good\n", None),  # a warning is not the error
        ("ERROR loud log line\nTraceback (most recent call last):\n", None),
        ("", None),
    ],
)
def test_the_last_error_line_is_the_last_line_saying_what_went_wrong(text, line):
    assert last_error_line(text) == line


def test_a_long_error_line_is_quoted_by_its_end():
    long = "RuntimeError: " + "x" * 1000 + " the end"
    quoted = last_error_line(long, limit=50)
    assert quoted is not None and len(quoted) == 50
    assert quoted.startswith("...") and quoted.endswith("x the end")


FAILED = ContainerInfo("worker:1", "FAILED", "container_1_0001_01_000003", "n1:8042")


def test_a_failed_tasks_error_line_comes_from_its_node_while_the_node_has_its_logs(monkeypatch):
    asked: list[tuple[str, float]] = []

    def live(c, user, tail, timeout=10.0):
        asked.append(("live", timeout))
        return {"worker.log": "started\n", "stderr": TRACEBACK_STDERR}

    def aggregated(*args, **kwargs):
        raise AssertionError("asked YARN's aggregated logs though the node answered")

    monkeypatch.setattr(logs, "live", live)
    monkeypatch.setattr(logs, "aggregated", aggregated)
    line = logs.error_line_of("application_1_0001", FAILED, "me")
    assert line == "ModuleNotFoundError: No module named 'tf_yarn'"
    assert asked == [("live", logs.ERROR_LOG_LIVE_S)]


def test_a_failed_tasks_error_line_comes_from_yarn_once_its_node_let_the_logs_go(monkeypatch):
    waits: list[tuple[float, float]] = []

    def live(c, user, tail, timeout=10.0):
        raise logs.requests.HTTPError("n1:8042 answered 503: HTTP 404 Not Found")

    def aggregated(app_id, c, user, tail, wait_s=60.0, call_timeout_s=120.0):
        waits.append((wait_s, call_timeout_s))
        return {"worker.log": "", "stderr": RUNPY_STDERR}

    monkeypatch.setattr(logs, "live", live)
    monkeypatch.setattr(logs, "aggregated", aggregated)
    assert logs.error_line_of("application_1_0001", FAILED, "me", timeout_s=7.0) == (
        RUNPY_STDERR.strip()
    )
    assert waits == [(7.0, 7.0)]  # bounded, not the 60 s a user's logs() call waits


def test_unreadable_logs_give_no_error_line_and_no_exception(monkeypatch):
    def fails(*args, **kwargs):
        raise RuntimeError("no logs of container_1_0001_01_000003 yet")

    monkeypatch.setattr(logs, "live", fails)
    monkeypatch.setattr(logs, "aggregated", fails)
    assert logs.error_line_of("application_1_0001", FAILED, "me") is None
    monkeypatch.setattr(logs, "aggregated", lambda *a, **k: {"stderr": "all quiet\n"})
    assert logs.error_line_of("application_1_0001", FAILED, "me") is None
