"""The sandbox's pytest plugin: ``pytest_plugins = ["tfyarn_sandbox.pytest_plugin"]``.

Fixtures: ``sandbox`` (the session's cluster, its env exported, see
:func:`tfyarn_sandbox.fixtures.session_sandbox`), ``skein_client`` (one skein
client and its Java driver for the session) and ``apps`` (submit through it, so a
test's leftover applications are killed after it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tfyarn_sandbox.fixtures import AppTracker, killing_leftovers, session_sandbox, skein_driver
from tfyarn_sandbox.sandbox import Sandbox


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """The session's sandbox cluster, ready, with its env exported."""
    with session_sandbox() as box:
        yield box


@pytest.fixture(scope="session")
def skein_client(sandbox: Sandbox) -> Iterator[Any]:
    """One skein client (and its Java driver) for the whole session."""
    with skein_driver(sandbox, "tests") as client:
        yield client


@pytest.fixture
def apps(skein_client: Any) -> Iterator[AppTracker]:
    """Submit through this (``apps.submit(spec)``) so leftovers get killed after the test."""
    with killing_leftovers(skein_client) as tracker:
        yield tracker
