// The metrics table, the per-metric uPlot charts and the metric chooser (metrics.js).
import { describe, expect, it } from "vitest";

import { fakeModel } from "./fake-model.js";
import { instances } from "./fake-uplot.js";
import { CSS_TEXT, usePanel } from "./panel.js";

const p = usePanel();

const METRICS = [
  { step: 100, loss: 0.9, accuracy: 0.5 },
  { step: 200, loss: 0.5, accuracy: 0.7, auc: 0.81234 },
  { step: 300, loss: 0.31, accuracy: 0.9, auc: 0.9, t: 1705311000 },
];

const charts = () => p.qa('[data-testid="metric-chart"]');
const live = () => instances.filter((u) => !u.destroyed);

describe("metrics", () => {
  it("shows the latest evaluation's values, one wrapping cell per key, without its time", () => {
    p.mount(fakeModel({ metrics: METRICS }));
    const table = p.q('[data-testid="metrics-table"]');
    const cells = [...table.querySelectorAll("[data-metric]")];
    expect(cells.map((c) => c.getAttribute("data-metric"))).toEqual(["step", "loss", "accuracy", "auc"]);
    expect(cells.map((c) => c.textContent)).toEqual(["300", "0.31", "0.9", "0.9"]);
    expect(cells.map((c) => c.previousElementSibling.textContent)).toEqual(["step", "loss", "accuracy", "auc"]);
    // cells wrap onto more lines instead of running off the panel
    expect(table.classList.contains("tfy-kv")).toBe(true);
    expect(CSS_TEXT).toMatch(/\.tfy-kv \{[^}]*flex-wrap: wrap/);
  });

  it("draws loss and accuracy by default, each its own chart and scale, with axes and a live legend", () => {
    p.mount(fakeModel({ metrics: METRICS }));
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["loss", "accuracy"]);
    expect(live().length).toBe(2);
    const [loss, acc] = live();
    expect(loss.data).toEqual([[100, 200, 300], [0.9, 0.5, 0.31]]);
    expect(acc.data).toEqual([[100, 200, 300], [0.5, 0.7, 0.9]]);
    expect(loss.opts.axes.map((a) => a.label)).toEqual(["step", "loss"]);
    expect(loss.opts.axes.every((a) => a.grid.stroke)).toBe(true);
    expect(loss.opts.legend.live).toBe(true);
    expect(loss.opts.series[1].value(null, 0.123456)).toBe("0.1235");
    expect(charts()[0].getAttribute("data-points")).toBe("3");
  });

  it("gives new data to the same chart instead of rebuilding it", () => {
    const model = fakeModel({ metrics: METRICS.slice(0, 2) });
    p.mount(model);
    const before = live()[0];
    model.set("metrics", METRICS);
    expect(live()[0]).toBe(before);
    expect(before.setDataCalls).toBe(1);
    expect(before.data[1]).toEqual([0.9, 0.5, 0.31]);
    expect(instances.length).toBe(2);
  });

  it("lets the user choose the metrics to draw, and keeps the choice across updates", () => {
    const model = fakeModel({ metrics: METRICS });
    p.mount(model);
    const boxes = p.qa('[data-testid="metric-chooser"] input[type="checkbox"]');
    expect(boxes.map((b) => [b.getAttribute("data-metric"), b.checked])).toEqual([["loss", true], ["accuracy", true], ["auc", false]]);
    const auc = boxes[2];
    auc.checked = true;
    auc.dispatchEvent(new Event("change"));
    const loss = boxes[0];
    loss.checked = false;
    loss.dispatchEvent(new Event("change"));
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["accuracy", "auc"]);
    expect(instances.find((u) => u.opts.series[1].label === "eval loss").destroyed).toBe(true);
    model.set("metrics", [...METRICS, { step: 400, loss: 0.2, accuracy: 0.95, auc: 0.93 }]);
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["accuracy", "auc"]);
    expect(live().find((u) => u.opts.series[1].label === "eval auc").data[1]).toEqual([0.81234, 0.9, 0.93]);
  });

  it("charts the first two metrics when there is no loss or accuracy, and nothing without metrics", () => {
    const model = fakeModel({ metrics: [{ step: 1, mae: 2, rmse: 3, r2: 0.1 }] });
    p.mount(model);
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["mae", "rmse"]);
    model.set("metrics", []);
    expect(p.q('[data-testid="metrics-table"]')).toBeNull();
    expect(live().length).toBe(0);
  });

  it("draws a chart on a log scale when asked, and only while every value is positive", () => {
    const model = fakeModel({ metrics: METRICS });
    p.mount(model);
    const box = p.q('[data-testid="metric-chart"][data-name="loss"] [data-testid="log-scale"]');
    expect(box.disabled).toBe(false);
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    const loss = live().find((u) => u.opts.series[1].label === "eval loss");
    expect(loss.opts.scales.y.distr).toBe(3);
    expect(loss.data[1]).toEqual([0.9, 0.5, 0.31]);
    model.set("metrics", [...METRICS, { step: 400, loss: -1 }]);
    expect(box.checked).toBe(false);
    expect(box.disabled).toBe(true);
    expect(live().find((u) => u.opts.series[1].label === "eval loss").opts.scales.y.distr).toBeUndefined();
  });

  it("keeps the choice of metrics and log scales when the view is rendered again", () => {
    const model = fakeModel({ metrics: METRICS });
    p.mount(model);
    const auc = p.q('[data-testid="metric-chooser"] input[data-metric="auc"]');
    auc.checked = true;
    auc.dispatchEvent(new Event("change"));
    const log = p.q('[data-testid="metric-chart"][data-name="loss"] [data-testid="log-scale"]');
    log.checked = true;
    log.dispatchEvent(new Event("change"));
    // the notebook re-displays the cell's output: the old view goes, a new one is rendered
    p.unmount();
    p.el.replaceChildren();
    p.mount(model);
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["loss", "accuracy", "auc"]);
    expect(p.q('[data-testid="metric-chart"][data-name="loss"] [data-testid="log-scale"]').checked).toBe(true);
    expect(live().find((u) => u.opts.series[1].label === "eval loss").opts.scales.y.distr).toBe(3);
    // another model starts from the defaults
    p.unmount();
    p.el.replaceChildren();
    p.mount(fakeModel({ metrics: METRICS }));
    expect(charts().map((c) => c.getAttribute("data-name"))).toEqual(["loss", "accuracy"]);
  });

  it("destroys its charts when the panel goes", () => {
    p.mount(fakeModel({ metrics: METRICS }));
    p.unmount();
    expect(instances.every((u) => u.destroyed)).toBe(true);
  });
});
