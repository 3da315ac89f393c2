// Line charts of figures by step, drawn by uPlot (canvas): axes with a grid, and a live
// legend under the plot that reads out the values under the mouse. A chart is created on
// its first data and then only given new data (uPlot rescales), so a growing curve costs
// one redraw per update, not a rebuild.

import uPlot from "uplot";

import { formatNumber } from "./format.js";

/** Series colours, distinct on light and dark backgrounds. */
export const COLOURS = ["#1e6fd0", "#e8710a", "#2e7d32", "#c2185b", "#6a1b9a", "#00838f", "#9e9d24", "#5d4037"];

const AXIS = "#888";
const GRID = "rgba(128, 128, 128, 0.25)";

/**
 * @typedef {{ label: string, colour?: string }} SeriesSpec
 * @typedef {{
 *   testid: string,
 *   name: string,
 *   yLabel: string,
 *   series: SeriesSpec[],
 *   width?: number,
 *   height?: number,
 *   log?: boolean,
 *   keep?: Map<string, any>,
 * }} PlotSpec
 */

/** @param {number} v */
const decade = (v) => v > 0 && Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9;

/** @param {number} v a positive number: its leading digit */
const mantissa = (v) => Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9));

/**
 * Log-axis splits: only the powers of ten when there are two or more of them, else the
 * 1-2-5 ones (a log scale within one decade crowds its top with 0.7, 0.8, 0.9).
 * @param {number[]} splits
 */
export function decadesOnly(splits) {
  if (splits.filter(decade).length >= 2) return splits.map((v) => (decade(v) ? v : null));
  return splits.map((v) => (v > 0 && [1, 2, 5].includes(mantissa(v)) ? v : null));
}

/**
 * A y tick's label: short, so that it leaves room for the axis title ("1e-6", not
 * "0.000001").
 * @param {number | null} v
 */
export function tickLabel(v) {
  if (v === null || v === undefined) return "";
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential() : formatNumber(v);
}

/** @param {any} _u @param {number | null} v */
const readOut = (_u, v) => (v === null || v === undefined ? "—" : formatNumber(v));

/**
 * uPlot's options for `spec`: a step x axis, one y scale for all series (logarithmic
 * when `log`), a live legend.
 * @param {PlotSpec} spec
 * @param {number} width
 * @param {boolean} [log]
 */
export function plotOptions(spec, width, log = false) {
  const axis = (/** @type {string} */ label) => ({
    label,
    stroke: AXIS,
    grid: { stroke: GRID, width: 1, ...(log && label !== "step" ? { filter: logFilter } : {}) },
    ticks: { stroke: GRID, width: 1, ...(log && label !== "step" ? { filter: logFilter } : {}) },
    labelSize: 18,
    font: "11px system-ui, sans-serif",
    labelFont: "11px system-ui, sans-serif",
  });
  const logFilter = (/** @type {any} */ _u, /** @type {number[]} */ splits) => decadesOnly(splits);
  // Off the plot, the legend reads out the latest values rather than dashes.
  const latest = (/** @type {any} */ u) => {
    const n = u.data?.[0]?.length ?? 0;
    if (n > 0 && (u.cursor.idx === null || u.cursor.idx === undefined)) u.setLegend({ idx: n - 1 });
  };
  return {
    width,
    height: spec.height ?? 200,
    scales: { x: { time: false }, y: log ? { distr: 3 } : {} },
    legend: { live: true },
    hooks: { ready: [latest], setData: [latest], setCursor: [latest] },
    cursor: { drag: { x: true, y: false } },
    axes: [
      { ...axis("step"), size: 32, labelSize: 14, labelGap: 0 },
      {
        ...axis(spec.yLabel),
        size: 56,
        values: (/** @type {any} */ _u, /** @type {number[]} */ vals) => vals.map(tickLabel),
        // On a log scale spanning decades, ticks and grid lines at the powers of ten only.
        ...(log ? { filter: logFilter } : {}),
      },
    ],
    series: [
      { label: "step", value: readOut },
      ...spec.series.map((s, i) => ({
        label: s.label,
        stroke: s.colour || COLOURS[i % COLOURS.length],
        width: 2,
        spanGaps: true,
        points: { size: 5 },
        value: readOut,
      })),
    ],
  };
}

/** @param {(number | null)[][]} data */
const allPositive = (data) => data.slice(1).every((ys) => ys.every((y) => y === null || y > 0));

/**
 * A chart box (`data-testid` = spec.testid) that draws `setData`'s data; `data-points`
 * says how many x values it holds. Where no canvas can be drawn (no DOM), it says so.
 * @param {import("./dom.js").Builder} h
 * @param {PlotSpec} spec
 */
export function createPlot(h, spec) {
  const host = h("div", { class: "tfy-plot-area" });
  const logBox = /** @type {HTMLInputElement} */ (
    h("input", {
      type: "checkbox",
      "data-testid": "log-scale",
      checked: spec.keep?.get(`log:${spec.name}`) ?? spec.log === true,
      onchange: () => {
        spec.keep?.set(`log:${spec.name}`, logBox.checked);
        redraw();
      },
    })
  );
  const logLabel = h("label", { class: "tfy-log-toggle", title: "logarithmic y axis (positive values only)" }, logBox, " log scale");
  const el = h("div", { class: "tfy-plot", "data-testid": spec.testid, "data-name": spec.name, "data-points": "0" }, host, logLabel);
  /** @type {any} */
  let chart = null;
  let broken = false;
  /** @type {(number | null)[][]} */
  let last = [[]];
  /** @type {ResizeObserver | null} */
  let observer = null;

  const width = () => Math.max(220, Math.min(spec.width ?? 380, el.clientWidth || spec.width || 380));

  function create(/** @type {any[]} */ data) {
    try {
      chart = new uPlot(plotOptions(spec, width(), logBox.checked), data, host);
    } catch (e) {
      broken = true;
      host.textContent = `chart unavailable: ${e instanceof Error ? e.message : e}`;
      return;
    }
    if (!observer && typeof ResizeObserver === "function") {
      observer = new ResizeObserver(() => {
        const w = width();
        if (chart && Math.abs(w - chart.width) > 4) chart.setSize({ width: w, height: chart.height });
      });
      observer.observe(el);
    }
  }

  /** The chart again, with the scale the checkbox says. */
  function redraw() {
    chart?.destroy();
    chart = null;
    if (!broken && last[0]?.length) create(last);
  }

  /** @param {(number | null)[][]} data uPlot data: xs, then one array per series */
  function setData(data) {
    last = data;
    el.setAttribute("data-points", String(data[0]?.length ?? 0));
    const positive = allPositive(data);
    logBox.disabled = !positive;
    if (logBox.checked && !positive) {
      logBox.checked = false;
      redraw();
      return;
    }
    if (broken || !data[0]?.length) return;
    if (chart) chart.setData(data);
    else create(data);
  }

  function destroy() {
    observer?.disconnect();
    observer = null;
    if (chart) chart.destroy();
    chart = null;
  }

  return { el, setData, destroy, get chart() { return chart; } };
}
