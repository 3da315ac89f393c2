// Browser front end of tfyarn_jupyter: an anywidget (>= 0.9) view that watches and steers
// one distributed TensorFlow run on YARN. This module only wires the model's events to
// the panel's sections (header.js, tasks.js, progress.js, timeline.js, resources.js,
// metrics.js, summary.js, actions.js, error.js); its styles are widget.css, which the
// Python side loads as `_css` (with uPlot's stylesheet before it). Each update's time
// to redraw is stamped on the root as `data-render-ms`, for the benchmarks.

import { asObject, asString } from "./format.js";
import { builder } from "./dom.js";
import { memoryOf, reader, sender } from "./model.js";
import { createHeader } from "./header.js";
import { createPending, createTasks } from "./tasks.js";
import { createMetrics } from "./metrics.js";
import { createProgress } from "./progress.js";
import { createResources } from "./resources.js";
import { createTimeline } from "./timeline.js";
import { createFailure, createSummary } from "./summary.js";
import { createCancel, createKills, createLogs } from "./actions.js";
import { createError } from "./error.js";
import { FROM_VIEW, TO_VIEW } from "./messages.js";

/** Traits the view listens to. */
const TRAITS = ["app", "tasks", "pending", "capacity", "progress", "metrics", "failure", "summary", "tensorboard_url", "unreachable", "error"];

/**
 * The panel's sections, in page order, inside a fresh root element.
 * @param {import("./model.js").Model} model
 * @param {Document} doc
 */
function sections(model, doc) {
  const h = builder(doc);
  const read = reader(model);
  const error = createError(h, asString(read.get("error")));
  /** @type {import("./model.js").Ctx} */
  const ctx = { doc, h, read, send: sender(model, error.set), keep: memoryOf(model) };
  const root = h("div", { class: "tfyarn-panel" });
  const logs = createLogs(ctx);
  const kills = createKills(ctx);
  const header = createHeader(ctx, root);
  const pending = createPending(ctx);
  const progress = createProgress(ctx);
  const tasks = createTasks(ctx, { logs, kills });
  const timeline = createTimeline(ctx);
  const resources = createResources(ctx);
  const metrics = createMetrics(ctx);
  const failure = createFailure(ctx);
  const summary = createSummary(ctx);
  const actions = createCancel(ctx);
  const parts = [header, pending, progress, tasks, timeline, resources, metrics, failure, summary, actions];
  root.append(...parts.map((p) => p.el), error.el);
  const named = { header, pending, progress, tasks, timeline, resources, metrics, failure, summary, actions };
  return { root, read, send: ctx.send, logs, kills, error, parts, ...named };
}

/**
 * A once-a-second tick, running only while `shouldTick()` (synced on `sync()`).
 * @param {() => void} tick
 * @param {() => boolean} shouldTick
 */
function clock(tick, shouldTick) {
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  let disposed = false;
  const stop = () => {
    if (timer !== null) clearInterval(timer);
    timer = null;
  };
  return {
    sync() {
      const on = !disposed && shouldTick();
      if (on && timer === null) timer = setInterval(() => disposed || tick(), 1000);
      else if (!on) stop();
    },
    dispose() {
      disposed = true;
      stop();
    },
  };
}

/**
 * What each trait's change redraws.
 * @param {ReturnType<typeof sections>} s
 * @param {() => void} syncClock
 * @returns {Record<string, () => void>}
 */
function changeHandlers(s, syncClock) {
  const app = () => {
    s.header.update();
    s.actions.update();
    s.timeline.update();
    syncClock();
  };
  return {
    app,
    tasks: () => {
      s.tasks.update();
      s.timeline.update();
      s.resources.update();
      s.summary.update(); // its restarts column reads the tasks
    },
    pending: s.pending.update,
    capacity: s.pending.update,
    progress: () => {
      s.progress.update();
      s.resources.update();
    },
    tensorboard_url: s.header.update,
    unreachable: s.header.update,
    metrics: s.metrics.update,
    failure: s.failure.update,
    summary: () => {
      s.summary.update();
      app();
    },
    error: () => s.error.set(asString(s.read.get("error"))),
  };
}

/**
 * `fn`, stamping how long it took on `root` as `data-render-ms`.
 * @param {HTMLElement} root
 * @param {() => void} fn
 */
function timed(root, fn) {
  return () => {
    const t0 = performance.now();
    fn();
    root.setAttribute("data-render-ms", (performance.now() - t0).toFixed(2));
  };
}

/**
 * Python's one-off messages: a `logs` reply, loss `history` (what changed since the last),
 * or an `error` (which also ends what was pending).
 * @param {ReturnType<typeof sections>} s
 */
function customHandler(s) {
  return (/** @type {any} */ msg) => {
    const m = asObject(msg);
    if (m.type === TO_VIEW.logs) s.tasks.showLogs(m);
    else if (m.type === TO_VIEW.history) s.progress.history(m.tasks);
    else if (m.type === TO_VIEW.error) {
      s.logs.clear();
      s.kills.clear();
      s.error.set(asString(m.message) || "error");
      s.tasks.refresh();
    }
  };
}

/**
 * @param {{ model: import("./model.js").Model, el: HTMLElement }} ctx
 * @returns {() => void} cleanup
 */
function render({ model, el }) {
  const s = sections(model, el.ownerDocument || document);
  el.appendChild(s.root);
  const ticker = clock(
    () => {
      s.header.tick();
      s.tasks.tick();
      s.timeline.tick();
    },
    () => !s.read.ended(),
  );
  const onChange = changeHandlers(s, ticker.sync);
  /** @type {[string, () => void][]} */
  const subscriptions = TRAITS.map((name) => [`change:${name}`, timed(s.root, onChange[name])]);
  const onCustom = customHandler(s);

  for (const part of s.parts) part.update();
  ticker.sync();
  for (const [event, cb] of subscriptions) model.on(event, cb);
  model.on("msg:custom", onCustom);
  s.send({ type: FROM_VIEW.historySync }); // the loss histories so far, whole

  return () => {
    ticker.dispose();
    s.progress.dispose();
    s.metrics.dispose();
    for (const [event, cb] of subscriptions) model.off(event, cb);
    model.off("msg:custom", onCustom);
  };
}

export default { render };
