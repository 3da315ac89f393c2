"""The static summary of a run (tfyarn_jupyter.panel.summary): what a saved notebook keeps."""

from __future__ import annotations

from tfyarn_jupyter.panel.summary import status_html

from .test_widget import running


def test_static_summary_escapes_names_and_shows_the_final_state():
    html = status_html(running("FINISHED", "SUCCEEDED"))
    assert "&lt;b&gt;demo&lt;/b&gt;" in html and "<b>demo</b>" not in html
    assert "SUCCEEDED" in html
    assert "chief:0" in html and "gpu-node:8042" in html


def test_static_summary_shows_the_gpus_yarn_reserved_beside_the_node():
    from dataclasses import replace

    st = running("RUNNING", "UNDEFINED")
    st.tasks[0] = replace(st.tasks[0], gpus=2)
    html = status_html(st)
    assert "2 GPUs" in html and html.count("GPU") == 1


def test_static_summary_lists_the_restarts_and_a_restarted_tasks_attempt():
    from dataclasses import replace

    st = running("RUNNING", "UNDEFINED")
    log = [{"n": 1, "cause": "preempted", "exit_status": -102, "step": 1200,
            "resumed_step": 1000, "steps_lost": 200}]  # fmt: skip
    st.tasks[1] = replace(st.tasks[1], restarts=1, restart_cause="preempted", steps_lost=200,
                          restart_log=log)  # fmt: skip
    html = status_html(st)
    assert "attempt 2 (preempted, 200 steps lost)" in html and html.count("attempt ") == 1
    assert "restarts in the application (1)" in html
    row = "<tr><td>evaluator:0</td><td>1</td><td>preempted</td><td>-102</td><td>1200</td>"
    assert row + "<td>1000</td><td>200</td></tr>" in html


def test_static_summary_of_a_run_without_restarts_says_nothing_of_them():
    html = status_html(running("RUNNING", "UNDEFINED"))
    assert "attempt" not in html and "restarts" not in html
