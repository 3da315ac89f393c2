// @vitest-environment node
// The build the Python side loads: as `_esm` one self-contained ES module (uPlot inside)
// whose default export renders, as `_css` uPlot's stylesheet and the panel's beside it.
// esbuild refuses to run inside vitest's jsdom environment, so this file runs in node and
// makes its own jsdom document.
import { describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { JSDOM } from "jsdom";

import { buildOptions, copyCss, css, scopeCss } from "../build.js";
import { fakeModel } from "./fake-model.js";

describe("bundle", () => {
  it("builds into one ES module whose only export is default, and it renders", async () => {
    const result = await build({ ...buildOptions, write: false, metafile: true, logLevel: "silent" });
    expect(result.outputFiles.length).toBe(1);
    expect(result.outputFiles[0].path).toBe(buildOptions.outfile);
    const outputs = Object.values(result.metafile.outputs);
    expect(outputs.length).toBe(1);
    expect(outputs[0].imports).toEqual([]);
    expect(outputs[0].exports).toEqual(["default"]);

    const dir = mkdtempSync(path.join(tmpdir(), "tfyarn-bundle-"));
    try {
      const file = path.join(dir, "widget.mjs");
      writeFileSync(file, result.outputFiles[0].text);
      const mod = await import(/* @vite-ignore */ pathToFileURL(file).href);
      const { document } = new JSDOM("<!doctype html><html><head></head><body></body></html>").window;
      const el = document.createElement("div");
      document.body.appendChild(el);
      const model = fakeModel({
        app: { app_id: "application_1_0001", state: "FINISHED", final_status: "SUCCEEDED", start_time: 1000, finish_time: 61_000 },
        tasks: [{ task: "worker:0", type: "worker", index: 0, state: "succeeded", gpu: true }],
        pending: [],
        metrics: [{ step: 1, loss: 1 }, { step: 2, loss: 0.5 }],
        failure: null,
        summary: null,
        error: "",
      });
      const stop = mod.default.render({ model, el });
      const root = el.querySelector(".tfyarn-panel");
      expect(root.getAttribute("data-app-id")).toBe("application_1_0001");
      expect(el.querySelector('[data-testid="task-row"]').getAttribute("data-state")).toBe("succeeded");
      expect(el.querySelector('[data-testid="gpu-badge"]')).not.toBeNull();
      expect(el.querySelector('[data-testid="elapsed"]').textContent).toBe("1m 00s");
      // uPlot is in the bundle; with no window here it cannot draw, and the chart says so.
      expect(result.outputFiles[0].text).toContain("u-legend");
      const chart = el.querySelector('[data-testid="metric-chart"][data-name="loss"]');
      expect(chart.getAttribute("data-points")).toBe("2");
      expect(chart.textContent).toMatch(/^chart unavailable: /);
      // the styles come through anywidget's _css, not from the bundle
      expect(document.querySelector("style")).toBeNull();
      stop();
      expect(model.totalListeners()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("writes uPlot's stylesheet, scoped to the panel, then the panel's, beside the bundle", async () => {
    expect(css.outfile).toBe(path.join(path.dirname(buildOptions.outfile), "widget.css"));
    const dir = mkdtempSync(path.join(tmpdir(), "tfyarn-css-"));
    try {
      const out = path.join(dir, "static", "widget.css");
      await copyCss(out);
      const text = readFileSync(out, "utf8");
      expect(text.endsWith(readFileSync(css.source, "utf8"))).toBe(true);
      expect(text).toContain(".tfyarn-panel .u-legend {");
      // anywidget adds the sheet to the whole page: every selector stays inside the panel
      const selectors = text.replace(/\/\*[\s\S]*?\*\//g, "").split("}").map((r) => r.split("{")[0]).filter((x) => x.trim())
        .flatMap((x) => x.split(",")).map((x) => x.trim());
      expect(selectors.length).toBeGreaterThan(80);
      expect(selectors.filter((x) => !x.startsWith(".tfyarn-panel"))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("scopes plain rules and refuses at-rules", () => {
    expect(scopeCss(".a, .b > c {x: 1;}.d {y: 2}", ".p")).toBe(".p .a, .p .b > c {x: 1;}\n.p .d {y: 2}");
    expect(() => scopeCss("@media print {.a {x: 1}}", ".p")).toThrow(/at-rules/);
  });
});
