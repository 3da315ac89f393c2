"""Small helpers the sandbox tests share."""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tfyarn_sandbox.sandbox import Sandbox


def unique(prefix: str) -> str:
    """An application or folder name no other test (or earlier run) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def as_user(box: Sandbox, user: str | None, **extra: str) -> dict[str, str]:
    """A full process environment acting as ``user`` on ``box`` (on a Kerberized one: a
    fresh ticket, and no simple identity such as ``HADOOP_USER_NAME``)."""
    env = {**os.environ, **box.env(user), **extra}
    for name in box.unset_vars(user):
        env.pop(name, None)
    return env
