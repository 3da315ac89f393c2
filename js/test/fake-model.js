// A fake anywidget model shared by the tests (jsdom and node alike: no DOM here).

/** The panel's traits when empty, as the Python side starts them. */
export const EMPTY_TRAITS = {
  app: {},
  tasks: [],
  pending: [],
  capacity: null,
  progress: {},
  metrics: [],
  failure: null,
  summary: null,
  tensorboard_url: "",
  error: "",
};

/**
 * A Backbone-like get/set that fires `change:<name>`, on/off, send (recorded),
 * save_changes, and `emitCustom` to play a Python → JS message.
 * @param {Record<string, any>} [initial] traits that differ from EMPTY_TRAITS
 */
export function fakeModel(initial = {}) {
  const data = { ...EMPTY_TRAITS, ...initial };
  /** @type {Map<string, Set<Function>>} */
  const handlers = new Map();
  const sent = [];
  let saves = 0;
  const model = {
    get: (k) => data[k],
    set(k, v) {
      data[k] = v;
      for (const cb of [...(handlers.get(`change:${k}`) || [])]) cb(model, v);
    },
    on(ev, cb) {
      if (!handlers.has(ev)) handlers.set(ev, new Set());
      handlers.get(ev).add(cb);
    },
    off(ev, cb) {
      if (!ev) handlers.clear();
      else if (!cb) handlers.delete(ev);
      else handlers.get(ev)?.delete(cb);
    },
    send(msg) {
      sent.push(msg);
    },
    save_changes() {
      saves += 1;
    },
    // test helpers
    sent,
    get saves() {
      return saves;
    },
    listenerCount(ev) {
      return handlers.get(ev)?.size ?? 0;
    },
    totalListeners() {
      let n = 0;
      for (const s of handlers.values()) n += s.size;
      return n;
    },
    emitCustom(msg) {
      for (const cb of [...(handlers.get("msg:custom") || [])]) cb(msg, []);
    },
  };
  return model;
}
