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

/**
 * @typedef {{ series: string, d: string, min: number, max: number, first: number, last: number, points: number }} Series
 * @typedef {{ width: number, height: number, minStep: number, maxStep: number, series: Series[] }} Chart
 */

/**
 * SVG path data for `loss` and (when present) `accuracy` by step, each scaled to its
 * own range. Null when no entry has a finite loss.
 * @param {unknown} metrics
 * @param {{width?: number, height?: number, pad?: number}} [size]
 * @returns {Chart | null}
 */
export function chartSeries(metrics, size = {}) {
  const width = size.width ?? 360;
  const height = size.height ?? 120;
  const pad = size.pad ?? 8;
  const rows = sortedMetrics(metrics);
  const xs = rows.map((m, i) =>
    Number.isFinite(Number(m.step)) && m.step !== null ? Number(m.step) : i,
  );
  const finite = (/** @type {unknown} */ v) => typeof v === "number" && Number.isFinite(v);
  if (!rows.some((m) => finite(m.loss))) return null;
  const minStep = Math.min(...xs);
  const maxStep = Math.max(...xs);
  const innerW = width - 2 * pad;
  const innerH = height - 2 * pad;
  const sx = (/** @type {number} */ x) =>
    maxStep === minStep ? pad + innerW / 2 : pad + ((x - minStep) / (maxStep - minStep)) * innerW;
  /** @type {Series[]} */
  const series = [];
  for (const key of ["loss", "accuracy"]) {
    const vals = rows.map((m) => m[key]).filter(finite);
    if (vals.length === 0) continue;
    const min = Math.min(...vals);
    const max = Math.max(...vals);
    const sy = (/** @type {number} */ v) =>
      max === min ? pad + innerH / 2 : pad + (1 - (v - min) / (max - min)) * innerH;
    let d = "";
    let pen = false;
    rows.forEach((m, i) => {
      const v = m[key];
      if (!finite(v)) {
        pen = false;
        return;
      }
      const x = Math.round(sx(xs[i]) * 10) / 10;
      const y = Math.round(sy(v) * 10) / 10;
      d += `${d ? " " : ""}${pen ? "L" : "M"}${x} ${y}`;
      pen = true;
    });
    // A lone point draws as a dot (round line caps on a zero-length segment).
    if (vals.length === 1) d += " l0 0";
    series.push({ series: key, d, min, max, first: vals[0], last: vals[vals.length - 1], points: vals.length });
  }
  return { width, height, minStep, maxStep, series };
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
