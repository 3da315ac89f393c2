"""The panel's message kinds: defined once per side, and both sides name the same kinds."""

from __future__ import annotations

import re
from pathlib import Path

from tfyarn_jupyter.panel import messages

JS_MESSAGES = Path(__file__).resolve().parents[3] / "js" / "src" / "messages.js"


def js_kinds(block: str) -> set[str]:
    """The string values of ``export const BLOCK = Object.freeze({...})`` in messages.js."""
    text = JS_MESSAGES.read_text()
    body = re.search(rf"export const {block} = Object\.freeze\(\{{(.*?)\}}\)", text, re.S)
    assert body, f"no {block} in {JS_MESSAGES}"
    return set(re.findall(r':\s*"([^"]+)"', body.group(1)))


def test_the_view_sends_exactly_the_kinds_the_kernel_handles():
    assert js_kinds("FROM_VIEW") == set(messages.FROM_VIEW) == {
        "cancel", "kill", "logs", "history-sync",
    }  # fmt: skip


def test_the_kernel_sends_exactly_the_kinds_the_view_handles():
    assert js_kinds("TO_VIEW") == set(messages.TO_VIEW) == {"history", "logs", "error"}


def test_no_module_of_the_front_end_spells_a_kind_as_a_bare_string():
    kinds = messages.FROM_VIEW | messages.TO_VIEW
    for module in JS_MESSAGES.parent.glob("*.js"):
        if module == JS_MESSAGES:
            continue
        text = module.read_text()
        bare = re.findall(r'type:\s*"([^"]+)"|\.type === "([^"]+)"', text)
        assert not {k for pair in bare for k in pair if k in kinds}, module.name


def test_no_module_of_the_panel_spells_a_kind_as_a_bare_string():
    source = (Path(messages.__file__).parent / "widget.py").read_text()
    for kind in messages.FROM_VIEW | messages.TO_VIEW:
        assert f'"type": "{kind}"' not in source and f'kind == "{kind}"' not in source
