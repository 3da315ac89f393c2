"""Small helpers the sandbox tests share."""

from __future__ import annotations

import uuid


def unique(prefix: str) -> str:
    """An application or folder name no other test (or earlier run) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
