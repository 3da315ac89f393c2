// The task rows, grouped by type (chief, worker, ps, evaluator, then others): state
// badge, node, gpu badge, container, start time, a ticking duration, the Logs and Kill
// buttons and the task's logs view; and, above them, the box that says why the run waits
// (the cluster's capacity, containers not yet allocated). A row is rebuilt only when its
// task changed; a task restarted inside the application says its attempt, why and the
// steps lost beside its state; from GROUP_FROM tasks on, each type is one expandable line with its
// counts per state, whose rows are built only while it is open.

import {
  LIVE_TASK_STATES,
  TERMINAL_TASK_STATES,
  asArray,
  asCount,
  asObject,
  asString,
  asTime,
  formatClock,
  formatDuration,
  formatSteps,
  groupTasks,
  restartText,
  stateCounts,
  taskType,
} from "./format.js";
import { section } from "./dom.js";
import { keptSet } from "./model.js";

/** From this many tasks on, each type is one expandable line. */
export const GROUP_FROM = 48;

/**
 * The waiting box: the capacity message (why the run cannot start yet), and which
 * containers are still missing; absent when nothing waits.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createPending({ h, read }) {
  const el = section(h, "pending");
  function update() {
    const items = asArray(read.get("pending")).map(asString).filter((s) => s);
    const capacity = asString(asObject(read.get("capacity")).message).trim();
    el.replaceChildren(
      ...(capacity
        ? [h("div", { class: "tfy-box tfy-capacity", "data-testid": "capacity", role: "status" }, h("h4", { text: "Waiting for cluster capacity" }), h("div", { text: capacity }))]
        : []),
      ...(items.length
        ? [h("div", { class: "tfy-box tfy-pending", "data-testid": "pending" }, h("h4", { text: "Waiting for containers" }), h("ul", null, ...items.map((s) => h("li", { text: s }))))]
        : []),
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
  // From the container's allocation, as RunStatus counts `duration_s`.
  const start = asTime(t.allocated_time) || asTime(t.running_time) || asTime(t.start_time);
  const finish = asTime(t.end_time) || asTime(t.finish_time);
  const reported = Number(t.duration_s);
  const cell = h("span", { class: "tfy-mono tfy-task-duration", "data-testid": "task-duration" });
  if (TERMINAL_TASK_STATES.has(state) && reported > 0) cell.textContent = formatDuration(reported * 1000);
  else if (start && finish) cell.textContent = formatDuration(finish - start);
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
      restartInfo(h, t),
      h("span", { class: "tfy-task-node tfy-mono", "data-testid": "task-node", title: "node", text: asString(t.node) }),
      t.gpu === true ? h("span", { class: "tfy-gpu", "data-testid": "gpu-badge", title: "on a node labelled gpu", text: "gpu" }) : null,
      gpuCount(h, t),
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
 * A group's line in grouped mode: type, count and counts per state; open shows its rows.
 * @param {import("./dom.js").Builder} h
 * @param {{ type: string, tasks: Record<string, any>[] }} g
 * @param {boolean} isOpen
 */
