// Live training progress from what each trainer reports (the `progress` trait): a bar of
// step / max_steps, steps per second, the time left at that rate and the latest loss,
// one row per trainer; and the train-loss curve by step, which grows while the run goes.
// The curve's points come apart from the trait, as `history` messages that carry only what
// changed (`applyHistory`); a `history` inside a task's progress is read when none came.

import { alignSeries, asArray, asObject, etaSeconds, formatDuration, formatNumber, groupTasks, taskType } from "./format.js";
import { section } from "./dom.js";
import { createPlot } from "./plot.js";

/** Rows shown before the rest are summed up in one line. */
export const MAX_ROWS = 8;
/** Trainers whose loss is drawn (chief first). */
export const MAX_CURVES = 4;

/** Task types that report no training steps of their own. */
const NOT_TRAINERS = new Set(["ps", "evaluator", "tensorboard"]);

/**
 * Trainers that reported a step, in the panel's task order.
 * @param {unknown} progress the `progress` trait
 * @returns {{ task: string, p: Record<string, any> }[]}
 */
export function trainers(progress) {
  const entries = Object.entries(asObject(progress))
    .map(([task, p]) => ({ task, p: asObject(p) }))
    .filter(({ task, p }) => typeof p.step === "number" && Number.isFinite(p.step) && !NOT_TRAINERS.has(taskType({ task })));
  const order = groupTasks(entries.map(({ task }) => ({ task }))).flatMap((g) => g.tasks.map((t) => t.task));
  const byTask = new Map(entries.map((e) => [e.task, e]));
  return order.map((t) => /** @type {{ task: string, p: Record<string, any> }} */ (byTask.get(t)));
}

/**
 * One trainer's row: name, bar, step text, rate, ETA and loss.
 * @param {import("./dom.js").Builder} h
 * @param {string} task
 * @param {Record<string, any>} p
 */
function progressRow(h, task, p) {
  const step = Number(p.step);
  const max = typeof p.max_steps === "number" && p.max_steps > 0 ? p.max_steps : null;
  const pct = max ? Math.max(0, Math.min(100, (step / max) * 100)) : null;
  const eta = etaSeconds(p);
  const rate = typeof p.steps_per_s === "number" && Number.isFinite(p.steps_per_s) ? p.steps_per_s : null;
  const loss = typeof p.loss === "number" ? p.loss : null;
  const fill = h("div", { class: "tfy-bar-fill", style: `width:${pct === null ? 100 : pct.toFixed(1)}%` });
  return h(
    "div",
    { class: "tfy-progress-row", "data-testid": "progress-row", "data-task": task, "data-step": String(step), "data-max-steps": max === null ? "" : String(max) },
    h("span", { class: "tfy-task-name tfy-mono", text: task }),
    h(
      "div",
      { class: "tfy-bar", "data-indeterminate": pct === null, role: "progressbar", "aria-valuenow": String(step), "aria-valuemax": max === null ? null : String(max) },
      fill,
      h("span", { class: "tfy-bar-text", "data-testid": "progress-text", text: `step ${formatNumber(step)}${max ? ` / ${formatNumber(max)} (${Math.floor(pct ?? 0)}%)` : ""}` }),
    ),
    h("span", { class: "tfy-mono", "data-testid": "progress-rate", text: rate === null || rate <= 0 ? "" : `${formatNumber(rate)} steps/s` }),
    h("span", { class: "tfy-mono", "data-testid": "progress-eta", "data-eta-s": eta === null ? "" : String(Math.round(eta)), text: eta === null ? "" : eta === 0 ? "done" : `${formatDuration(eta * 1000)} left` }),
    h("span", { class: "tfy-mono", "data-testid": "progress-loss", text: loss === null ? "" : `loss ${formatNumber(loss)}` }),
  );
}

/**
 * The line under the rows when more trainers report than are shown.
 * @param {import("./dom.js").Builder} h
 * @param {{ task: string, p: Record<string, any> }[]} rest
 */
function restLine(h, rest) {
  if (!rest.length) return null;
  const steps = rest.map(({ p }) => Number(p.step));
  const rate = rest.reduce((sum, { p }) => sum + (Number(p.steps_per_s) || 0), 0);
  return h("div", {
    class: "tfy-muted",
    "data-testid": "progress-rest",
    text: `+${rest.length} more trainers: steps ${formatNumber(Math.min(...steps))}–${formatNumber(Math.max(...steps))}, ${formatNumber(rate)} steps/s in all`,
  });
}

/**
 * Applies one `history` message to `histories`: for each task, keep the first `from` points
 * and append `points`. A change that starts past a series' end (an earlier one was missed)
 * is skipped; the whole series the view asked for on start sets it right.
 * @param {Map<string, number[][]>} histories
 * @param {unknown} change `{ task: { from, points } }`
 * @returns {boolean} whether anything changed
 */
export function applyHistory(histories, change) {
  let changed = false;
  for (const [task, c] of Object.entries(asObject(change))) {
    const { from, points } = asObject(c);
    const pts = histories.get(task) ?? [];
    const k = Number(from);
    if (!Number.isInteger(k) || k < 0 || k > pts.length) continue;
    histories.set(task, [...pts.slice(0, k), ...asArray(points)]);
    changed = true;
  }
  return changed;
}

/**
 * The progress section: absent until a trainer reported.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void, dispose(): void, history(change: unknown): void }}
 */
export function createProgress({ h, read, keep }) {
  const el = section(h, "progress");
  const rowsEl = h("div", { class: "tfy-progress-rows" });
  /** @type {Map<string, number[][]>} the loss points by task, from `history` messages */
  const histories = new Map();
  /** @param {string} task @param {Record<string, any>} p */
  const pointsOf = (task, p) => histories.get(task) ?? asArray(p.history);
  /** @type {ReturnType<typeof createPlot> | null} */
  let plot = null;
  let curves = "";

  /** @param {{ task: string, p: Record<string, any> }[]} shown */
  function drawLoss(shown) {
    const withHistory = shown.filter(({ task, p }) => pointsOf(task, p).length > 0).slice(0, MAX_CURVES);
    const names = withHistory.map(({ task }) => task).join(",");
    if (plot && names !== curves) {
      plot.destroy();
      plot.el.remove();
      plot = null;
    }
    curves = names;
    if (!withHistory.length) return;
    if (!plot) {
      // A training loss falls by orders of magnitude: drawn on a log scale unless unticked.
      const series = withHistory.map(({ task }) => ({ label: task }));
      plot = createPlot(h, { testid: "train-loss-chart", name: "train loss", yLabel: "train loss", series, log: true, keep });
      el.append(plot.el);
    }
    plot.setData(/** @type {number[][]} */ (alignSeries(withHistory.map(({ task, p }) => pointsOf(task, p)))));
  }

  function dispose() {
    plot?.destroy();
    plot = null;
    curves = "";
  }

  function update() {
    const all = trainers(read.get("progress"));
    if (!all.length) {
      dispose();
      el.replaceChildren();
      return;
    }
    if (!el.firstChild) el.append(h("h4", { text: "Training progress" }), rowsEl);
    const shown = all.slice(0, MAX_ROWS);
    rowsEl.replaceChildren(...shown.map(({ task, p }) => progressRow(h, task, p)), ...[restLine(h, all.slice(MAX_ROWS))].filter((n) => n !== null));
    drawLoss(all);
  }

  /** @param {unknown} change */
  function history(change) {
    if (applyHistory(histories, change)) update();
  }

  return { el, update, dispose, history };
}
