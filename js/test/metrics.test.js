// The metrics table and chart (metrics.js), through the mounted panel.
import { describe, expect, it } from "vitest";

import { fakeModel } from "./fake-model.js";
import { usePanel } from "./panel.js";

const p = usePanel();

describe("metrics", () => {
  const METRICS = [
    { step: 100, loss: 0.9, accuracy: 0.5 },
    { step: 200, loss: 0.5, accuracy: 0.7, auc: 0.81234 },
    { step: 300, loss: 0.31, accuracy: 0.9, auc: 0.9 },
  ];

  it("shows the latest evaluation's values, one cell per key", () => {
    p.mount(fakeModel({ metrics: METRICS }));
    const table = p.q('[data-testid="metrics-table"]');
    const cells = [...table.querySelectorAll("td[data-metric]")];
    expect(cells.map((c) => c.getAttribute("data-metric"))).toEqual(["step", "loss", "accuracy", "auc"]);
    expect(cells.map((c) => c.textContent)).toEqual(["300", "0.31", "0.9", "0.9"]);
    expect(table.querySelectorAll('td[data-metric="loss"]').length).toBe(1);
  });

  it("draws loss and accuracy paths and redraws when metrics change", () => {
    const model = fakeModel({ metrics: METRICS.slice(0, 2) });
    p.mount(model);
    const svgEl = p.q('svg[data-testid="loss-chart"]');
    expect(svgEl.namespaceURI).toBe("http://www.w3.org/2000/svg");
    const loss = svgEl.querySelectorAll('path[data-series="loss"]');
    expect(loss.length).toBe(1);
    expect(svgEl.querySelectorAll('path[data-series="accuracy"]').length).toBe(1);
    const d1 = loss[0].getAttribute("d");
    expect(d1).toMatch(/^M[\d.]+ [\d.]+ L[\d.]+ [\d.]+$/);
    model.set("metrics", METRICS);
    const d2 = p.q('svg[data-testid="loss-chart"] path[data-series="loss"]').getAttribute("d");
    expect(d2).not.toBe(d1);
    expect(d2.split(/[ML]/).filter(Boolean).length).toBe(3);
    expect(p.q('td[data-metric="loss"]').textContent).toBe("0.31");
  });

  it("has no accuracy line without accuracy and no chart without loss", () => {
    const model = fakeModel({ metrics: [{ step: 1, loss: 2 }, { step: 2, loss: 1 }] });
    p.mount(model);
    expect(p.q('path[data-series="loss"]')).not.toBeNull();
    expect(p.q('path[data-series="accuracy"]')).toBeNull();
    model.set("metrics", [{ step: 1, accuracy: 0.3 }]);
    expect(p.q('[data-testid="loss-chart"]')).toBeNull();
    expect(p.q('td[data-metric="accuracy"]').textContent).toBe("0.3");
  });
});
