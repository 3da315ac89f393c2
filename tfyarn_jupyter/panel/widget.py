"""The live panel under a ``%%tfyarn`` cell: synced state, one-off actions as messages.

State lives in synced traits (``app``, ``tasks``, ``pending``, ``capacity``,
``progress``, ``metrics``, ``failure``, ``summary``, ``tensorboard_url``, ``unreachable``,
``error``)
that the panel's :class:`PanelPoller`
refreshes by driving the run (:meth:`~.run.Run.advance`) about once a second;
the front end (``js/src/``, bundled into ``static/``) sends ``cancel``,
``kill`` and ``logs`` as custom messages. The loss histories travel apart from
``progress``, as ``history`` messages that carry only what changed since the
last one (:func:`.history.delta`); a view that starts asks for them whole
(``history-sync``). So an update costs the new points, not every point again.
Where no widget front end exists, :func:`.summary.status_html` renders the same state as
static HTML, which is also what stays in a saved notebook.
"""

from __future__ import annotations

import html
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets

from tfyarn_jupyter.core.state import RunStatus
from tfyarn_jupyter.panel import messages
from tfyarn_jupyter.panel.deltas import delta, split_histories
from tfyarn_jupyter.panel.summary import status_html

if TYPE_CHECKING:
    from tfyarn_jupyter.run.launch import Run

_BUNDLE = Path(__file__).with_name("static") / "widget.js"
_STYLES = _BUNDLE.with_suffix(".css")


def _bundle() -> str | Path:
    if _BUNDLE.exists():
        return _BUNDLE
    # An install without the built front end still shows the static summary.
    return "export default { render({ el }) { el.textContent = 'tfyarn: front end not built'; } }"


class RunPanel(anywidget.AnyWidget):
    """Watches one :class:`~tfyarn_jupyter.run.launch.Run` and steers it from the browser."""

    _esm = _bundle()
    _css = _STYLES if _STYLES.exists() else ""
    app = traitlets.Dict().tag(sync=True)
    tasks: traitlets.List = traitlets.List().tag(sync=True)
    pending: traitlets.List = traitlets.List().tag(sync=True)
    #: Why the run waits for the cluster (``{"message": ...}``), None when it does not.
    capacity = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    #: Each task's latest report: step, rate, memory, CPU, GPU (the loss history apart).
    progress = traitlets.Dict().tag(sync=True)
    metrics: traitlets.List = traitlets.List().tag(sync=True)
    failure = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    summary = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    #: TensorBoard through the ResourceManager's proxy, "" when the run has none.
    tensorboard_url = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    #: While the ResourceManager does not answer: since when, and what the panel still shows.
    unreachable = traitlets.Unicode("").tag(sync=True)

    def __init__(self, run: Run, *, interval: float = 1.0, start: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.run = run
        self._lock = threading.Lock()
        self._listeners: list[Callable[[RunStatus], None]] = []
        #: The loss histories as last sent to the front end.
        self._histories: dict[str, list[list[float]]] = {}
        # Not `_handle_msg`: that name is ipywidgets.Widget's own comm handler.
        self.on_msg(self._on_action)
        self.poller = PanelPoller(
            run.advance, self.update, interval=interval, done=lambda: run.ended
        )
        if start:
            self.poller.start()

    def add_listener(self, fn: Callable[[RunStatus], None]) -> None:
        """Call ``fn(status)`` after each update (the magic refreshes its HTML summary)."""
        self._listeners.append(fn)

    def update(self, st: RunStatus) -> None:
        d = st.to_dict()
        figures, histories = split_histories(d.get("progress") or {})
        with self._lock:
            with self.hold_sync():
                self.app = d["app"]
                self.tasks = d["tasks"]
                self.pending = d["pending"]
                self.set_trait("capacity", d.get("capacity") or None)
                self.progress = figures
                self.metrics = d["metrics"]
                self.failure = d["failure"]
                self.summary = d["summary"]
                self.unreachable = getattr(self.run, "resourcemanager_unreachable", "")
                self.tensorboard_url = (
                    d.get("tensorboard_url") or getattr(self.run, "tensorboard_url", None) or ""
                )
            change = delta(self._histories, histories)
            self._histories = histories
            if change:  # after the figures, so the chart redraws with both
                self.send({"type": messages.HISTORY, "tasks": change})
        for fn in self._listeners:
            fn(st)

    def _on_action(self, _widget: Any, content: dict, _buffers: Any) -> None:
        kind = content.get("type")
        try:
            if kind == messages.CANCEL:
                self.run.cancel()
            elif kind == messages.KILL:
                self.run.kill_task(str(content["task"]))
            elif kind == messages.HISTORY_SYNC:  # a view starting: every series whole
                with self._lock:
                    whole = {t: {"from": 0, "points": pts} for t, pts in self._histories.items()}
                self.send({"type": messages.HISTORY, "tasks": whole})
            elif kind == messages.LOGS:
                task = str(content["task"])
                logs = self.run.logs(task)
                self.send({"type": messages.LOGS, "task": task, **logs.to_dict()})
            else:
                raise ValueError(f"unknown action {kind!r}")
            self.error = ""
        except Exception as exc:  # report in the panel, never kill the comm
            message = f"{kind} failed: {type(exc).__name__}: {exc}"
            self.error = message
            self.send({"type": messages.ERROR, "message": message})

    def close(self) -> None:
        self.poller.stop()
        super().close()

    def _repr_mimebundle_(self, **kwargs: Any):
        """The widget's view and, in the same bundle, the static summary of the run's last
        state: a widget front end shows the panel, a saved or exported notebook the summary."""
        bundle = super()._repr_mimebundle_(**kwargs)  # anywidget: (data, metadata)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):
            st = self.run.last_status
            data["text/plain"] = f"tfyarn run {self.run.app_id}"
            data["text/html"] = status_html(st) if st is not None else (
                f"<div>tfyarn run <code>{html.escape(self.run.app_id)}</code> submitted</div>"
            )  # fmt: skip
        return bundle


class PanelPoller:
    """Drives a run on a background thread and hands each status to ``callback``.

    About once a second while the run goes; it stops when the run ended or
    when it is stopped (or garbage-collected). An attempt that ended is not the run's end
    while ``done()`` says another attempt is coming (a retry waiting its backoff).
    """

    def __init__(
        self,
        step: Callable[[], RunStatus],
        callback: Callable[[RunStatus], None],
        interval: float = 1.0,
        done: Callable[[], bool] = lambda: True,
    ) -> None:
        self._step = step
        self._done = done
        self._callback = callback
        self.interval = interval
        self.polls = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tfyarn-poller", daemon=True)
        self._finalizer = weakref.finalize(self, self._stop.set)

    def start(self) -> PanelPoller:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                st = self._step()
                self.polls += 1
                self._callback(st)
            except Exception as exc:  # keep watching through a transient error
                self.errors.append(f"{type(exc).__name__}: {exc}")
                st = None
            if st is not None and st.ended and self._done():
                return
            self._stop.wait(self.interval)
