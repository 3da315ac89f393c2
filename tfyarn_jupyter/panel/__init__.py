"""The live panel under a cell, and the static summary that stays in a saved notebook.

``widget``: the anywidget (``RunPanel``) and its poller; ``summary``: the static
HTML of a run's status; ``messages``: the custom message kinds the front end and the
kernel exchange; ``deltas``: the loss histories sent as what changed; ``static/``:
the bundled front end (built from ``js/``).
"""
