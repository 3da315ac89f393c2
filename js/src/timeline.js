// The run's timeline: one bar per task on a shared time axis, in segments from requested
// to allocated (waiting for a container), allocated to running (localisation and start)
// and running to its end, so that where the time went is visible at a glance. With many
// tasks, one bar per type (from its first request to its last end), expandable into the
// type's tasks. A task restarted inside the application shows each container it lost
// (running → lost), the gap until its next container started (lost → restarted) and a
// marker with the restart's cause where each was lost.

import {
  TERMINAL_APP_STATES,
  TERMINAL_TASK_STATES,
  asArray,
  asObject,
  asString,
  asTime,
  formatDuration,
  groupTasks,
  restartText,
  stateCounts,
} from "./format.js";
import { section } from "./dom.js";
import { keptSet } from "./model.js";

/** From this many tasks on, the timeline shows one bar per type. */
export const GROUP_FROM = 48;

/**
 * @typedef {{ kind: "wait" | "launch" | "run" | "lost" | "gap", from: number, to: number }} Segment
 * @typedef {{ n: number, cause: string, at: number, text: string }} Restart a restart's marker
 * @typedef {{ task: string, type: string, state: string, segments: Segment[], phases: { name: string, at: number }[], restarts: Restart[] }} Bar
 */

/**
 * A task's restarts inside the application (its `restart_log`), oldest first: where each
 * container it lost started and ended, and when the next one started (0 when unknown).
 * @param {Record<string, any>} t
 */
export function restartSpans(t) {
  return asArray(t.restart_log)
    .map((r) => asObject(r))
    .map((r) => ({ r, from: asTime(r.lost_start), lost: asTime(r.lost_at), to: asTime(r.restarted_at) }));
}

/**
 * The markers of a task's restarts: where each container was lost, with its cause.
 * @param {Record<string, any>} t
 * @returns {Restart[]}
 */
export function restartMarks(t) {
  return restartSpans(t)
    .filter((s) => s.lost)
    .map(({ r, lost }) => ({ n: Number(r.n) || 0, cause: asString(r.cause), at: lost, text: restartText(r) }));
}

/**
 * One task's segments (epoch ms). Times YARN or the task did not give fall back on the
 * ones it did (the app's start for the request, the container's start, its finish), and
 * a task still going ends at `now`.
 * @param {Record<string, any>} t
 * @param {Record<string, any>} app
 * @param {number} now
 * @returns {Segment[]}
 */
export function taskSegments(t, app, now) {
  const state = asString(t.state).toLowerCase();
  const running = asTime(t.running_time) || asTime(t.start_time);
  const requested = asTime(t.requested_time) || asTime(app.start_time) || running;
  const allocated = asTime(t.allocated_time) || (state === "requested" ? 0 : running);
  let end = asTime(t.end_time) || asTime(t.finish_time);
  if (!end && running && TERMINAL_TASK_STATES.has(state) && Number(t.duration_s) > 0) end = running + Number(t.duration_s) * 1000;
  if (!end && TERMINAL_APP_STATES.has(asString(app.state))) end = asTime(app.finish_time) || now;
  if (!end) end = now;
  /** @type {Segment[]} */
  const segs = [];
  const add = (/** @type {Segment["kind"]} */ kind, /** @type {number} */ from, /** @type {number} */ to) => {
    if (from && to && to >= from) segs.push({ kind, from, to });
  };
  if (!requested) return segs;
  const lost = restartSpans(t);
  if (lost.length && (lost[0].from || lost[0].lost)) {
    // Each lost container ran until it was lost; the gap lasts until the next one started.
    add("wait", requested, lost[0].from || lost[0].lost);
    lost.forEach((s, i) => {
      add("lost", s.from, s.lost);
      const next = s.to || (lost[i + 1] && (lost[i + 1].from || lost[i + 1].lost)) || allocated || running || end;
      add("gap", s.lost, next);
    });
  } else add("wait", requested, allocated || (running ? running : end));
  if (allocated) add("launch", allocated, running || end);
  if (running) add("run", running, Math.max(running, end));
  return segs;
}

/** A task's start, phase by phase, as the task reports it (tfyarn_jupyter/core/timeline.py). */
export const PHASES = ["interpreter", "cluster", "tensorflow", "model", "restored", "train_start", "first_step"];
const PHASE_NAMES = {
  interpreter: "interpreter up",
  tensorflow: "TensorFlow imported",
  cluster: "cluster ready",
  model: "model built",
  restored: "checkpoint restored",
  train_start: "training started",
  first_step: "first step",
};

