"""Placeholder; replaced by the panel."""
from __future__ import annotations

import html

from .state import RunStatus


def status_html(st: RunStatus) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(t.task)}</td><td>{t.state}</td><td>{html.escape(t.node)}</td></tr>"
        for t in st.tasks
    )
    return f"<div><b>{html.escape(st.app.app_id)}</b> {st.app.state}<table>{rows}</table></div>"
