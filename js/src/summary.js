// How the run ended: the failure box (first failed task and its traceback) and the
// summary box (final status, duration, each task's state and duration, its restarts
// inside the application when any task restarted, final metrics).

import {
  asArray,
  asCount,
  asObject,
  asString,
  formatDuration,
  formatNumber,
  formatSteps,
  groupTasks,
  metricKeys,
} from "./format.js";
import { finalTone } from "./header.js";
import { section } from "./dom.js";

/**
 * The failure box; absent until a task failed.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createFailure({ h, read }) {
  const el = section(h, "failure");
  function update() {
    const f = read.get("failure");
    if (!f || typeof f !== "object") {
      el.replaceChildren();
      return;
    }
    const task = asString(f.task);
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-failure", "data-testid": "failure", "data-task": task },
        h("h4", null, "Task failed: ", h("span", { class: "tfy-mono", "data-testid": "failure-task", text: task || "unknown task" })),
        h("pre", { class: "tfy-mono", "data-testid": "traceback", text: asString(f.traceback) || "(no traceback)" }),
      ),
    );
  }
  return { el, update };
}

/** @param {Record<string, any>} v an object with `duration_s` */
function secondsText(v) {
  const d = Number(v.duration_s);
  return Number.isFinite(d) && v.duration_s !== null ? formatDuration(d * 1000) : "—";
}

/**
 * A task's restarts inside the application in a few words ("attempt 2: preempted, 200
 * steps lost"), "" when it never restarted.
 * @param {Record<string, any>} t the task (the `tasks` trait's)
 */
export function restartsText(t) {
  const n = asCount(t.restarts) || 0;
  if (n <= 0) return "";
  const lost = asCount(t.steps_lost);
  const why = [asString(t.restart_cause), lost !== null ? `${formatSteps(lost)} lost` : ""].filter((s) => s);
  return `attempt ${n + 1}${why.length ? `: ${why.join(", ")}` : ""}`;
}

/**
 * The summary's task table, in the panel's group order; a restarts column when a task
 * restarted inside the application.
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} tasks the summary's tasks by name
 * @param {Map<string, Record<string, any>>} live the `tasks` trait's tasks by name
 */
function tasksTable(h, tasks, live) {
  const names = groupTasks(Object.entries(tasks).map(([task, v]) => ({ ...asObject(v), task }))).flatMap((g) =>
    g.tasks.map((t) => asString(t.task)),
  );
  if (!names.length) return null;
  const restarts = new Map(names.map((name) => [name, restartsText(live.get(name) || {})]));
  const restarted = [...restarts.values()].some((s) => s);
  return h(
    "table",
    { "data-testid": "summary-tasks" },
    h(
      "thead",
      null,
      h("tr", null, h("th", { text: "task" }), h("th", { text: "state" }), h("th", { text: "duration" }), restarted ? h("th", { text: "restarts" }) : null),
    ),
    h(
      "tbody",
      null,
      ...names.map((name) => {
        const v = asObject(tasks[name]);
        const st = asString(v.state).toLowerCase();
        return h(
          "tr",
          { "data-task": name },
          h("td", { class: "tfy-mono", text: name }),
          h("td", null, h("span", { class: "tfy-badge", "data-state": st, text: st || "unknown" })),
          h("td", { class: "tfy-mono", "data-testid": "summary-task-duration", text: secondsText(v) }),
          restarted ? h("td", { class: "tfy-summary-restarts", "data-testid": "summary-task-restarts", text: restarts.get(name) }) : null,
        );
      }),
    ),
  );
}

/**
 * The summary's final metrics line.
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} metrics
 */
function metricsLine(h, metrics) {
  const keys = metricKeys(metrics).filter((k) => k !== "t");
  if (!keys.length) return null;
  return h(
    "div",
    { "data-testid": "summary-metrics", style: "margin-top:4px" },
    h("span", { class: "tfy-muted", text: "final metrics: " }),
    ...keys.map((k, i) =>
      h("span", { "data-metric": k }, `${i ? ", " : ""}${k} `, h("span", { class: "tfy-mono", text: formatNumber(metrics[k]) })),
    ),
  );
}

/**
 * The summary box; absent until the run ended.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createSummary({ h, read }) {
  const el = section(h, "summary");
  function update() {
    const s = read.summary();
    if (!s) {
      el.replaceChildren();
      return;
    }
    const finalStatus = asString(s.final_status);
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-summary", "data-testid": "summary", "data-final-status": finalStatus },
        h(
          "h4",
          null,
          "Run ended ",
          h("span", { class: "tfy-pill", "data-testid": "summary-status", "data-tone": finalTone(finalStatus), text: finalStatus || "UNKNOWN" }),
          " in ",
          h("span", { class: "tfy-mono", "data-testid": "summary-duration", text: secondsText(s) }),
        ),
        tasksTable(h, asObject(s.tasks), new Map(asArray(read.get("tasks")).map((t) => [asString(asObject(t).task), asObject(t)]))),
        metricsLine(h, asObject(s.metrics)),
      ),
    );
  }
  return { el, update };
}
