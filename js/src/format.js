// Pure helpers of the tfyarn panel: no DOM, so they can be tested on their own.

/** YARN application states after which nothing changes any more. */
export const TERMINAL_APP_STATES = new Set(["FINISHED", "FAILED", "KILLED"]);

/** Task states in which a container is still wanted or alive (Kill makes sense). */
export const LIVE_TASK_STATES = new Set(["requested", "allocated", "running"]);

/** Task states that are final. */
export const TERMINAL_TASK_STATES = new Set(["succeeded", "failed", "killed"]);

/** Order of task groups; other types follow, sorted by name. */
export const TYPE_ORDER = ["chief", "worker", "ps", "evaluator"];

/**
 * @param {unknown} v
 * @returns {Record<string, any>}
 */
export function asObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? /** @type {any} */ (v) : {};
}

/**
 * @param {unknown} v
 * @returns {any[]}
 */
export function asArray(v) {
  return Array.isArray(v) ? v : [];
}

/**
 * @param {unknown} v
 * @returns {string}
 */
export function asString(v) {
  if (v === null || v === undefined) return "";
  return typeof v === "string" ? v : String(v);
}

/**
 * An epoch-milliseconds time, or 0 when missing/invalid.
 * @param {unknown} v
 * @returns {number}
 */
export function asTime(v) {
  const n = typeof v === "number" ? v : Number(v);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** @param {number} n */
function pad2(n) {
  return String(n).padStart(2, "0");
}

/**
 * A duration as "42s", "3m 05s" or "1h 02m 03s" (negative clamps to 0).
 * @param {number} ms
 * @returns {string}
 */
export function formatDuration(ms) {
  if (!Number.isFinite(ms)) return "—";
  let s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h > 0) return `${h}h ${pad2(m)}m ${pad2(s)}s`;
  if (m > 0) return `${m}m ${pad2(s)}s`;
  return `${s}s`;
}

/**
 * Local wall-clock time HH:MM:SS of an epoch-ms time, "" when missing.
 * @param {unknown} t
 * @returns {string}
 */
export function formatClock(t) {
  const ms = asTime(t);
  if (!ms) return "";
  const d = new Date(ms);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/**
 * A metric value for display: integers as they are, others to 4 significant digits.
 * @param {unknown} v
 * @returns {string}
 */
export function formatNumber(v) {
  if (typeof v !== "number") return asString(v);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(4)));
}

/**
 * The task type of a task record: its `type`, else the part of `task` before ":".
 * @param {Record<string, any>} t
 * @returns {string}
 */
export function taskType(t) {
  const type = asString(t.type);
  if (type) return type;
  const name = asString(t.task);
  const i = name.indexOf(":");
  return i > 0 ? name.slice(0, i) : name || "task";
}

/**
 * @param {Record<string, any>} t
 * @returns {number}
 */
function taskIndex(t) {
  const n = Number(t.index);
  if (Number.isFinite(n)) return n;
  const m = /:(\d+)$/.exec(asString(t.task));
  return m ? Number(m[1]) : 0;
}

/**
 * Tasks grouped by type: chief, worker, ps, evaluator, then other types by name;
 * within a group by index.
 * @param {unknown} tasks
 * @returns {{type: string, tasks: Record<string, any>[]}[]}
 */
export function groupTasks(tasks) {
  /** @type {Map<string, Record<string, any>[]>} */
  const groups = new Map();
  for (const raw of asArray(tasks)) {
    const t = asObject(raw);
    if (!asString(t.task) && !asString(t.type)) continue;
    const type = taskType(t);
    if (!groups.has(type)) groups.set(type, []);
    /** @type {Record<string, any>[]} */ (groups.get(type)).push(t);
  }
  const rank = (/** @type {string} */ type) => {
    const i = TYPE_ORDER.indexOf(type);
    return i < 0 ? TYPE_ORDER.length : i;
  };
  return [...groups.keys()]
    .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0))
    .map((type) => ({
      type,
      tasks: /** @type {Record<string, any>[]} */ (groups.get(type))
        .map((t, i) => ({ t, i }))
        .sort((a, b) => taskIndex(a.t) - taskIndex(b.t) || a.i - b.i)
        .map(({ t }) => t),
    }));
}

/**
 * Evaluation results as objects, sorted by step (stable; entries without a step keep
 * their place by array position).
 * @param {unknown} metrics
 * @returns {Record<string, any>[]}
 */
export function sortedMetrics(metrics) {
  return asArray(metrics)
    .map((m, i) => ({ m: asObject(m), i }))
    .filter(({ m }) => Object.keys(m).length > 0)
    .map(({ m, i }) => ({ m, x: Number.isFinite(Number(m.step)) && m.step !== null ? Number(m.step) : i, i }))
    .sort((a, b) => a.x - b.x || a.i - b.i)
    .map(({ m }) => m);
}

/**
 * The keys of a metrics entry in display order: step, loss, accuracy, then the others
 * in their own order.
 * @param {Record<string, any>} m
 * @returns {string[]}
 */
export function metricKeys(m) {
  const first = ["step", "loss", "accuracy"].filter((k) => k in m);
  return [...first, ...Object.keys(m).filter((k) => !first.includes(k))];
}

/** Keys of an evaluation that are not metrics to chart. */
const NOT_METRICS = new Set(["step", "global_step", "t", "time", "timestamp"]);

/**
 * The step of an evaluation: `step`, else `global_step`, else null.
 * @param {Record<string, any>} m
 * @returns {number | null}
 */
