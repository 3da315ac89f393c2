// The task rows, grouped by type (chief, worker, ps, evaluator, then others): state
// badge, node, gpu badge, container, start time, a ticking duration, the Logs and Kill
// buttons and the task's logs view; and the "waiting for containers" box above them.

import {
  LIVE_TASK_STATES,
  TERMINAL_TASK_STATES,
  asArray,
  asString,
  asTime,
  formatClock,
  formatDuration,
  groupTasks,
  taskType,
} from "./format.js";
import { section } from "./dom.js";

/**
 * The pending box: why containers are still missing; absent when nothing waits.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createPending({ h, read }) {
  const el = section(h, "pending");
  function update() {
    const items = asArray(read.get("pending")).map(asString).filter((s) => s);
    if (items.length === 0) {
      el.replaceChildren();
      return;
    }
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-pending", "data-testid": "pending" },
        h("h4", { text: "Waiting for containers" }),
        h("ul", null, ...items.map((s) => h("li", { text: s }))),
      ),
    );
  }
  return { el, update };
}

/**
 * @typedef {{
 *   logs: ReturnType<typeof import("./actions.js").createLogs>,
 *   kills: ReturnType<typeof import("./actions.js").createKills>,
 * }} RowActions
 * @typedef {{ el: HTMLElement, start: number }} LiveDuration a running task's duration cell
 */

/**
 * A task's duration: start to finish, or start to now (then added to `live`, to tick).
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} t
 * @param {string} state
 * @param {LiveDuration[]} live
 */
function durationCell(h, t, state, live) {
  const start = asTime(t.start_time);
  const finish = asTime(t.finish_time);
  const cell = h("span", { class: "tfy-mono tfy-task-duration", "data-testid": "task-duration" });
  if (start && finish) cell.textContent = formatDuration(finish - start);
  else if (start && !TERMINAL_TASK_STATES.has(state)) {
    cell.textContent = formatDuration(Date.now() - start);
    live.push({ el: cell, start });
  } else cell.textContent = "";
  return cell;
}

/**
 * One task's row, with its logs view when its logs were shown.
 * @param {import("./dom.js").Builder} h
 * @param {RowActions} actions
 * @param {Record<string, any>} t
 * @param {LiveDuration[]} live
 */
function taskRow(h, { logs, kills }, t, live) {
  const task = asString(t.task) || `${asString(t.type)}:${asString(t.index)}`;
  const state = asString(t.state).toLowerCase();
  kills.forget(task, state);
  const exitMessage = asString(t.exit_message).trim();
  return h(
    "div",
    { class: "tfy-task", "data-testid": "task-row", "data-task": task, "data-type": taskType(t), "data-state": state },
    h(
      "div",
      { class: "tfy-task-main" },
      h("span", { class: "tfy-task-name tfy-mono", "data-testid": "task-name", text: task }),
      h("span", { class: "tfy-badge", "data-testid": "task-state", "data-state": state, text: state || "unknown" }),
      h("span", { class: "tfy-task-node tfy-mono", "data-testid": "task-node", title: "node", text: asString(t.node) }),
      t.gpu === true ? h("span", { class: "tfy-gpu", "data-testid": "gpu-badge", title: "on a node labelled gpu", text: "gpu" }) : null,
      h("span", { class: "tfy-task-container tfy-mono tfy-muted", "data-testid": "task-container", title: "container", text: asString(t.container_id) }),
      h("span", { class: "tfy-task-start tfy-mono", "data-testid": "task-start", title: "started", text: formatClock(t.start_time) }),
      durationCell(h, t, state, live),
      h("span", { class: "tfy-task-actions" }, logs.button(task), LIVE_TASK_STATES.has(state) ? kills.button(task, state) : null),
    ),
    exitMessage ? h("div", { class: "tfy-exit", "data-testid": "exit-message", text: exitMessage }) : null,
    logs.view(task),
  );
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @param {RowActions} actions
 * @returns {{ el: HTMLElement, update(): void, tick(): void, showLogs(msg: Record<string, any>): void }}
 */
export function createTasks({ h, read }, actions) {
  const el = section(h, "tasks");
  /** Task rows of the last update, by task name. @type {Map<string, HTMLElement>} */
  const rows = new Map();
  /** Running duration cells to refresh each second. @type {LiveDuration[]} */
  let live = [];

  /** @param {Record<string, any>} t */
  function row(t) {
    const r = taskRow(h, actions, t, live);
    rows.set(asString(r.getAttribute("data-task")), r);
    return r;
  }

  function update() {
    live = [];
    rows.clear();
    const groups = groupTasks(read.get("tasks"));
    el.replaceChildren(
      ...groups.map((g) =>
        h(
          "div",
          { class: "tfy-group", "data-testid": "task-group", "data-type": g.type },
          h("h4", { text: `${g.type} (${g.tasks.length})` }),
          ...g.tasks.map(row),
        ),
      ),
    );
  }

  function tick() {
    const now = Date.now();
    for (const d of live) d.el.textContent = formatDuration(now - d.start);
  }

  /** @param {Record<string, any>} msg a `logs` reply */
  const showLogs = (msg) => actions.logs.show(msg, (task) => rows.get(task));

  return { el, update, tick, showLogs };
}
