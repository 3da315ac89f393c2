// The panel's bundle mounted on a plain page with a stand-in anywidget model, for the
// browser tests that need real Chromium (canvas, layout) but no Jupyter: set up by
// tests/browser/test_panel_render.py through page.evaluate(HARNESS, bundleSource).
async (src) => {
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const widget = (await import(url)).default;
  const handlers = new Map();
  const data = {
    app: {}, tasks: [], pending: [], capacity: null, progress: {}, metrics: [],
    failure: null, summary: null, tensorboard_url: "", error: "",
  };
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
      handlers.get(ev)?.delete(cb);
    },
    send() {},
    save_changes() {},
  };
  const host = document.getElementById("host");
  const cleanup = widget.render({ model, el: host });
  // One update as the Python side sends it: every trait of a status, then a layout.
  window.tfyUpdate = (traits) => {
    const t0 = performance.now();
    for (const [k, v] of Object.entries(traits)) model.set(k, v);
    void host.offsetHeight;
    return performance.now() - t0;
  };
  window.tfyCleanup = cleanup;
  return true;
}
