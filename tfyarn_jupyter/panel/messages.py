"""The custom message kinds the panel's front end and the kernel exchange: defined once.

State travels in synced traits; one-off actions and replies travel as custom
messages ``{"type": KIND, ...}``. The front end's copy is ``js/src/messages.js``;
a unit test checks the two sides name the same kinds.
"""

from __future__ import annotations

from typing import Final

# -- from the view to the kernel ------------------------------------------------
#: Cancel the whole application (``{"type": "cancel"}``).
CANCEL: Final = "cancel"
#: Kill one task's container (``{"type": "kill", "task": "worker:1"}``).
KILL: Final = "kill"
#: Ask for one task's logs (``{"type": "logs", "task": ...}``); answered with ``LOGS``.
LOGS: Final = "logs"
#: A view starting: send every loss history whole.
HISTORY_SYNC: Final = "history-sync"

# -- from the kernel to the view ------------------------------------------------
#: The loss histories that changed (``{"type": "history", "tasks": {task: delta}}``).
HISTORY: Final = "history"
#: An action failed (``{"type": "error", "message": ...}``).
ERROR: Final = "error"

#: The kinds a view sends, and the kinds the kernel sends.
FROM_VIEW: Final = frozenset({CANCEL, KILL, LOGS, HISTORY_SYNC})
TO_VIEW: Final = frozenset({HISTORY, LOGS, ERROR})
