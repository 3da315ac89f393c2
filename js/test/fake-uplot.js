// A stand-in for uPlot in jsdom (which has no canvas and no matchMedia, both of which
// uPlot needs): it keeps the options and data it was given, and draws a `.uplot` box with
// a `.u-legend` so the tests can see where a chart went.

/** Every chart made since the last `reset()`. */
export const instances = [];

export function reset() {
  instances.length = 0;
}

export default class FakeUPlot {
  constructor(opts, data, target) {
    this.opts = opts;
    this.data = data;
    this.width = opts.width;
    this.height = opts.height;
    this.setDataCalls = 0;
    this.destroyed = false;
    this.root = target.ownerDocument.createElement("div");
    this.root.className = "uplot";
    const legend = target.ownerDocument.createElement("table");
    legend.className = "u-legend";
    this.root.appendChild(legend);
    target.appendChild(this.root);
    instances.push(this);
  }

  setData(data) {
    this.data = data;
    this.setDataCalls += 1;
  }

  setSize({ width, height }) {
    this.width = width;
    this.height = height;
  }

  destroy() {
    this.destroyed = true;
    this.root.remove();
  }
}