/**
 * The phases a task reached (epoch ms), in order; those it did not report are left out.
 * @param {Record<string, any>} t
 * @returns {{ name: string, at: number }[]}
 */
export function taskPhases(t) {
  const phases = t && typeof t.phases === "object" && t.phases ? t.phases : {};
  return PHASES.filter((p) => asTime(phases[p]) > 0).map((p) => ({ name: p, at: asTime(phases[p]) }));
}

/**
 * The time axis: start, end and about five round ticks between them.
 * @param {number} t0
 * @param {number} t1
 * @returns {{ at: number, label: string }[]}
 */
export function ticks(t0, t1) {
  const span = Math.max(1, t1 - t0);
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200].map((s) => s * 1000);
  const step = steps.find((s) => span / s <= 6) || Math.ceil(span / 6 / 3600000) * 3600000;
  const out = [];
  for (let at = 0; at <= span; at += step) out.push({ at: t0 + at, label: at === 0 ? "0s" : `+${formatDuration(at)}` });
  return out;
}

/**
 * Bars for `tasks` and the axis bounds.
 * @param {unknown} tasks
 * @param {Record<string, any>} app
 * @param {number} now
 */
export function timelineModel(tasks, app, now) {
  const groups = groupTasks(tasks);
  /** @type {Bar[]} */
  const bars = groups.flatMap((g) =>
    g.tasks.map((t) => ({
      task: asString(t.task),
      type: g.type,
      state: asString(t.state).toLowerCase(),
      segments: taskSegments(t, app, now),
      phases: taskPhases(t),
      restarts: restartMarks(t),
    })),
  );
  const times = bars.flatMap((b) => b.segments.flatMap((s) => [s.from, s.to]));
  const t0 = times.length ? Math.min(...times) : now;
  const t1 = times.length ? Math.max(...times, t0 + 1000) : now + 1000;
  return { groups, bars, t0, t1 };
}

/**
 * A bar's track: its segments positioned in percent of the axis.
 * @param {import("./dom.js").Builder} h
 * @param {Segment[]} segments
 * @param {number} t0
 * @param {number} t1
 */
function track(h, segments, t0, t1, phases = [], restarts = /** @type {Restart[]} */ ([])) {
  const pct = (/** @type {number} */ t) => ((t - t0) / (t1 - t0)) * 100;
  // Phases are timed from the container's start (its launch), as RunResult reports them.
  const start = (segments.find((s) => s.kind === "launch") || segments[segments.length - 1] || { from: t0 }).from;
  const names = { wait: "waiting for a container", launch: "localising and starting", run: "running", lost: "ran until lost", gap: "lost → restarted" };
  return h(
    "div",
    { class: "tfy-track" },
    ...segments.map((s) =>
      h("div", {
        class: "tfy-seg",
        "data-kind": s.kind,
        "data-ms": String(Math.round(s.to - s.from)),
        title: `${names[s.kind]}: ${formatDuration(s.to - s.from)}`,
        style: `left:${pct(s.from).toFixed(2)}%;width:${Math.max(0.4, pct(s.to) - pct(s.from)).toFixed(2)}%`,
      }),
    ),
    ...phases
      .filter((p) => p.at >= t0 && p.at <= t1)
      .map((p) =>
        h("div", {
          class: "tfy-phase",
          "data-testid": "timeline-phase",
          "data-phase": p.name,
          title: `${PHASE_NAMES[p.name] || p.name}: +${formatDuration(Math.max(0, p.at - start))}`,
          style: `left:${pct(p.at).toFixed(2)}%`,
        }),
      ),
    ...restarts
      .filter((r) => r.at >= t0 && r.at <= t1)
      .map((r) =>
        h(
          "div",
          {
            class: "tfy-restart-mark",
            "data-testid": "timeline-restart",
            "data-cause": r.cause,
            // its flag left of it, over the lost run, unless that would cross the labels
            "data-side": pct(r.at) < 15 ? "right" : "left",
            title: r.text,
            style: `left:${pct(r.at).toFixed(2)}%`,
          },
          h("span", { class: "tfy-restart-flag", text: `↻ ${r.cause || "lost"}` }),
        ),
      ),
  );
}

/** End states whose run segment has a colour of its own (widget.css). */
const ENDED_COLOURS = ["succeeded", "failed", "killed"];

/**
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void, tick(): void }}
 */
