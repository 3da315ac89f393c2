"""The test suite's root: the sandbox's pytest plugin and the ``sandbox`` marker.

The fixtures ``sandbox``, ``skein_client`` and ``apps`` come from the sandbox's
own distribution (``tfyarn_sandbox.pytest_plugin``). Everything under
``tests/integration`` is marked ``sandbox``, so ``pytest -m "not sandbox"`` runs
the pure tests on a machine without Java.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tfyarn_sandbox.fixtures import FINAL_STATES, AppTracker, exported, killing_leftovers

pytest_plugins = ["tfyarn_sandbox.pytest_plugin"]

__all__ = ["FINAL_STATES", "AppTracker", "exported", "killing_leftovers"]

_INTEGRATION = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEGRATION in Path(item.path).parents:
            item.add_marker(pytest.mark.sandbox)
