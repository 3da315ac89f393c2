// The evaluation metrics: the latest evaluation's values (cells that wrap rather than
// run off the panel) and one small chart per metric by step, each on its
// own scale, with checkboxes choosing which metrics are drawn (kept while the panel lives).

import { asString, formatNumber, metricKeys, metricNames, seriesByStep, sortedMetrics } from "./format.js";
import { section } from "./dom.js";
import { COLOURS, createPlot } from "./plot.js";

/** Metrics drawn before the user chose: loss and accuracy, else the first two. */
export function defaultChoice(/** @type {string[]} */ names) {
  const preferred = names.filter((n) => n === "loss" || n === "accuracy");
  return new Set(preferred.length ? preferred : names.slice(0, 2));
}

/**
 * The latest evaluation as name/value cells that wrap onto more lines rather than run
 * off the panel's right edge.
 * @param {import("./dom.js").Builder} h
 * @param {Record<string, any>} latest the latest evaluation
 */
function table(h, latest) {
  const keys = metricKeys(latest).filter((k) => k !== "t");
  return h(
    "div",
    { class: "tfy-kv", "data-testid": "metrics-table" },
    ...keys.map((k) =>
      h(
        "div",
        { class: "tfy-kv-item" },
        h("span", { class: "tfy-kv-key", text: k }),
        h("span", { class: "tfy-mono tfy-kv-value", "data-metric": k, title: asString(latest[k]), text: formatNumber(latest[k]) }),
      ),
    ),
  );
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void, dispose(): void }}
 */
export function createMetrics(ctx) {
  const { h, read, keep } = ctx;
  const el = section(h, "metrics");
  const head = h("div", { class: "tfy-metrics-head" });
  const tableBox = h("div", { class: "tfy-metrics-latest" });
  const chooser = h("div", { class: "tfy-chooser", "data-testid": "metric-chooser" });
  const charts = h("div", { class: "tfy-charts", "data-testid": "metric-charts" });
  /** The metrics drawn; null until the user or the first data chose. @type {Set<string> | null} */
  let chosen = keep.get("metrics-chosen") ?? null;
  /** @type {Map<string, ReturnType<typeof createPlot>>} */
  const plots = new Map();
  let known = "";

  /** @param {string[]} names */
  function drawChooser(names) {
    chooser.replaceChildren(
      h("span", { class: "tfy-muted", text: "charts: " }),
      ...names.map((n) =>
        h(
          "label",
          null,
          h("input", {
            type: "checkbox",
            "data-metric": n,
            checked: chosen?.has(n),
            onchange: (/** @type {Event} */ e) => {
              const on = /** @type {HTMLInputElement} */ (e.target).checked;
              if (on) chosen?.add(n);
              else chosen?.delete(n);
              update();
            },
          }),
          ` ${n}`,
        ),
      ),
    );
  }

  /** @param {Record<string, any>[]} rows @param {string[]} names */
  function drawCharts(rows, names) {
    const wanted = names.filter((n) => chosen?.has(n));
    for (const [n, p] of plots) {
      if (!wanted.includes(n)) {
        p.destroy();
        p.el.remove();
        plots.delete(n);
      }
    }
    wanted.forEach((n) => {
      let p = plots.get(n);
      if (!p) {
        p = createPlot(h, { testid: "metric-chart", name: n, yLabel: n, series: [{ label: `eval ${n}`, colour: COLOURS[names.indexOf(n) % COLOURS.length] }], keep });
        plots.set(n, p);
      }
      p.setData(seriesByStep(rows, n));
    });
    charts.replaceChildren(...wanted.map((n) => /** @type {ReturnType<typeof createPlot>} */ (plots.get(n)).el));
  }

  function dispose() {
    for (const p of plots.values()) p.destroy();
    plots.clear();
  }

  function update() {
    const rows = sortedMetrics(read.get("metrics"));
    if (rows.length === 0) {
      dispose();
      el.replaceChildren();
      return;
    }
    if (!el.firstChild) el.append(head, tableBox, chooser, charts);
    const names = metricNames(rows);
    if (chosen === null && names.length) {
      chosen = defaultChoice(names);
      keep.set("metrics-chosen", chosen);
    }
    head.replaceChildren(h("h4", { class: "tfy-metrics-title", text: `Evaluation (${rows.length})` }));
    tableBox.replaceChildren(table(h, rows[rows.length - 1]));
    if (names.join(",") !== known) drawChooser(names);
    known = names.join(",");
    drawCharts(rows, names);
  }

  return { el, update, dispose };
}
