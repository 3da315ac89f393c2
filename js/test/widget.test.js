// The panel as a whole (widget.js) against a fake anywidget model in jsdom: shape, clocks, cleanup.
import { describe, expect, it, vi } from "vitest";

import widget from "../src/widget.js";
import { fakeModel } from "./fake-model.js";
import { CSS_TEXT, RUNNING_APP, T0, task, usePanel } from "./panel.js";

const p = usePanel();

describe("module shape", () => {
  it("has a default export with render returning a cleanup function", () => {
    expect(typeof widget.render).toBe("function");
    const ret = widget.render({ model: fakeModel(), el: p.el });
    expect(typeof ret).toBe("function");
    ret();
  });

  it("injects no stylesheet itself: widget.css, scoped to the panel, comes through _css", () => {
    p.mount(fakeModel());
    const other = document.createElement("div");
    document.body.appendChild(other);
    const c2 = widget.render({ model: fakeModel(), el: other });
    expect(document.querySelectorAll("style").length).toBe(0);
    expect(CSS_TEXT).toContain(".tfyarn-panel");
    // anywidget adds the sheet to the whole page: every selector must stay inside the panel
    const selectors = CSS_TEXT.replace(/\/\*[\s\S]*?\*\//g, "")
      .split("}")
      .map((rule) => rule.split("{")[0])
      .filter((sel) => sel.trim())
      .flatMap((sel) => sel.split(","))
      .map((sel) => sel.trim());
    expect(selectors.length).toBeGreaterThan(50);
    expect(selectors.filter((sel) => !sel.startsWith(".tfyarn-panel"))).toEqual([]);
    c2();
    other.remove();
  });

  it("renders an empty model without throwing, with nulls everywhere", () => {
    const model = fakeModel({ app: null, tasks: null, pending: null, metrics: null, error: null });
    const root = p.mount(model);
    expect(root).not.toBeNull();
    expect(root.getAttribute("data-app-id")).toBe("");
    expect(p.qa('[data-testid="task-row"]').length).toBe(0);
    expect(p.q('[data-testid="metrics-table"]')).toBeNull();
    expect(p.q('[data-testid="pending"]')).toBeNull();
    expect(p.q('[data-testid="error"]')).toBeNull();
    expect(p.q('[data-testid="elapsed"]').textContent).toBe("—");
  });
});

describe("elapsed time", () => {
  it("advances every second while running and stops after cleanup", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 5000);
    p.mount(fakeModel({ app: RUNNING_APP }));
    const elapsed = p.q('[data-testid="elapsed"]');
    expect(elapsed.textContent).toBe("5s");
    vi.advanceTimersByTime(3000);
    expect(elapsed.textContent).toBe("8s");
    vi.advanceTimersByTime(60_000);
    expect(elapsed.textContent).toBe("1m 08s");
    expect(elapsed.getAttribute("data-elapsed-s")).toBe("68");
    p.unmount();
    vi.advanceTimersByTime(10_000);
    expect(elapsed.textContent).toBe("1m 08s");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("shows start-to-finish once ended and stops ticking", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 5000);
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(vi.getTimerCount()).toBe(1);
    model.set("app", { ...RUNNING_APP, state: "FINISHED", final_status: "SUCCEEDED", finish_time: T0 + 125_000 });
    const elapsed = p.q('[data-testid="elapsed"]');
    expect(elapsed.textContent).toBe("2m 05s");
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(p.q('[data-testid="elapsed"]').textContent).toBe("2m 05s");
  });

  it("also advances running task durations", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 11_000);
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("worker:0", "running")] }));
    const dur = () => p.row("worker:0").querySelector('[data-testid="task-duration"]').textContent;
    expect(dur()).toBe("10s");
    vi.advanceTimersByTime(2000);
    expect(dur()).toBe("12s");
  });
});

describe("sections", () => {
  it("puts progress, tasks, timeline, resources and metrics in that order, and times each update", () => {
    const model = fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "running")] });
    const root = p.mount(model);
    expect(root.hasAttribute("data-render-ms")).toBe(false);
    model.set("progress", { "chief:0": { step: 5, max_steps: 10, steps_per_s: 1, rss_bytes: 1 << 20, history: [[5, 1]] } });
    expect(Number(root.getAttribute("data-render-ms"))).toBeGreaterThanOrEqual(0);
    model.set("metrics", [{ step: 5, loss: 1 }]);
    const order = [...root.querySelectorAll(":scope > section")].filter((s) => s.children.length).map((s) => s.className.replace("tfy-section tfy-", ""));
    expect(order).toEqual(["header-section", "progress-section", "tasks-section", "timeline-section", "resources-section", "metrics-section", "actions-section"]);
  });
});

describe("cleanup", () => {
  it("unsubscribes every listener it added", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    const traits = ["app", "tasks", "pending", "capacity", "progress", "metrics", "failure", "summary", "tensorboard_url", "error"];
    for (const t of traits) {
      expect(model.listenerCount(`change:${t}`)).toBe(1);
    }
    expect(model.listenerCount("msg:custom")).toBe(1);
    p.unmount();
    expect(model.totalListeners()).toBe(0);
    // and changes no longer reach the DOM
    model.set("app", { ...RUNNING_APP, state: "FAILED" });
    expect(p.q(".tfyarn-panel").getAttribute("data-app-state")).toBe("RUNNING");
  });
});