export function createTimeline({ h, read, keep }) {
  const el = section(h, "timeline");
  /** Types whose tasks are shown in grouped mode. */
  const open = keptSet(keep, "timeline-open");

  /** @param {Bar} b @param {number} t0 @param {number} t1 */
  const barRow = (b, t0, t1) =>
    h(
      "div",
      { class: "tfy-tl-row", "data-testid": "timeline-row", "data-task": b.task, "data-state": b.state },
      h("span", { class: "tfy-tl-label tfy-mono", text: b.task }),
      track(h, b.segments, t0, t1, b.phases, b.restarts),
    );

  /** @param {ReturnType<typeof timelineModel>} m */
  function groupRows(m) {
    return m.groups.map((g) => {
      const bars = m.bars.filter((b) => b.type === g.type);
      const segs = bars.flatMap((b) => b.segments);
      const span = segs.length ? [{ kind: /** @type {const} */ ("run"), from: Math.min(...segs.map((s) => s.from)), to: Math.max(...segs.map((s) => s.to)) }] : [];
      const counts = stateCounts(g.tasks).map(([s, n]) => `${n} ${s}`).join(" · ");
      const details = h(
        "details",
        { class: "tfy-tl-group", "data-testid": "timeline-group", "data-type": g.type, open: open.has(g.type) },
        h("summary", null, h("div", { class: "tfy-tl-row" }, h("span", { class: "tfy-tl-label", text: `${g.type} (${g.tasks.length})`, title: counts }), track(h, span, m.t0, m.t1))),
        ...(open.has(g.type) ? bars.map((b) => barRow(b, m.t0, m.t1)) : []),
      );
      details.addEventListener("toggle", () => {
        const was = open.has(g.type);
        if (/** @type {HTMLDetailsElement} */ (details).open) open.add(g.type);
        else open.delete(g.type);
        if (was !== open.has(g.type)) update();
      });
      return details;
    });
  }

  function update() {
    const tasks = asArray(read.get("tasks"));
    const m = timelineModel(tasks, asObject(read.app()), Date.now());
    if (!m.bars.length) {
      el.replaceChildren();
      return;
    }
    const axis = h(
      "div",
      { class: "tfy-tl-row tfy-tl-axis", "data-testid": "timeline-axis" },
      h("span", { class: "tfy-tl-label" }),
      h("div", { class: "tfy-track" }, ...ticks(m.t0, m.t1).map((t) => h("span", { class: "tfy-tick", style: `left:${(((t.at - m.t0) / (m.t1 - m.t0)) * 100).toFixed(2)}%`, text: t.label }))),
    );
    const rows = tasks.length >= GROUP_FROM ? groupRows(m) : m.bars.map((b) => barRow(b, m.t0, m.t1));
    const timeline = h("div", { class: "tfy-timeline", "data-testid": "timeline" }, ...rows, axis);
    el.replaceChildren(h("h4", { text: "Timeline" }), timeline, legend(timeline));
  }

  /** A key per colour the drawn bars use: an ended task's run is coloured by how it ended. */
  function legend(/** @type {HTMLElement} */ timeline) {
    const ranStates = [...timeline.querySelectorAll(".tfy-tl-row")]
      .filter((row) => row.querySelector('.tfy-seg[data-kind="run"]'))
      .map((row) => row.getAttribute("data-state") || "");
    const ended = ENDED_COLOURS.filter((s) => ranStates.includes(s));
    const restarted = timeline.querySelector('.tfy-seg[data-kind="gap"]') !== null;
    const phased = timeline.querySelector(".tfy-phase") !== null;
    const keys = [
      ["wait", "", "requested → allocated"],
      ["launch", "", "allocated → running"],
      ...(ranStates.some((s) => !ENDED_COLOURS.includes(s)) ? [["run", "", "running → ended"]] : []),
      ...ended.map((s) => ["run", s, `running → ${s}`]),
      ...(restarted ? [["lost", "", "running → lost"], ["gap", "", "lost → restarted (↻ why)"]] : []),
      ...(phased ? [["phase", "", "a step of the task's start (hover: which, and when)"]] : []),
    ];
    return h(
      "div",
      { class: "tfy-tl-legend tfy-muted", "data-testid": "timeline-legend" },
      ...keys.map(([kind, state, label]) => h("span", null, h("span", { class: "tfy-seg-key", "data-kind": kind, "data-state": state }), label)),
    );
  }

  /** A run still going: bars grow to now. */
  function tick() {
    if (!read.ended()) update();
  }

  return { el, update, tick };
}