export function stepOf(m) {
  for (const k of ["step", "global_step"]) {
    const n = m[k];
    if (typeof n === "number" && Number.isFinite(n)) return n;
  }
  return null;
}

/**
 * Names of the numeric metrics found in any evaluation, in `metricKeys` order of first
 * appearance (loss, accuracy first), without the step.
 * @param {Record<string, any>[]} rows
 * @returns {string[]}
 */
export function metricNames(rows) {
  /** @type {string[]} */
  const names = [];
  for (const m of rows) {
    for (const k of metricKeys(m)) {
      if (!NOT_METRICS.has(k) && typeof m[k] === "number" && !names.includes(k)) names.push(k);
    }
  }
  const first = ["loss", "accuracy"].filter((k) => names.includes(k));
  return [...first, ...names.filter((k) => !first.includes(k))];
}

/**
 * One metric by step, as uPlot data: `[steps, values]`, rows without a step or a finite
 * value left out, sorted by step.
 * @param {Record<string, any>[]} rows
 * @param {string} key
 * @returns {[number[], number[]]}
 */
export function seriesByStep(rows, key) {
  const pts = rows
    .map((m) => [stepOf(m), m[key]])
    .filter(([x, y]) => x !== null && typeof y === "number" && Number.isFinite(y))
    .sort((a, b) => Number(a[0]) - Number(b[0]));
  return [pts.map((p) => Number(p[0])), pts.map((p) => Number(p[1]))];
}

/**
 * Several `[x, y]` point lists on one shared, sorted x axis (uPlot's data layout): a
 * series without a point at some x holds null there.
 * @param {number[][][]} lists one list of `[x, y]` pairs per series
 * @returns {(number | null)[][]}
 */
export function alignSeries(lists) {
  /** @type {Map<number, (number | null)[]>} */
  const byX = new Map();
  lists.forEach((pts, i) => {
    for (const p of asArray(pts)) {
      const [x, y] = asArray(p);
      if (typeof x !== "number" || !Number.isFinite(x)) continue;
      if (!byX.has(x)) byX.set(x, lists.map(() => null));
      /** @type {(number | null)[]} */ (byX.get(x))[i] = typeof y === "number" && Number.isFinite(y) ? y : null;
    }
  });
  const xs = [...byX.keys()].sort((a, b) => a - b);
  return [xs, ...lists.map((_, i) => xs.map((x) => /** @type {(number | null)[]} */ (byX.get(x))[i]))];
}

/**
 * Bytes as "812 MiB", "1.5 GiB"; "" when not a number.
 * @param {unknown} v
 * @returns {string}
 */
export function formatBytes(v) {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = v;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return `${i === 0 || n >= 10 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}

/**
 * Seconds left to `max_steps` at the reported rate, or null when it cannot be told.
 * @param {Record<string, any>} p one trainer's progress
 * @returns {number | null}
 */
export function etaSeconds(p) {
  const step = Number(p.step);
  const max = Number(p.max_steps);
  const rate = Number(p.steps_per_s);
  if (p.max_steps === null || p.max_steps === undefined || !Number.isFinite(max) || !Number.isFinite(step)) return null;
  if (step >= max) return 0;
  return Number.isFinite(rate) && rate > 0 ? (max - step) / rate : null;
}

/**
 * Counts of tasks per state, in the order states go.
 * @param {Record<string, any>[]} tasks
 * @returns {[string, number][]}
 */
export function stateCounts(tasks) {
  const order = ["requested", "allocated", "running", "succeeded", "failed", "killed"];
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const t of tasks) {
    const s = asString(t.state).toLowerCase() || "unknown";
    counts.set(s, (counts.get(s) || 0) + 1);
  }
  const rank = (/** @type {string} */ s) => (order.includes(s) ? order.indexOf(s) : order.length);
  return [...counts.entries()].sort((a, b) => rank(a[0]) - rank(b[0]));
}

/**
 * An http(s) URL string, or "" for anything else (javascript:, data:, garbage).
 * @param {unknown} url
 * @returns {string}
 */
export function safeHttpUrl(url) {
  const s = asString(url).trim();
  if (!s) return "";
  // YARN sometimes reports "host:port/proxy/..." without a scheme.
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(s) ? s : `http://${s}`;
  try {
    const u = new URL(withScheme);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : "";
  } catch {
    return "";
  }
}

/**
 * A whole number the Python side sent, or null when it sent none (None, missing, garbage).
 * @param {unknown} v
 * @returns {number | null}
 */
export function asCount(v) {
  if (v === null || v === undefined || v === "" || typeof v === "boolean") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/**
 * `n` steps, in words: "1 step", "200 steps".
 * @param {number} n
 */
export function formatSteps(n) {
  return `${n} step${n === 1 ? "" : "s"}`;
}

/**
 * One restart inside the application (an entry of a task's `restart_log`), in words:
 * "restart 1: preempted (exit status -102) at step 1200, resumed at step 1000: 200 steps lost".
 * @param {Record<string, any>} r
 * @returns {string}
 */
export function restartText(r) {
  const status = asCount(r.exit_status);
  const step = asCount(r.step);
  const resumed = asCount(r.resumed_step);
  const lost = asCount(r.steps_lost);
  let text = `restart ${asString(r.n)}: ${asString(r.cause) || "lost"}`;
  if (status !== null) text += ` (exit status ${status})`;
  if (step !== null) text += ` at step ${step}`;
  if (resumed !== null) text += `, resumed at step ${resumed}`;
  if (lost !== null) text += `: ${formatSteps(lost)} lost`;
  return text;
}
