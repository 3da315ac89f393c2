"""The container side's one logger: timestamped lines on the container's stderr.

YARN keeps each container's stderr as its log; the client quotes these lines when
a task fails. ``log(msg, part)`` prefixes the part of the task that speaks
(``tensorboard``, ``modeldir``), so one grep finds a part's lines in any task.
"""

from __future__ import annotations

import sys
import time


def log(msg: str, part: str = "") -> None:
    """One line on stderr, flushed: ``tfyarn[HH:MM:SS]: [part: ]msg``."""
    prefix = f"{part}: " if part else ""
    print(f"tfyarn[{time.strftime('%H:%M:%S')}]: {prefix}{msg}", file=sys.stderr, flush=True)
