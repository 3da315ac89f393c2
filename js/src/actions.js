// What the panel lets a user do: fetch a task's logs (the Logs button and the logs view
// under its row), kill a task's container, and cancel the application (with a
// confirmation). Each remembers what it sent until the reply or the next state arrives.

import { asString } from "./format.js";
import { section } from "./dom.js";
import { keptSet } from "./model.js";
import { FROM_VIEW } from "./messages.js";

/**
 * @typedef {{ details: HTMLDetailsElement, label: HTMLElement, pre: HTMLElement }} LogsView
 */

/**
 * The text of a `logs` reply: stdout and stderr, headed when there are both.
 * @param {Record<string, any>} msg
 */
function logsText(msg) {
  const stdout = asString(msg.stdout);
  const stderr = asString(msg.stderr);
  if (stdout && stderr) return `----- stdout -----\n${stdout}${stdout.endsWith("\n") ? "" : "\n"}----- stderr -----\n${stderr}`;
  return stdout || stderr || "(no output yet)";
}

/**
 * An empty, open logs view for `task`.
 * @param {import("./dom.js").Builder} h
 * @param {string} task
 * @returns {LogsView}
 */
function newView(h, task) {
  const label = h("summary", { "data-testid": "logs-label" });
  const pre = h("pre", { class: "tfy-mono", "data-testid": "logs-text" });
  const details = /** @type {HTMLDetailsElement} */ (
    h("details", { class: "tfy-logs", "data-testid": "logs-view", "data-task": task, open: true }, label, pre)
  );
  return { details, label, pre };
}

/**
 * Logs buttons and views. A view, once a reply came, is kept by task name and the same
 * `<details>` node is re-attached when the task's row is rebuilt, or when the panel is
 * rendered again for the same model (the notebook re-displaying the cell's output).
 * @param {import("./model.js").Ctx} ctx
 */
export function createLogs({ h, send, keep }) {
  if (!keep.has("logs-views")) keep.set("logs-views", new Map());
  /** @type {Map<string, LogsView>} */
  const views = keep.get("logs-views");
  /** Tasks whose logs were asked for and whose reply has not come yet. */
  const pending = keptSet(keep, "logs-pending");

  /** @param {string} task */
  function button(task) {
    const btn = h("button", {
      type: "button",
      "data-testid": "logs-button",
      title: `Fetch the logs of ${task}`,
      text: pending.has(task) ? "Logs…" : "Logs",
      onclick: () => {
        pending.add(task);
        btn.textContent = "Logs…";
        send({ type: FROM_VIEW.logs, task });
      },
    });
    return btn;
  }

  /**
   * Shows a `logs` reply in its task's view, under the task's row when it has one.
   * @param {Record<string, any>} msg
   * @param {(task: string) => HTMLElement | undefined} rowOf
   */
  function show(msg, rowOf) {
    const task = asString(msg.task);
    if (!task) return;
    pending.delete(task);
    const view = views.get(task) || newView(h, task);
    views.set(task, view);
    view.pre.textContent = logsText(msg);
    const source = asString(msg.source);
    view.label.textContent = `Logs of ${task}${source ? ` (${source})` : ""}`;
    view.details.setAttribute("data-source", source);
    view.details.open = true;
    const row = rowOf(task);
    if (row) {
      if (view.details.parentNode !== row) row.appendChild(view.details);
      const btn = row.querySelector('[data-testid="logs-button"]');
      if (btn) btn.textContent = "Logs";
    }
  }

  return {
    button,
    show,
    /** @param {string} task */
    view: (task) => views.get(task)?.details,
    clear: () => pending.clear(),
  };
}

/**
 * Kill buttons: shown while a task's container is wanted or alive; disabled from the
 * click until the task's state changes.
 * @param {import("./model.js").Ctx} ctx
 */
export function createKills({ h, send }) {
  /** Tasks a kill was sent for, with their state then. @type {Map<string, string>} */
  const sent = new Map();

  /** @param {string} task @param {string} state */
  function button(task, state) {
    const btn = h("button", {
      type: "button",
      class: "tfy-danger",
      "data-testid": "kill",
      title: `Kill the container of ${task}`,
      text: sent.has(task) ? "Killing…" : "Kill",
      disabled: sent.has(task),
      onclick: () => {
        sent.set(task, state);
        btn.textContent = "Killing…";
        btn.setAttribute("disabled", "");
        send({ type: FROM_VIEW.kill, task });
      },
    });
    return btn;
  }

  /** Forgets a sent kill once the task's state moved on. @param {string} task @param {string} state */
  const forget = (task, state) => {
    if (sent.has(task) && sent.get(task) !== state) sent.delete(task);
  };

  return { button, forget, clear: () => sent.clear() };
}

/**
 * The Cancel button and its confirmation; absent once the application ended.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createCancel({ h, read, send }) {
  const el = section(h, "actions");
  let confirming = false;
  let cancelSent = false;

  const button = (/** @type {Record<string, any>} */ attrs, /** @type {() => void} */ onclick) =>
    h("button", {
      type: "button",
      ...attrs,
      onclick: () => {
        onclick();
        update();
      },
    });

  function confirmation() {
    const appId = asString(read.app().app_id);
    const yes = button({ class: "tfy-danger", "data-testid": "confirm-cancel", text: "Yes, cancel" }, () => {
      confirming = false;
      cancelSent = true;
      send({ type: FROM_VIEW.cancel });
    });
    const no = button({ "data-testid": "dismiss-cancel", text: "No" }, () => {
      confirming = false;
    });
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-actions", "data-testid": "cancel-confirmation", role: "alertdialog" },
        h("span", { text: `Cancel ${appId || "the application"}? Checkpoints already written are kept.` }),
        yes,
        no,
      ),
    );
    if (typeof yes.focus === "function") yes.focus();
  }

  function update() {
    if (read.ended()) {
      confirming = false;
      el.replaceChildren();
    } else if (confirming) confirmation();
    else {
      const cancel = button({ "data-testid": "cancel", text: "Cancel application" }, () => {
        confirming = true;
      });
      el.replaceChildren(
        h(
          "div",
          { class: "tfy-actions" },
          cancel,
          cancelSent ? h("span", { class: "tfy-muted", "data-testid": "cancel-sent", text: "Cancel requested…" }) : null,
        ),
      );
    }
  }

  return { el, update };
}
