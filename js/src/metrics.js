// The evaluation metrics: a table of the latest evaluation's values and a chart of loss
// (and accuracy, when reported) by step, each series scaled to its own range.

import { asString, chartSeries, formatNumber, metricKeys, sortedMetrics } from "./format.js";
import { section, svg } from "./dom.js";

/**
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} latest the latest evaluation
 */
function table(h, latest) {
  const keys = metricKeys(latest);
  return h(
    "table",
    { class: "tfy-metrics-table", "data-testid": "metrics-table" },
    h("thead", null, h("tr", null, ...keys.map((k) => h("th", { scope: "col", text: k })))),
    h(
      "tbody",
      null,
      h("tr", null, ...keys.map((k) => h("td", { class: "tfy-mono", "data-metric": k, title: asString(latest[k]), text: formatNumber(latest[k]) }))),
    ),
  );
}

/**
 * The chart's SVG: one path per series and the first and last step under it.
 * @param {Document} doc
 * @param {import("./format.js").Chart} chart
 */
function chartSvg(doc, chart) {
  const s = svg(doc, "svg", {
    class: "tfy-chart",
    "data-testid": "loss-chart",
    viewBox: `0 0 ${chart.width} ${chart.height}`,
    preserveAspectRatio: "none",
    role: "img",
    "aria-label": "loss by step",
  });
  for (const series of chart.series) {
    s.appendChild(svg(doc, "path", { d: series.d, "data-series": series.series, "vector-effect": "non-scaling-stroke" }));
  }
  const stepLabel = (/** @type {number} */ x, /** @type {string} */ anchor, /** @type {number} */ step) => {
    const t = svg(doc, "text", { x, y: chart.height - 2, "text-anchor": anchor });
    t.textContent = `step ${formatNumber(step)}`;
    return t;
  };
  s.appendChild(stepLabel(4, "start", chart.minStep));
  if (chart.maxStep !== chart.minStep) s.appendChild(stepLabel(chart.width - 4, "end", chart.maxStep));
  return s;
}

/**
 * The chart with its legend, or null when there is no loss to draw.
 * @param {import("./model.js").Ctx} ctx
 * @param {Record<string, any>[]} rows evaluations by step
 */
function chartBox({ doc, h }, rows) {
  const chart = chartSeries(rows);
  if (!chart) return null;
  const legend = h(
    "div",
    { class: "tfy-legend", "data-testid": "chart-legend" },
    ...chart.series.map((se) =>
      h(
        "span",
        null,
        h("span", { class: "tfy-swatch", "data-series": se.series }),
        `${se.series} ${formatNumber(se.first)} → ${formatNumber(se.last)} (${formatNumber(se.min)}–${formatNumber(se.max)})`,
      ),
    ),
  );
  return h("div", { class: "tfy-chart-box" }, chartSvg(doc, chart), legend);
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createMetrics(ctx) {
  const { h, read } = ctx;
  const el = section(h, "metrics");
  function update() {
    const rows = sortedMetrics(read.get("metrics"));
    if (rows.length === 0) {
      el.replaceChildren();
      return;
    }
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-metrics" },
        h("div", null, h("h4", { class: "tfy-metrics-title", text: `Evaluation (${rows.length})` }), table(h, rows[rows.length - 1])),
        chartBox(ctx, rows),
      ),
    );
  }
  return { el, update };
}
