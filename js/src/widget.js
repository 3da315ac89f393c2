// Browser front end of tfyarn_jupyter: an anywidget (>= 0.9) view that watches and steers
// one distributed TensorFlow run on YARN. All model data goes into the page through
// textContent / setAttribute only, never innerHTML.

import {
  LIVE_TASK_STATES,
  TERMINAL_APP_STATES,
  TERMINAL_TASK_STATES,
  asArray,
  asObject,
  asString,
  asTime,
  chartSeries,
  formatClock,
  formatDuration,
  formatNumber,
  groupTasks,
  metricKeys,
  safeHttpUrl,
  sortedMetrics,
  taskType,
} from "./format.js";
import { CSS, STYLE_ID } from "./styles.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** Traits the view listens to, each with the sections it redraws. */
const TRAITS = ["app", "tasks", "pending", "metrics", "failure", "summary", "error"];

/**
 * @typedef {{
 *   get(name: string): any,
 *   set(name: string, value: any): void,
 *   on(event: string, cb: (...args: any[]) => void): void,
 *   off(event?: string | null, cb?: ((...args: any[]) => void) | null): void,
 *   send(msg: any, callbacks?: any, buffers?: any[]): void,
 *   save_changes(): void,
 * }} Model
 */

/** @param {Document} doc */
function injectStyle(doc) {
  if (!doc || doc.getElementById(STYLE_ID)) return;
  const style = doc.createElement("style");
  style.id = STYLE_ID;
  style.textContent = CSS;
  (doc.head || doc.documentElement).appendChild(style);
}

/**
 * A tiny element builder. `attrs` keys are set with setAttribute, except `text`
 * (textContent) and `on*` functions (event listeners). Children that are strings become
 * text nodes; null/false children are skipped.
 * @param {Document} doc
 */
function builder(doc) {
  /**
   * @param {string} tag
   * @param {Record<string, any> | null} [attrs]
   * @param {...(Node | string | null | undefined | false)} children
   * @returns {HTMLElement}
   */
  return function h(tag, attrs, ...children) {
    const node = doc.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = asString(v);
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : asString(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(typeof c === "string" ? doc.createTextNode(c) : c);
    }
    return node;
  };
}

/**
 * Tone of the application state pill.
 * @param {string} state
 * @param {string} finalStatus
 */
function appTone(state, finalStatus) {
  if (state === "RUNNING") return "blue";
  if (state === "FAILED" || finalStatus === "FAILED") return "red";
  if (state === "KILLED" || finalStatus === "KILLED") return "dark";
  if (state === "FINISHED") return "green";
  if (state === "ACCEPTED" || state === "SUBMITTED" || state === "NEW_SAVING") return "amber";
  return "grey";
}

/**
 * Tone of a final status pill.
 * @param {string} finalStatus
 */
function finalTone(finalStatus) {
  if (finalStatus === "SUCCEEDED") return "green";
  if (finalStatus === "FAILED") return "red";
  if (finalStatus === "KILLED") return "dark";
  return "grey";
}

/**
 * @param {{ model: Model, el: HTMLElement }} ctx
 * @returns {() => void} cleanup
 */
