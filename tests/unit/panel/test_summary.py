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