function groupLine(h, g, isOpen) {
  return h(
    "details",
    { class: "tfy-group", "data-testid": "task-group", "data-type": g.type, "data-grouped": true, open: isOpen },
    h(
      "summary",
      null,
      h("span", { class: "tfy-group-name", text: `${g.type} (${g.tasks.length})` }),
      ...stateCounts(g.tasks).map(([st, n]) => h("span", { class: "tfy-badge", "data-testid": "group-count", "data-state": st, text: `${n} ${st}` })),
      restartedCount(h, g.tasks),
    ),
  );
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @param {RowActions} actions
 */
export function createTasks({ h, read, keep }, actions) {
  const el = section(h, "tasks");
  /** Rows of the tasks shown, by task name, with what they were built from. @type {Map<string, { sig: string, el: HTMLElement }>} */
  const rows = new Map();
  /** Running duration cells to refresh each second, by task. @type {Map<string, LiveDuration[]>} */
  const live = new Map();
  /** Types opened in grouped mode. */
  const open = keptSet(keep, "tasks-open");

  /** The task's row, rebuilt only when its task changed. @param {Record<string, any>} t */
  function row(t) {
    const name = asString(t.task) || `${asString(t.type)}:${asString(t.index)}`;
    const sig = JSON.stringify(t);
    const kept = rows.get(name);
    const running = !TERMINAL_TASK_STATES.has(asString(t.state).toLowerCase());
    if (kept && kept.sig === sig && !(running && !live.has(name) && asTime(t.start_time))) return kept.el;
    /** @type {LiveDuration[]} */
    const cells = [];
    const r = taskRow(h, actions, t, cells);
    if (cells.length) live.set(name, cells);
    else live.delete(name);
    rows.set(name, { sig, el: r });
    return r;
  }

  /** @param {{ type: string, tasks: Record<string, any>[] }[]} groups */
  function grouped(groups) {
    return groups.map((g) => {
      const d = groupLine(h, g, open.has(g.type));
      if (open.has(g.type)) d.append(...g.tasks.map(row));
      d.addEventListener("toggle", () => {
        const isOpen = /** @type {HTMLDetailsElement} */ (d).open;
        if (isOpen === open.has(g.type)) return;
        if (isOpen) open.add(g.type);
        else open.delete(g.type);
        update();
      });
      return d;
    });
  }

  function update() {
    const groups = groupTasks(read.get("tasks"));
    const names = new Set(groups.flatMap((g) => g.tasks.map((t) => asString(t.task))));
    for (const name of [...rows.keys()]) if (!names.has(name)) (rows.delete(name), live.delete(name));
    const isGrouped = names.size >= GROUP_FROM;
    if (isGrouped) {
      for (const g of groups) if (!open.has(g.type)) for (const t of g.tasks) live.delete(asString(t.task));
      el.replaceChildren(...grouped(groups));
    } else {
      // Unchanged rows are moved, not rebuilt: they keep their node and their logs view.
      el.replaceChildren(
        ...groups.map((g) => h("div", { class: "tfy-group", "data-testid": "task-group", "data-type": g.type }, h("h4", { text: `${g.type} (${g.tasks.length})` }), ...g.tasks.map(row))),
      );
    }
  }

  /** Rebuilds every row (after an error reset what the buttons had sent). */
  function refresh() {
    rows.clear();
    live.clear();
    update();
  }

  function tick() {
    const now = Date.now();
    for (const cells of live.values()) for (const d of cells) d.el.textContent = formatDuration(now - d.start);
  }

  /** @param {Record<string, any>} msg a `logs` reply */
  const showLogs = (msg) => actions.logs.show(msg, (task) => rows.get(task)?.el);

  return { el, update, refresh, tick, showLogs };
}

/**
 * The GPUs YARN reserved for the task (`yarn.io/gpu`), beside its node; nothing when none.
 * @param {Function} h
 * @param {Record<string, any>} t
 */
function gpuCount(h, t) {
  const n = Number(t.gpus) || 0;
  if (n <= 0) return null;
  const text = n === 1 ? "1 GPU" : `${n} GPUs`;
  return h("span", { class: "tfy-gpu-count", "data-testid": "gpu-count", title: "yarn.io/gpu reserved by YARN", text });
}

/**
 * A task restarted inside the application: its attempt ("attempt 2"), why it restarted
 * (the latest restart's cause) and the steps the restarts lost, each restart in the
 * tooltip; nothing for a task that never restarted.
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} t
 */
export function restartInfo(h, t) {
  const n = asCount(t.restarts) || 0;
  if (n <= 0) return null;
  const cause = asString(t.restart_cause);
  const lost = asCount(t.steps_lost);
  const title = asArray(t.restart_log).map((r) => restartText(asObject(r))).join("\n");
  return h(
    "span",
    { class: "tfy-restart", "data-testid": "task-restart", title: title || null },
    h("span", { class: "tfy-attempt", "data-testid": "task-attempt", text: `attempt ${n + 1}` }),
    cause ? h("span", { class: "tfy-restart-cause", "data-testid": "restart-cause", "data-cause": cause, text: `↻ ${cause}` }) : null,
    lost !== null ? h("span", { class: "tfy-steps-lost", "data-testid": "steps-lost", text: `${formatSteps(lost)} lost` }) : null,
  );
}

/**
 * How many of a group's tasks restarted inside the application; nothing when none did.
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>[]} tasks
 */
function restartedCount(h, tasks) {
  const n = tasks.filter((t) => (asCount(t.restarts) || 0) > 0).length;
  return n ? h("span", { class: "tfy-attempt", "data-testid": "group-restarted", text: `${n} restarted` }) : null;
}
