"""Parsing what YARN returns for a container's logs (pure, no cluster)."""

from tfyarn_jupyter.run.logs import (
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
