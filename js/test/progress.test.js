// Live training progress (progress.js): bars, rate, time left, loss, the train-loss curve.
import { describe, expect, it } from "vitest";

import { MAX_CURVES, MAX_ROWS, applyHistory, trainers } from "../src/progress.js";
import widget from "../src/widget.js";
import { fakeModel } from "./fake-model.js";
import { instances } from "./fake-uplot.js";
import { RUNNING_APP, usePanel } from "./panel.js";

const p = usePanel();

const CHIEF = { step: 1200, max_steps: 6000, steps_per_s: 40, loss: 0.42, t: 1_705_311_030, history: [[100, 0.9], [600, 0.6], [1200, 0.42]] };

describe("progress", () => {
  it("shows step of max steps as a bar, the rate, the time left and the loss", () => {
    p.mount(fakeModel({ app: RUNNING_APP, progress: { "chief:0": CHIEF } }));
    const row = p.q('[data-testid="progress-row"][data-task="chief:0"]');
    expect(row.getAttribute("data-step")).toBe("1200");
    expect(row.getAttribute("data-max-steps")).toBe("6000");
    expect(row.querySelector('[data-testid="progress-text"]').textContent).toBe("step 1200 / 6000 (20%)");
    expect(row.querySelector(".tfy-bar-fill").getAttribute("style")).toBe("width:20.0%");
    expect(row.querySelector('[data-testid="progress-rate"]').textContent).toBe("40 steps/s");
    const eta = row.querySelector('[data-testid="progress-eta"]');
    expect(eta.getAttribute("data-eta-s")).toBe("120");
    expect(eta.textContent).toBe("2m 00s left");
    expect(row.querySelector('[data-testid="progress-loss"]').textContent).toBe("loss 0.42");
  });

  it("grows the train-loss curve on the same chart as reports come", () => {
    const model = fakeModel({ app: RUNNING_APP, progress: { "chief:0": CHIEF } });
    p.mount(model);
    const chart = p.q('[data-testid="train-loss-chart"]');
    expect(chart.getAttribute("data-points")).toBe("3");
    const u = instances[0];
    expect(u.data).toEqual([[100, 600, 1200], [0.9, 0.6, 0.42]]);
    expect(u.opts.series.map((s) => s.label)).toEqual(["step", "chief:0"]);
    expect(u.opts.scales.y.distr).toBe(3); // log scale, the loss being positive
    model.set("progress", { "chief:0": { ...CHIEF, step: 1800, history: [...CHIEF.history, [1800, 0.35]] } });
    expect(instances.length).toBe(1);
    expect(u.data[0]).toEqual([100, 600, 1200, 1800]);
    expect(p.q('[data-testid="train-loss-chart"]').getAttribute("data-points")).toBe("4");
    expect(p.q('[data-testid="progress-text"]').textContent).toBe("step 1800 / 6000 (30%)");
  });

  it("without max_steps shows the step alone and no time left; no section before any report", () => {
    const model = fakeModel({ app: RUNNING_APP, progress: {} });
    p.mount(model);
    expect(p.q(".tfy-progress-section").children.length).toBe(0);
    model.set("progress", { "chief:0": { step: 50, max_steps: null, steps_per_s: 5, loss: null }, "evaluator:0": { rss_bytes: 1 } });
    expect(p.qa('[data-testid="progress-row"]').length).toBe(1);
    expect(p.q('[data-testid="progress-text"]').textContent).toBe("step 50");
    expect(p.q(".tfy-bar").hasAttribute("data-indeterminate")).toBe(true);
    expect(p.q('[data-testid="progress-eta"]').textContent).toBe("");
    expect(p.q('[data-testid="train-loss-chart"]')).toBeNull();
  });

  it("orders trainers chief first, shows a bounded number of rows and curves, and sums up the rest", () => {
    const progress = { "chief:0": CHIEF };
    for (let i = 0; i < 20; i += 1) progress[`worker:${i}`] = { step: 1000 + i, steps_per_s: 2, history: [[1000 + i, 1]] };
    p.mount(fakeModel({ app: RUNNING_APP, progress }));
    expect(trainers(progress)[1].task).toBe("worker:0");
    const rows = p.qa('[data-testid="progress-row"]');
    expect(rows.length).toBe(MAX_ROWS);
    expect(rows[0].getAttribute("data-task")).toBe("chief:0");
    expect(p.q('[data-testid="progress-rest"]').textContent).toBe("+13 more trainers: steps 1007–1019, 26 steps/s in all");
    expect(instances[0].opts.series.length).toBe(MAX_CURVES + 1);
  });

  it("asks for the histories as a view starts and grows the curve from history messages", () => {
    const model = fakeModel({ app: RUNNING_APP, progress: { "chief:0": { ...CHIEF, history: undefined } } });
    const host = document.createElement("div");
    document.body.append(host);
    const cleanup = widget.render({ model, el: host });
    try {
      expect(model.sent).toEqual([{ type: "history-sync" }]);
      expect(host.querySelector('[data-testid="train-loss-chart"]')).toBeNull();
      model.emitCustom({ type: "history", tasks: { "chief:0": { from: 0, points: CHIEF.history } } });
      const chart = () => host.querySelector('[data-testid="train-loss-chart"]');
      expect(chart().getAttribute("data-points")).toBe("3");
      model.emitCustom({ type: "history", tasks: { "chief:0": { from: 3, points: [[1800, 0.35]] } } });
      expect(chart().getAttribute("data-points")).toBe("4");
      const u = instances[instances.length - 1];
      expect(u.data).toEqual([[100, 600, 1200, 1800], [0.9, 0.6, 0.42, 0.35]]);
      // the last point replaced, as the Python side does between two kept points
      model.emitCustom({ type: "history", tasks: { "chief:0": { from: 3, points: [[1900, 0.3]] } } });
      expect(u.data[0]).toEqual([100, 600, 1200, 1900]);
      // a new figure without a history keeps the curve drawn
      model.set("progress", { "chief:0": { ...CHIEF, step: 1900, history: undefined } });
      expect(chart().getAttribute("data-points")).toBe("4");
    } finally {
      cleanup();
      host.remove();
    }
  });

  it("applies a history change in place, skips one past a series' end, and twice is once", () => {
    const h = new Map([["chief:0", [[1, 0.9], [2, 0.8]]]]);
    expect(applyHistory(h, { "chief:0": { from: 5, points: [[6, 0.1]] } })).toBe(false);
    expect(h.get("chief:0")).toEqual([[1, 0.9], [2, 0.8]]);
    const change = { "chief:0": { from: 1, points: [[3, 0.7]] }, "worker:0": { from: 0, points: [[1, 1]] } };
    expect(applyHistory(h, change)).toBe(true);
    applyHistory(h, change);
    expect(Object.fromEntries(h)).toEqual({ "chief:0": [[1, 0.9], [3, 0.7]], "worker:0": [[1, 1]] });
    expect(applyHistory(h, { "chief:0": { from: "x", points: [] } })).toBe(false);
  });
});
