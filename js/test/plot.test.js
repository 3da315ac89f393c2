// The uPlot wrapper (plot.js): options, creation on first data, resizing, failure.
import { describe, expect, it } from "vitest";

import { builder } from "../src/dom.js";
import { createPlot, plotOptions } from "../src/plot.js";
import { instances } from "./fake-uplot.js";

const h = builder(document);
const SPEC = { testid: "x-chart", name: "loss", yLabel: "loss", series: [{ label: "chief:0" }, { label: "worker:0", colour: "#123456" }] };

describe("plot", () => {
  it("has a step axis, a labelled y axis with a grid, a live legend and a read-out per series", () => {
    const o = plotOptions(SPEC, 300);
    expect(o.width).toBe(300);
    expect(o.scales.x.time).toBe(false);
    expect(o.axes.map((a) => a.label)).toEqual(["step", "loss"]);
    expect(o.axes[1].values(null, [0.5, 1e-7, 0.000025, 0, 2e6, null])).toEqual(["0.5", "1e-7", "2.5e-5", "0", "2e+6", ""]);
    expect(o.legend.live).toBe(true);
    expect(o.series.map((s) => s.label)).toEqual(["step", "chief:0", "worker:0"]);
    expect(o.series[2].stroke).toBe("#123456");
    expect(o.series[1].value(null, null)).toBe("—");
    expect(o.series.slice(1).every((s) => s.spanGaps)).toBe(true);
    expect(o.axes[1].filter).toBeUndefined();
  });

  it("on a log scale keeps ticks and grid lines at powers of ten", () => {
    const o = plotOptions(SPEC, 300, true);
    expect(o.scales.y.distr).toBe(3);
    expect(o.axes[1].filter(null, [0.001, 0.002, 0.005, 0.01, 0.1, 1, 3])).toEqual([0.001, null, null, 0.01, 0.1, 1, null]);
    // within one decade the 1-2-5 ticks, or the axis would have one label or a crowded top
    expect(o.axes[1].filter(null, [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1])).toEqual([0.2, null, null, 0.5, null, null, null, null, 1]);
  });

  it("creates the chart on its first point, then only passes new data", () => {
    const p = createPlot(h, SPEC);
    document.body.append(p.el);
    p.setData([[], [], []]);
    expect(instances.length).toBe(0);
    expect(p.el.getAttribute("data-points")).toBe("0");
    p.setData([[1], [0.5], [null]]);
    p.setData([[1, 2], [0.5, 0.4], [null, 0.7]]);
    expect(instances.length).toBe(1);
    expect(instances[0].data[2]).toEqual([null, 0.7]);
    expect(p.el.getAttribute("data-points")).toBe("2");
    expect(p.el.querySelector(".uplot")).not.toBeNull();
    p.destroy();
    expect(instances[0].destroyed).toBe(true);
    p.el.remove();
  });

  it("says so when the chart cannot be drawn", () => {
    const p = createPlot(h, { ...SPEC, series: "not a list" });
    p.setData([[1], [1]]);
    expect(p.el.textContent).toMatch(/^chart unavailable: /);
    p.setData([[1, 2], [1, 2]]);
    expect(instances.length).toBe(0);
  });
});