function render({ model, el }) {
  const doc = el.ownerDocument || document;
  injectStyle(doc);
  const h = builder(doc);

  const get = (/** @type {string} */ name) => {
    try {
      return model.get(name);
    } catch {
      return undefined;
    }
  };

  // ---- view state that must survive re-renders -------------------------------------
  /** Logs panes by task name: the same <details> node is re-attached to a rebuilt row. */
  /** @type {Map<string, {details: HTMLDetailsElement, label: HTMLElement, pre: HTMLElement}>} */
  const logs = new Map();
  /** Tasks whose logs were asked for and whose reply has not come yet. */
  const logsPending = new Set();
  /** Tasks a kill was sent for, until their state changes. @type {Map<string, string>} */
  const killSent = new Map();
  /** Task rows of the last render, by task name. @type {Map<string, HTMLElement>} */
  const rows = new Map();
  /** Running duration cells to refresh each second. @type {{el: HTMLElement, start: number}[]} */
  let liveDurations = [];
  let confirming = false;
  let cancelSent = false;
  let errorText = asString(get("error"));
  /** @type {HTMLElement | null} */
  let elapsedEl = null;
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  let disposed = false;

  // ---- skeleton ----------------------------------------------------------------------
  const sec = (/** @type {string} */ name) => h("section", { class: `tfy-section tfy-${name}-section` });
  const header = sec("header");
  const pendingSec = sec("pending");
  const tasksSec = sec("tasks");
  const metricsSec = sec("metrics");
  const failureSec = sec("failure");
  const summarySec = sec("summary");
  const actionsSec = sec("actions");
  const errorSec = sec("error");
  const root = h(
    "div",
    { class: "tfyarn-panel" },
    header,
    pendingSec,
    tasksSec,
    metricsSec,
    failureSec,
    summarySec,
    actionsSec,
    errorSec,
  );
  el.appendChild(root);

  const app = () => asObject(get("app"));
  const summaryObj = () => {
    const s = get("summary");
    return s && typeof s === "object" && !Array.isArray(s) ? s : null;
  };
  const ended = () => TERMINAL_APP_STATES.has(asString(app().state)) || summaryObj() !== null;

  /** Milliseconds elapsed since the application started, or null when unknown. */
  const elapsedMs = () => {
    const a = app();
    const start = asTime(a.start_time);
    if (!start) return null;
    if (ended()) {
      const finish = asTime(a.finish_time);
      if (finish) return finish - start;
      const dur = Number(asObject(summaryObj()).duration_s);
      if (Number.isFinite(dur)) return dur * 1000;
    }
    return Date.now() - start;
  };

  const send = (/** @type {Record<string, any>} */ msg) => {
    try {
      model.send(msg);
    } catch (e) {
      setError(`Could not send ${msg.type}: ${e instanceof Error ? e.message : e}`);
    }
  };

  // ---- header ------------------------------------------------------------------------
  function renderElapsed() {
    if (!elapsedEl) return;
    const ms = elapsedMs();
    elapsedEl.textContent = ms === null ? "—" : formatDuration(ms);
    if (ms === null) elapsedEl.removeAttribute("data-elapsed-s");
    else elapsedEl.setAttribute("data-elapsed-s", String(Math.max(0, Math.floor(ms / 1000))));
  }

  function renderHeader() {
    const a = app();
    const appId = asString(a.app_id);
    const state = asString(a.state);
    const finalStatus = asString(a.final_status);
    root.setAttribute("data-app-id", appId);
    root.setAttribute("data-app-state", state);

    const title = h(
      "div",
      { class: "tfy-header-title" },
      h("span", { class: "tfy-app-name", "data-testid": "app-name", text: asString(a.name) || "TensorFlow on YARN" }),
      h("span", { class: "tfy-mono tfy-muted", "data-testid": "app-id", text: appId || "not submitted" }),
      state
        ? h("span", { class: "tfy-pill", "data-testid": "app-state", "data-tone": appTone(state, finalStatus), text: state })
        : null,
      finalStatus && finalStatus !== "UNDEFINED"
        ? h("span", { class: "tfy-pill", "data-testid": "app-final-status", "data-tone": finalTone(finalStatus), text: finalStatus })
        : null,
    );

    elapsedEl = h("span", { class: "tfy-mono", "data-testid": "elapsed" });
    renderElapsed();
    const url = safeHttpUrl(a.tracking_url);
    const meta = h(
      "div",
      { class: "tfy-header-meta" },
      asString(a.queue) ? h("span", null, h("span", { class: "tfy-muted", text: "queue " }), h("span", { "data-testid": "app-queue", text: asString(a.queue) })) : null,
      asString(a.user) ? h("span", null, h("span", { class: "tfy-muted", text: "user " }), h("span", { "data-testid": "app-user", text: asString(a.user) })) : null,
      asTime(a.start_time) ? h("span", null, h("span", { class: "tfy-muted", text: "started " }), h("span", { class: "tfy-mono", text: formatClock(a.start_time) })) : null,
      h("span", null, h("span", { class: "tfy-muted", text: "elapsed " }), elapsedEl),
      url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", "data-testid": "yarn-ui", text: "YARN UI" }) : null,
    );
    const diag = asString(a.diagnostics).trim();
    // replaceChildren, unlike h(), would print a null child as the text "null".
    header.replaceChildren(
      title,
      meta,
      ...(diag ? [h("div", { class: "tfy-diagnostics", "data-testid": "diagnostics", text: diag })] : []),
    );
  }

  // ---- pending -----------------------------------------------------------------------
  function renderPending() {
    const items = asArray(get("pending")).map(asString).filter((s) => s);
    if (items.length === 0) {
      pendingSec.replaceChildren();
      return;
    }
    pendingSec.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-pending", "data-testid": "pending" },
        h("h4", { text: "Waiting for containers" }),
        h("ul", null, ...items.map((s) => h("li", { text: s }))),
      ),
    );
  }

  // ---- tasks -------------------------------------------------------------------------
  /** @param {string} task */
  function logsPane(task) {
    let pane = logs.get(task);
    if (!pane) {
      const label = h("summary", { "data-testid": "logs-label" });
      const pre = h("pre", { class: "tfy-mono", "data-testid": "logs-text" });
      const details = /** @type {HTMLDetailsElement} */ (
        h("details", { class: "tfy-logs", "data-testid": "logs", "data-task": task, open: true }, label, pre)
      );
      pane = { details, label, pre };
      logs.set(task, pane);
    }
    return pane;
  }

  /**
   * @param {Record<string, any>} t
   */
  function taskRow(t) {
    const task = asString(t.task) || `${asString(t.type)}:${asString(t.index)}`;
    const state = asString(t.state).toLowerCase();
    const start = asTime(t.start_time);
    const finish = asTime(t.finish_time);
    const live = LIVE_TASK_STATES.has(state);

    if (killSent.has(task) && killSent.get(task) !== state) killSent.delete(task);

    const duration = h("span", { class: "tfy-mono tfy-task-duration", "data-testid": "task-duration" });
    if (start && finish) duration.textContent = formatDuration(finish - start);
    else if (start && !TERMINAL_TASK_STATES.has(state)) {
      duration.textContent = formatDuration(Date.now() - start);
      liveDurations.push({ el: duration, start });
    } else duration.textContent = "";

    const logsBtn = h("button", {
      type: "button",
      "data-testid": "logs",
      title: `Fetch the logs of ${task}`,
      text: logsPending.has(task) ? "Logs…" : "Logs",
      onclick: () => {
        logsPending.add(task);
        logsBtn.textContent = "Logs…";
        send({ type: "logs", task });
      },
    });
    const killBtn = live
      ? h("button", {
          type: "button",
          class: "tfy-danger",
          "data-testid": "kill",
          title: `Kill the container of ${task}`,
          text: killSent.has(task) ? "Killing…" : "Kill",
          disabled: killSent.has(task),
          onclick: () => {
            killSent.set(task, state);
            killBtn.textContent = "Killing…";
            killBtn.setAttribute("disabled", "");
            send({ type: "kill", task });
          },
        })
      : null;

    const exitMessage = asString(t.exit_message).trim();
    const row = h(
      "div",
      {
        class: "tfy-task",
        "data-testid": "task-row",
        "data-task": task,
        "data-type": taskType(t),
        "data-state": state,
      },
      h(
        "div",
        { class: "tfy-task-main" },
        h("span", { class: "tfy-task-name tfy-mono", "data-testid": "task-name", text: task }),
        h("span", { class: "tfy-badge", "data-testid": "task-state", "data-state": state, text: state || "unknown" }),
        h("span", { class: "tfy-task-node tfy-mono", "data-testid": "task-node", title: "node", text: asString(t.node) }),
        t.gpu === true ? h("span", { class: "tfy-gpu", "data-testid": "gpu-badge", title: "on a node labelled gpu", text: "gpu" }) : null,
        h("span", { class: "tfy-task-container tfy-mono tfy-muted", "data-testid": "task-container", title: "container", text: asString(t.container_id) }),
        h("span", { class: "tfy-task-start tfy-mono", "data-testid": "task-start", title: "started", text: formatClock(t.start_time) }),
        duration,
        h("span", { class: "tfy-task-actions" }, logsBtn, killBtn),
      ),
      exitMessage ? h("div", { class: "tfy-exit", "data-testid": "exit-message", text: exitMessage }) : null,
    );
    const pane = logs.get(task);
    if (pane) row.appendChild(pane.details);
    rows.set(task, row);
    return row;
  }

  function renderTasks() {
    liveDurations = [];
    rows.clear();
    const groups = groupTasks(get("tasks"));
    if (groups.length === 0) {
      tasksSec.replaceChildren();
      return;
    }
    tasksSec.replaceChildren(
      ...groups.map((g) =>
        h(
          "div",
          { class: "tfy-group", "data-testid": "task-group", "data-type": g.type },
          h("h4", { text: `${g.type} (${g.tasks.length})` }),
          ...g.tasks.map(taskRow),
        ),
      ),
    );
  }

  /** @param {Record<string, any>} msg */
  function showLogs(msg) {
    const task = asString(msg.task);
    if (!task) return;
    logsPending.delete(task);
    const pane = logsPane(task);
    const stdout = asString(msg.stdout);
    const stderr = asString(msg.stderr);
    let text;
    if (stdout && stderr) text = `----- stdout -----\n${stdout}${stdout.endsWith("\n") ? "" : "\n"}----- stderr -----\n${stderr}`;
    else text = stdout || stderr || "(no output yet)";
    pane.pre.textContent = text;
    const source = asString(msg.source);
    pane.label.textContent = `Logs of ${task}${source ? ` (${source})` : ""}`;
    pane.details.setAttribute("data-source", source);
    pane.details.open = true;
    const row = rows.get(task);
    if (row) {
      if (pane.details.parentNode !== row) row.appendChild(pane.details);
      const btn = row.querySelector('[data-testid="logs"]');
      if (btn && btn.tagName === "BUTTON") btn.textContent = "Logs";
    }
  }

  // ---- metrics -----------------------------------------------------------------------
  /** @param {string} tag @param {Record<string, any>} attrs */
  function svg(tag, attrs) {
    const node = doc.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, asString(v));
    return node;
  }

  function renderMetrics() {
    const rowsM = sortedMetrics(get("metrics"));
    if (rowsM.length === 0) {
      metricsSec.replaceChildren();
      return;
    }
    const latest = rowsM[rowsM.length - 1];
    const keys = metricKeys(latest);
    const table = h(
      "table",
      { class: "tfy-metrics-table", "data-testid": "metrics-table" },
      h("thead", null, h("tr", null, ...keys.map((k) => h("th", { scope: "col", text: k })))),
      h(
        "tbody",
        null,
        h("tr", null, ...keys.map((k) => h("td", { class: "tfy-mono", "data-metric": k, title: asString(latest[k]), text: formatNumber(latest[k]) }))),
      ),
    );
    const chart = chartSeries(rowsM);
    /** @type {Node | null} */
    let chartBox = null;
    if (chart) {
      const s = svg("svg", {
        class: "tfy-chart",
        "data-testid": "loss-chart",
        viewBox: `0 0 ${chart.width} ${chart.height}`,
        preserveAspectRatio: "none",
        role: "img",
        "aria-label": "loss by step",
      });
      for (const series of chart.series) {
        s.appendChild(svg("path", { d: series.d, "data-series": series.series, "vector-effect": "non-scaling-stroke" }));
      }
      const stepLabel = (/** @type {number} */ x, /** @type {string} */ anchor, /** @type {number} */ step) => {
        const t = svg("text", { x, y: chart.height - 2, "text-anchor": anchor });
        t.textContent = `step ${formatNumber(step)}`;
        return t;
      };
      s.appendChild(stepLabel(4, "start", chart.minStep));
      if (chart.maxStep !== chart.minStep) s.appendChild(stepLabel(chart.width - 4, "end", chart.maxStep));
      const legend = h(
        "div",
        { class: "tfy-legend", "data-testid": "chart-legend" },
        ...chart.series.map((se) =>
          h(
            "span",
            null,
            h("span", { class: "tfy-swatch", "data-series": se.series }),
            `${se.series} ${formatNumber(se.first)} → ${formatNumber(se.last)} (${formatNumber(se.min)}–${formatNumber(se.max)})`,
          ),
        ),
      );
      chartBox = h("div", { class: "tfy-chart-box" }, s, legend);
    }
    metricsSec.replaceChildren(
      h(
        "div",
        { class: "tfy-metrics" },
        h("div", null, h("h4", { class: "tfy-metrics-title", text: `Evaluation (${rowsM.length})` }), table),
        chartBox,
      ),
    );
  }

  // ---- failure / summary -------------------------------------------------------------
  function renderFailure() {
    const f = get("failure");
    if (!f || typeof f !== "object") {
      failureSec.replaceChildren();
      return;
    }
    const task = asString(f.task);
    failureSec.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-failure", "data-testid": "failure", "data-task": task },
        h("h4", null, "Task failed: ", h("span", { class: "tfy-mono", "data-testid": "failure-task", text: task || "unknown task" })),
        h("pre", { class: "tfy-mono", "data-testid": "traceback", text: asString(f.traceback) || "(no traceback)" }),
      ),
    );
  }

  function renderSummary() {
    const s = summaryObj();
    if (!s) {
      summarySec.replaceChildren();
      return;
    }
    const finalStatus = asString(s.final_status);
    const dur = Number(s.duration_s);
    const tasks = asObject(s.tasks);
    const metrics = asObject(s.metrics);
    const taskNames = groupTasks(Object.entries(tasks).map(([task, v]) => ({ ...asObject(v), task }))).flatMap((g) =>
      g.tasks.map((t) => asString(t.task)),
    );
    const mkeys = metricKeys(metrics);
    summarySec.replaceChildren(
      h(
        "div",
        { class: "tfy-box tfy-summary", "data-testid": "summary", "data-final-status": finalStatus },
        h(
          "h4",
          null,
          "Run ended ",
          h("span", { class: "tfy-pill", "data-testid": "summary-status", "data-tone": finalTone(finalStatus), text: finalStatus || "UNKNOWN" }),
          " in ",
          h("span", { class: "tfy-mono", "data-testid": "summary-duration", text: Number.isFinite(dur) && s.duration_s !== null ? formatDuration(dur * 1000) : "—" }),
        ),
        taskNames.length
          ? h(
              "table",
              { "data-testid": "summary-tasks" },
              h("thead", null, h("tr", null, h("th", { text: "task" }), h("th", { text: "state" }), h("th", { text: "duration" }))),
              h(
                "tbody",
                null,
                ...taskNames.map((name) => {
                  const v = asObject(tasks[name]);
                  const st = asString(v.state).toLowerCase();
                  const d = Number(v.duration_s);
                  return h(
                    "tr",
                    { "data-task": name },
                    h("td", { class: "tfy-mono", text: name }),
                    h("td", null, h("span", { class: "tfy-badge", "data-state": st, text: st || "unknown" })),
                    h("td", { class: "tfy-mono", "data-testid": "summary-task-duration", text: Number.isFinite(d) && v.duration_s !== null ? formatDuration(d * 1000) : "—" }),
                  );
                }),
              ),
            )
          : null,
        mkeys.length
          ? h(
              "div",
              { "data-testid": "summary-metrics", style: "margin-top:4px" },
              h("span", { class: "tfy-muted", text: "final metrics: " }),
              ...mkeys.map((k, i) =>
                h("span", { "data-metric": k }, `${i ? ", " : ""}${k} `, h("span", { class: "tfy-mono", text: formatNumber(metrics[k]) })),
              ),
            )
          : null,
      ),
    );
  }

  // ---- actions (cancel) --------------------------------------------------------------
  function renderActions() {
    if (ended()) {
      confirming = false;
      actionsSec.replaceChildren();
      return;
    }
    const appId = asString(app().app_id);
    if (confirming) {
      actionsSec.replaceChildren(
        h(
          "div",
          { class: "tfy-actions", "data-testid": "cancel-confirmation", role: "alertdialog" },
          h("span", { text: `Cancel ${appId || "the application"}? Checkpoints already written are kept.` }),
          h("button", {
            type: "button",
            class: "tfy-danger",
            "data-testid": "confirm-cancel",
            text: "Yes, cancel",
            onclick: () => {
              confirming = false;
              cancelSent = true;
              send({ type: "cancel" });
              renderActions();
            },
          }),
          h("button", {
            type: "button",
            "data-testid": "dismiss-cancel",
            text: "No",
            onclick: () => {
              confirming = false;
              renderActions();
            },
          }),
        ),
      );
      const yes = /** @type {HTMLElement | null} */ (actionsSec.querySelector('[data-testid="confirm-cancel"]'));
      if (yes && typeof yes.focus === "function") yes.focus();
      return;
    }
    actionsSec.replaceChildren(
      h(
        "div",
        { class: "tfy-actions" },
        h("button", {
          type: "button",
          "data-testid": "cancel",
          text: "Cancel application",
          onclick: () => {
            confirming = true;
            renderActions();
          },
        }),
        cancelSent ? h("span", { class: "tfy-muted", "data-testid": "cancel-sent", text: "Cancel requested…" }) : null,
      ),
    );
  }

  // ---- error -------------------------------------------------------------------------
  /** @param {string} text */
  function setError(text) {
    errorText = text;
    renderError();
  }

  function renderError() {
    if (!errorText) {
      errorSec.replaceChildren();
      return;
    }
    errorSec.replaceChildren(
      h(
        "div",
        { class: "tfy-error", role: "alert" },
        h("span", { "data-testid": "error", text: errorText }),
        h("button", { type: "button", "data-testid": "dismiss-error", title: "Dismiss", text: "×", onclick: () => setError("") }),
      ),
    );
  }

  // ---- clock -------------------------------------------------------------------------
  function tick() {
    if (disposed) return;
    renderElapsed();
    const now = Date.now();
    for (const d of liveDurations) d.el.textContent = formatDuration(now - d.start);
  }

  function syncTimer() {
    const shouldTick = !disposed && !ended();
    if (shouldTick && timer === null) timer = setInterval(tick, 1000);
    else if (!shouldTick && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  // ---- wiring ------------------------------------------------------------------------
  /** @type {Record<string, () => void>} */
  const onChange = {
    app: () => {
      renderHeader();
      renderActions();
      syncTimer();
    },
    tasks: renderTasks,
    pending: renderPending,
    metrics: renderMetrics,
    failure: renderFailure,
    summary: () => {
      renderSummary();
      renderHeader();
      renderActions();
      syncTimer();
    },
    error: () => setError(asString(get("error"))),
  };
  /** @type {[string, () => void][]} */
  const subscriptions = TRAITS.map((name) => [`change:${name}`, onChange[name]]);

  /** @param {any} msg */
  const onCustom = (msg) => {
    const m = asObject(msg);
    if (m.type === "logs") showLogs(m);
    else if (m.type === "error") {
      logsPending.clear();
      killSent.clear();
      setError(asString(m.message) || "error");
      renderTasks();
    }
  };

  renderHeader();
  renderPending();
  renderTasks();
  renderMetrics();
  renderFailure();
  renderSummary();
  renderActions();
  renderError();
  syncTimer();

  for (const [event, cb] of subscriptions) model.on(event, cb);
  model.on("msg:custom", onCustom);

  return () => {
    disposed = true;
    if (timer !== null) clearInterval(timer);
    timer = null;
    for (const [event, cb] of subscriptions) model.off(event, cb);
    model.off("msg:custom", onCustom);
  };
}

export default { render };
