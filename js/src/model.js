// Reading the anywidget model: every trait read is defensive, since a half-synced model
// may throw or hold nulls, and what "ended" and "elapsed" mean is decided once, here.

import { TERMINAL_APP_STATES, asObject, asString, asTime } from "./format.js";

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

/**
 * @typedef {{
 *   get(name: string): any,
 *   app(): Record<string, any>,
 *   summary(): Record<string, any> | null,
 *   ended(): boolean,
 *   elapsedMs(): number | null,
 * }} Reader
 */

/**
 * @param {Model} model
 * @returns {Reader}
 */
export function reader(model) {
  /** @param {string} name */
  const get = (name) => {
    try {
      return model.get(name);
    } catch {
      return undefined;
    }
  };
  const app = () => asObject(get("app"));
  const summary = () => {
    const s = get("summary");
    return s && typeof s === "object" && !Array.isArray(s) ? s : null;
  };
  const ended = () => TERMINAL_APP_STATES.has(asString(app().state)) || summary() !== null;

  /** Milliseconds elapsed since the application started, or null when unknown. */
  const elapsedMs = () => {
    const a = app();
    const start = asTime(a.start_time);
    if (!start) return null;
    if (ended()) {
      const finish = asTime(a.finish_time);
      if (finish) return finish - start;
      const dur = Number(asObject(summary()).duration_s);
      if (Number.isFinite(dur)) return dur * 1000;
    }
    return Date.now() - start;
  };
  return { get, app, summary, ended, elapsedMs };
}

/**
 * A `send` that reports a failed send through `onError` instead of throwing.
 * @param {Model} model
 * @param {(text: string) => void} onError
 */
export function sender(model, onError) {
  return (/** @type {Record<string, any>} */ msg) => {
    try {
      model.send(msg);
    } catch (e) {
      onError(`Could not send ${msg.type}: ${e instanceof Error ? e.message : e}`);
    }
  };
}

/** What the user chose in a panel, by run (application id) or, before one, by model. */
const memories = new WeakMap();
/** @type {Map<string, Map<string, any>>} */
const byRun = new Map();
/** Runs remembered at most; the oldest is forgotten first. */
const MAX_RUNS = 32;

/**
 * The user's choices in the views of a run (charts shown, groups opened, log scales, logs
 * shown): the same Map for every view of it, so that a view rendered again, as when the
 * notebook updates the cell's display, shows what the user had chosen. anywidget hands
 * each view its own model proxy, so views are matched by the run's application id; a
 * model with no id yet keeps its own.
 * @param {Model} model
 * @returns {Map<string, any>}
 */
export function memoryOf(model) {
  let id = "";
  try {
    id = asString(asObject(model.get("app")).app_id);
  } catch {
    id = "";
  }
  if (id) {
    let m = byRun.get(id);
    if (!m) {
      m = new Map();
      byRun.set(id, m);
      if (byRun.size > MAX_RUNS) byRun.delete(/** @type {string} */ (byRun.keys().next().value));
    }
    return m;
  }
  let m = memories.get(model);
  if (!m) {
    m = new Map();
    memories.set(model, m);
  }
  return m;
}

/** Forgets every run's choices (for tests). */
export function forgetRuns() {
  byRun.clear();
}

/**
 * A Set kept in `keep` under `key`, made on first use.
 * @param {Map<string, any>} keep
 * @param {string} key
 * @param {() => Set<string>} [make]
 * @returns {Set<string>}
 */
export function keptSet(keep, key, make = () => new Set()) {
  if (!keep.has(key)) keep.set(key, make());
  return keep.get(key);
}

/**
 * What every section is made with: the element builder, the model reader, `send`, and the
 * user's choices that outlive one view (`memoryOf`).
 * @typedef {{
 *   doc: Document,
 *   h: import("./dom.js").Builder,
 *   read: Reader,
 *   send: (msg: Record<string, any>) => void,
 *   keep: Map<string, any>,
 * }} Ctx
 */
