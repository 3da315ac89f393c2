// The custom message kinds the panel and the kernel exchange: defined once on this side.
// Python's copy is tfyarn_jupyter/panel/messages.py; a unit test checks they agree.

/** Sent by the view to the kernel. */
export const FROM_VIEW = Object.freeze({
  cancel: "cancel",
  kill: "kill",
  logs: "logs",
  historySync: "history-sync",
});

/** Sent by the kernel to the view. */
export const TO_VIEW = Object.freeze({
  history: "history",
  logs: "logs",
  error: "error",
});
