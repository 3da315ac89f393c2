// Tests of the tfyarn panel against a fake anywidget model in jsdom.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import widget from "../src/widget.js";
import {
  chartSeries,
  formatDuration,
  formatNumber,
  groupTasks,
  safeHttpUrl,
} from "../src/format.js";

const T0 = Date.UTC(2024, 0, 15, 9, 30, 0); // an app start time, epoch ms

/**
 * A fake anywidget model: a Backbone-like get/set that fires `change:<name>`, on/off,
 * send (recorded), save_changes, and `emitCustom` to play a Python → JS message.
 */
function fakeModel(initial = {}) {
  const data = {
    app: {},
    tasks: [],
    pending: [],
    metrics: [],
    failure: null,
    summary: null,
    error: "",
    ...initial,
  };
  /** @type {Map<string, Set<Function>>} */
  const handlers = new Map();
  const sent = [];
  let saves = 0;
  const model = {
    get: (k) => data[k],
    set(k, v) {
      data[k] = v;
      for (const cb of [...(handlers.get(`change:${k}`) || [])]) cb(model, v);
    },
    on(ev, cb) {
      if (!handlers.has(ev)) handlers.set(ev, new Set());
      handlers.get(ev).add(cb);
    },
    off(ev, cb) {
      if (!ev) handlers.clear();
      else if (!cb) handlers.delete(ev);
      else handlers.get(ev)?.delete(cb);
    },
    send(msg) {
      sent.push(msg);
    },
    save_changes() {
      saves += 1;
    },
    // test helpers
    sent,
    get saves() {
      return saves;
    },
    listenerCount(ev) {
      return handlers.get(ev)?.size ?? 0;
    },
    totalListeners() {
      let n = 0;
      for (const s of handlers.values()) n += s.size;
      return n;
    },
    emitCustom(msg) {
      for (const cb of [...(handlers.get("msg:custom") || [])]) cb(msg, []);
    },
  };
  return model;
}

function task(name, state, extra = {}) {
  const [type, index] = name.split(":");
  return {
    task: name,
    type,
    index: Number(index),
    state,
    node: state === "requested" ? "" : "localhost:45423",
    gpu: false,
    container_id: state === "requested" ? "" : `container_1705311000000_0001_01_00000${index}`,
    start_time: state === "requested" ? 0 : T0 + 1000,
    finish_time: 0,
    exit_message: "",
    ...extra,
  };
}

const RUNNING_APP = {
  app_id: "application_1705311000000_0001",
  name: "mnist-dist",
  queue: "ml-gpu",
  user: "alice",
  state: "RUNNING",
  final_status: "UNDEFINED",
  start_time: T0,
  finish_time: 0,
  tracking_url: "http://localhost:8088/proxy/application_1705311000000_0001/",
  diagnostics: "",
};

let el;
let cleanup;

function mount(model) {
  cleanup = widget.render({ model, el });
  return el.querySelector(".tfyarn-panel");
}

const q = (sel) => el.querySelector(sel);
const qa = (sel) => [...el.querySelectorAll(sel)];
const row = (name) => q(`[data-testid="task-row"][data-task="${name}"]`);
const click = (node) => node.dispatchEvent(new MouseEvent("click", { bubbles: true }));

beforeEach(() => {
  el = document.createElement("div");
  document.body.appendChild(el);
  cleanup = undefined;
});

afterEach(() => {
  if (typeof cleanup === "function") cleanup();
  el.remove();
  vi.useRealTimers();
});

describe("module shape", () => {
  it("has a default export with render returning a cleanup function", () => {
    expect(typeof widget.render).toBe("function");
    const ret = widget.render({ model: fakeModel(), el });
    expect(typeof ret).toBe("function");
    ret();
  });

  it("injects its stylesheet once per document", () => {
    mount(fakeModel());
    const other = document.createElement("div");
    document.body.appendChild(other);
    const c2 = widget.render({ model: fakeModel(), el: other });
    const styles = document.querySelectorAll("style#tfyarn-jupyter-style");
    expect(styles.length).toBe(1);
    expect(styles[0].textContent).toContain(".tfyarn-panel");
    c2();
    other.remove();
  });

  it("renders an empty model without throwing, with nulls everywhere", () => {
    const model = fakeModel({ app: null, tasks: null, pending: null, metrics: null, error: null });
    const root = mount(model);
    expect(root).not.toBeNull();
    expect(root.getAttribute("data-app-id")).toBe("");
    expect(qa('[data-testid="task-row"]').length).toBe(0);
    expect(q('[data-testid="metrics-table"]')).toBeNull();
    expect(q('[data-testid="pending"]')).toBeNull();
    expect(q('[data-testid="error"]')).toBeNull();
    expect(q('[data-testid="elapsed"]').textContent).toBe("—");
  });
});

describe("header", () => {
  it("shows id, name, queue, state pill and a YARN UI link; root carries data attributes", () => {
    const root = mount(fakeModel({ app: RUNNING_APP }));
    expect(root.getAttribute("data-app-id")).toBe("application_1705311000000_0001");
    expect(root.getAttribute("data-app-state")).toBe("RUNNING");
    expect(q('[data-testid="app-id"]').textContent).toBe("application_1705311000000_0001");
    expect(q('[data-testid="app-name"]').textContent).toBe("mnist-dist");
    expect(q('[data-testid="app-queue"]').textContent).toBe("ml-gpu");
    expect(q('[data-testid="app-state"]').textContent).toBe("RUNNING");
    expect(q('[data-testid="app-state"]').getAttribute("data-tone")).toBe("blue");
    const link = q('[data-testid="yarn-ui"]');
    expect(link.textContent).toBe("YARN UI");
    expect(link.getAttribute("href")).toBe(RUNNING_APP.tracking_url);
    expect(link.getAttribute("target")).toBe("_blank");
  });

  it("updates the root's state on change:app and hides the link without a url", () => {
    const model = fakeModel({ app: RUNNING_APP });
    const root = mount(model);
    model.set("app", { ...RUNNING_APP, state: "FINISHED", final_status: "SUCCEEDED", tracking_url: "" });
    expect(root.getAttribute("data-app-state")).toBe("FINISHED");
    expect(q('[data-testid="app-final-status"]').textContent).toBe("SUCCEEDED");
    expect(q('[data-testid="yarn-ui"]')).toBeNull();
  });

  it("never links a javascript: tracking url", () => {
    mount(fakeModel({ app: { ...RUNNING_APP, tracking_url: "javascript:alert(1)" } }));
    expect(q('[data-testid="yarn-ui"]')).toBeNull();
  });

  it("adds no diagnostics line (and no stray text) when the app has none", () => {
    mount(fakeModel({ app: { ...RUNNING_APP, diagnostics: "" } }));
    expect(q('[data-testid="diagnostics"]')).toBeNull();
    expect(el.textContent).not.toContain("null");
  });

  it("escapes model text instead of parsing it as HTML", () => {
    mount(fakeModel({ app: { ...RUNNING_APP, name: "<img src=x onerror=alert(1)>" } }));
    expect(q('[data-testid="app-name"]').textContent).toBe("<img src=x onerror=alert(1)>");
    expect(el.querySelector("img")).toBeNull();
  });
});

describe("elapsed time", () => {
  it("advances every second while running and stops after cleanup", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 5000);
    mount(fakeModel({ app: RUNNING_APP }));
    const elapsed = q('[data-testid="elapsed"]');
    expect(elapsed.textContent).toBe("5s");
    vi.advanceTimersByTime(3000);
    expect(elapsed.textContent).toBe("8s");
    vi.advanceTimersByTime(60_000);
    expect(elapsed.textContent).toBe("1m 08s");
    expect(elapsed.getAttribute("data-elapsed-s")).toBe("68");
    cleanup();
    cleanup = undefined;
    vi.advanceTimersByTime(10_000);
    expect(elapsed.textContent).toBe("1m 08s");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("shows start-to-finish once ended and stops ticking", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 5000);
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    expect(vi.getTimerCount()).toBe(1);
    model.set("app", { ...RUNNING_APP, state: "FINISHED", final_status: "SUCCEEDED", finish_time: T0 + 125_000 });
    const elapsed = q('[data-testid="elapsed"]');
    expect(elapsed.textContent).toBe("2m 05s");
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(q('[data-testid="elapsed"]').textContent).toBe("2m 05s");
  });

  it("also advances running task durations", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 11_000);
    mount(fakeModel({ app: RUNNING_APP, tasks: [task("worker:0", "running")] }));
    const dur = () => row("worker:0").querySelector('[data-testid="task-duration"]').textContent;
    expect(dur()).toBe("10s");
    vi.advanceTimersByTime(2000);
    expect(dur()).toBe("12s");
  });
});

describe("tasks", () => {
  const TASKS = [
    task("worker:1", "running"),
    task("ps:0", "running"),
    task("evaluator:0", "allocated"),
    task("worker:0", "running"),
    task("custom:0", "requested"),
    task("chief:0", "running"),
    task("worker:2", "requested"),
  ];

  it("groups by type in the order chief, worker, ps, evaluator, then others", () => {
    mount(fakeModel({ app: RUNNING_APP, tasks: TASKS }));
    const groups = qa('[data-testid="task-group"]');
    expect(groups.map((g) => g.getAttribute("data-type"))).toEqual(["chief", "worker", "ps", "evaluator", "custom"]);
    expect(groups[1].querySelector("h4").textContent).toBe("worker (3)");
    const workerRows = [...groups[1].querySelectorAll('[data-testid="task-row"]')];
    expect(workerRows.map((r) => r.getAttribute("data-task"))).toEqual(["worker:0", "worker:1", "worker:2"]);
    expect(workerRows.every((r) => r.getAttribute("data-type") === "worker")).toBe(true);
  });

  it("colour-codes the state badge and sets data-state", () => {
    const states = ["requested", "allocated", "running", "succeeded", "failed", "killed"];
    mount(fakeModel({ tasks: states.map((s, i) => task(`worker:${i}`, s)) }));
    const styleText = document.getElementById("tfyarn-jupyter-style").textContent;
    states.forEach((s, i) => {
      const r = row(`worker:${i}`);
      expect(r.getAttribute("data-state")).toBe(s);
      const badge = r.querySelector('[data-testid="task-state"]');
      expect(badge.textContent).toBe(s);
      expect(badge.getAttribute("data-state")).toBe(s);
      expect(badge.classList.contains("tfy-badge")).toBe(true);
    });
    // each state has its own colour rule
    const colours = {
      requested: "#757575",
      allocated: "#f0a30a",
      running: "#1e6fd0",
      succeeded: "#2e7d32",
      failed: "#c62828",
      killed: "#3c3c3c",
    };
    for (const [s, colour] of Object.entries(colours)) {
      const rule = new RegExp(`\\.tfy-badge\\[data-state="${s}"\\][^{]*\\{[^}]*background: ${colour}`);
      expect(styleText).toMatch(rule);
    }
  });

  it("updates data-state on change:tasks", () => {
    const model = fakeModel({ tasks: [task("worker:0", "allocated")] });
    mount(model);
    expect(row("worker:0").getAttribute("data-state")).toBe("allocated");
    model.set("tasks", [task("worker:0", "running")]);
    expect(row("worker:0").getAttribute("data-state")).toBe("running");
    expect(row("worker:0").querySelector('[data-testid="task-state"]').textContent).toBe("running");
  });

  it("shows the gpu badge only when gpu is true", () => {
    mount(
      fakeModel({
        tasks: [task("worker:0", "running", { gpu: true }), task("worker:1", "running", { gpu: false }), task("worker:2", "running", { gpu: "yes" })],
      }),
    );
    expect(row("worker:0").querySelector('[data-testid="gpu-badge"]').textContent).toBe("gpu");
    expect(row("worker:1").querySelector('[data-testid="gpu-badge"]')).toBeNull();
    expect(row("worker:2").querySelector('[data-testid="gpu-badge"]')).toBeNull();
    expect(qa('[data-testid="gpu-badge"]').length).toBe(1);
  });

  it("shows node, container id, start time and duration", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 100_000);
    const start = new Date(2024, 0, 15, 14, 5, 9).getTime(); // local time
    mount(
      fakeModel({
        tasks: [
          task("worker:0", "succeeded", { node: "node-7:45454", start_time: start, finish_time: start + 75_000 }),
          task("worker:1", "requested"),
        ],
      }),
    );
    const r = row("worker:0");
    expect(r.querySelector('[data-testid="task-node"]').textContent).toBe("node-7:45454");
    expect(r.querySelector('[data-testid="task-container"]').textContent).toBe("container_1705311000000_0001_01_000000");
    expect(r.querySelector('[data-testid="task-start"]').textContent).toBe("14:05:09");
    expect(r.querySelector('[data-testid="task-duration"]').textContent).toBe("1m 15s");
    expect(row("worker:1").querySelector('[data-testid="task-node"]').textContent).toBe("");
    expect(row("worker:1").querySelector('[data-testid="task-duration"]').textContent).toBe("");
  });

  it("shows Kill only on requested/allocated/running tasks and sends the right message", () => {
    const states = ["requested", "allocated", "running", "succeeded", "failed", "killed"];
    const model = fakeModel({ tasks: states.map((s, i) => task(`worker:${i}`, s)) });
    mount(model);
    const withKill = states.filter((_, i) => row(`worker:${i}`).querySelector('[data-testid="kill"]'));
    expect(withKill).toEqual(["requested", "allocated", "running"]);
    click(row("worker:2").querySelector('[data-testid="kill"]'));
    expect(model.sent).toEqual([{ type: "kill", task: "worker:2" }]);
    // every row keeps its Logs button
    expect(qa('[data-testid="logs"]').filter((b) => b.tagName === "BUTTON").length).toBe(6);
  });

  it("shows a task's exit message", () => {
    mount(fakeModel({ tasks: [task("worker:0", "failed", { exit_message: "Exit code 1" })] }));
    expect(row("worker:0").querySelector('[data-testid="exit-message"]').textContent).toBe("Exit code 1");
  });
});

describe("logs", () => {
  const logsButton = (name) => row(name).querySelector('button[data-testid="logs"]');

  it("sends a logs request and renders the reply under that task's row", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running"), task("worker:1", "running")] });
    mount(model);
    click(logsButton("worker:1"));
    expect(model.sent).toEqual([{ type: "logs", task: "worker:1" }]);
    model.emitCustom({ type: "logs", task: "worker:1", stdout: "step 100 loss=0.3\n", stderr: "", source: "live" });
    const pre = row("worker:1").querySelector('[data-testid="logs-text"]');
    expect(pre.tagName).toBe("PRE");
    expect(pre.textContent).toBe("step 100 loss=0.3\n");
    expect(row("worker:0").querySelector('[data-testid="logs-text"]')).toBeNull();
    expect(qa('[data-testid="logs-text"]').length).toBe(1);
    expect(row("worker:1").querySelector("details").open).toBe(true);
    expect(row("worker:1").querySelector('[data-testid="logs-label"]').textContent).toContain("live");
  });

  it("replaces earlier text and shows stderr and the source", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    mount(model);
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "first", stderr: "", source: "live" });
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "second out", stderr: "oops", source: "aggregated" });
    const pre = row("worker:0").querySelector('[data-testid="logs-text"]');
    expect(pre.textContent).not.toContain("first");
    expect(pre.textContent).toContain("second out");
    expect(pre.textContent).toContain("oops");
    expect(row("worker:0").querySelector('[data-testid="logs-label"]').textContent).toBe("Logs of worker:0 (aggregated)");
    expect(qa('[data-testid="logs-text"]').length).toBe(1);
  });

  it("keeps the logs pane (same node, same text) across a tasks update", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running"), task("worker:1", "running")] });
    mount(model);
    model.emitCustom({ type: "logs", task: "worker:1", stdout: "epoch 3\n", stderr: "", source: "live" });
    const before = row("worker:1").querySelector('[data-testid="logs-text"]');
    const oldRow = row("worker:1");
    model.set("tasks", [task("worker:0", "running"), task("worker:1", "succeeded", { finish_time: T0 + 9000 })]);
    const newRow = row("worker:1");
    expect(newRow).not.toBe(oldRow); // the row was rebuilt
    expect(newRow.getAttribute("data-state")).toBe("succeeded");
    const after = newRow.querySelector('[data-testid="logs-text"]');
    expect(after).toBe(before);
    expect(after.textContent).toBe("epoch 3\n");
    expect(row("worker:0").querySelector('[data-testid="logs-text"]')).toBeNull();
  });

  it("does not interpret logs as HTML", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    mount(model);
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "<b>bold</b>", stderr: "", source: "live" });
    expect(row("worker:0").querySelector('[data-testid="logs-text"]').textContent).toBe("<b>bold</b>");
    expect(el.querySelector("b")).toBeNull();
  });
});

describe("cancel", () => {
  it("needs confirmation: No sends nothing, Yes sends cancel", () => {
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    expect(q('[data-testid="confirm-cancel"]')).toBeNull();
    click(q('[data-testid="cancel"]'));
    expect(model.sent).toEqual([]);
    const confirmation = q('[data-testid="cancel-confirmation"]');
    expect(confirmation.textContent).toContain(
      "Cancel application_1705311000000_0001? Checkpoints already written are kept.",
    );
    expect(q('[data-testid="confirm-cancel"]').textContent).toBe("Yes, cancel");
    click(q('[data-testid="dismiss-cancel"]'));
    expect(model.sent).toEqual([]);
    expect(q('[data-testid="confirm-cancel"]')).toBeNull();
    expect(q('[data-testid="cancel"]')).not.toBeNull();

    click(q('[data-testid="cancel"]'));
    click(q('[data-testid="confirm-cancel"]'));
    expect(model.sent).toEqual([{ type: "cancel" }]);
    expect(q('[data-testid="confirm-cancel"]')).toBeNull();
  });

  it("keeps an open confirmation across app updates", () => {
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    click(q('[data-testid="cancel"]'));
    model.set("app", { ...RUNNING_APP, diagnostics: "still running" });
    expect(q('[data-testid="confirm-cancel"]')).not.toBeNull();
  });

  it("is hidden once the application ended", () => {
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    expect(q('[data-testid="cancel"]').textContent).toBe("Cancel application");
    model.set("app", { ...RUNNING_APP, state: "KILLED", final_status: "KILLED", finish_time: T0 + 1000 });
    expect(q('[data-testid="cancel"]')).toBeNull();
  });
});

describe("pending, failure, summary, error", () => {
  it("lists pending strings only when there are some", () => {
    const model = fakeModel({ pending: ["worker: 2 of 3 allocated; waiting for gpu capacity on queue ml-gpu"] });
    mount(model);
    const items = [...q('[data-testid="pending"]').querySelectorAll("li")].map((li) => li.textContent);
    expect(items).toEqual(["worker: 2 of 3 allocated; waiting for gpu capacity on queue ml-gpu"]);
    model.set("pending", []);
    expect(q('[data-testid="pending"]')).toBeNull();
  });

  it("shows the failure box with task and traceback", () => {
    const model = fakeModel();
    mount(model);
    expect(q('[data-testid="failure"]')).toBeNull();
    const tb = 'Traceback (most recent call last):\n  File "train.py", line 3\nValueError: bad\n';
    model.set("failure", { task: "worker:0", traceback: tb });
    const box = q('[data-testid="failure"]');
    expect(box.querySelector('[data-testid="failure-task"]').textContent).toBe("worker:0");
    const pre = box.querySelector("pre");
    expect(pre.textContent).toBe(tb);
    model.set("failure", null);
    expect(q('[data-testid="failure"]')).toBeNull();
  });

  it("shows the summary box with final status, durations and metrics", () => {
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    expect(q('[data-testid="summary"]')).toBeNull();
    model.set("summary", {
      final_status: "SUCCEEDED",
      duration_s: 754,
      tasks: { "worker:0": { state: "succeeded", duration_s: 700 }, "chief:0": { state: "succeeded", duration_s: 745.5 } },
      metrics: { step: 1000, loss: 0.1234567, accuracy: 0.97 },
    });
    const box = q('[data-testid="summary"]');
    expect(box.querySelector('[data-testid="summary-status"]').textContent).toBe("SUCCEEDED");
    expect(box.querySelector('[data-testid="summary-duration"]').textContent).toBe("12m 34s");
    const trs = [...box.querySelectorAll('[data-testid="summary-tasks"] tbody tr')];
    expect(trs.map((tr) => tr.getAttribute("data-task"))).toEqual(["chief:0", "worker:0"]);
    expect(trs[0].querySelector('[data-testid="summary-task-duration"]').textContent).toBe("12m 25s");
    expect(box.querySelector('[data-metric="loss"]').textContent).toContain("0.1235");
    expect(box.querySelector('[data-metric="step"]').textContent).toContain("1000");
    // a summary means the run ended: no cancel button any more
    expect(q('[data-testid="cancel"]')).toBeNull();
  });

  it("shows the error trait when non-empty and custom error messages", () => {
    const model = fakeModel();
    mount(model);
    expect(q('[data-testid="error"]')).toBeNull();
    model.set("error", "kill failed: container not found");
    expect(q('[data-testid="error"]').textContent).toBe("kill failed: container not found");
    model.set("error", "");
    expect(q('[data-testid="error"]')).toBeNull();
    model.emitCustom({ type: "error", message: "logs not available yet" });
    expect(q('[data-testid="error"]').textContent).toBe("logs not available yet");
    click(q('[data-testid="dismiss-error"]'));
    expect(q('[data-testid="error"]')).toBeNull();
  });
});

describe("metrics", () => {
  const METRICS = [
    { step: 100, loss: 0.9, accuracy: 0.5 },
    { step: 200, loss: 0.5, accuracy: 0.7, auc: 0.81234 },
    { step: 300, loss: 0.31, accuracy: 0.9, auc: 0.9 },
  ];

  it("shows the latest evaluation's values, one cell per key", () => {
    mount(fakeModel({ metrics: METRICS }));
    const table = q('[data-testid="metrics-table"]');
    const cells = [...table.querySelectorAll("td[data-metric]")];
    expect(cells.map((c) => c.getAttribute("data-metric"))).toEqual(["step", "loss", "accuracy", "auc"]);
    expect(cells.map((c) => c.textContent)).toEqual(["300", "0.31", "0.9", "0.9"]);
    expect(table.querySelectorAll('td[data-metric="loss"]').length).toBe(1);
  });

  it("draws loss and accuracy paths and redraws when metrics change", () => {
    const model = fakeModel({ metrics: METRICS.slice(0, 2) });
    mount(model);
    const svgEl = q('svg[data-testid="loss-chart"]');
    expect(svgEl.namespaceURI).toBe("http://www.w3.org/2000/svg");
    const loss = svgEl.querySelectorAll('path[data-series="loss"]');
    expect(loss.length).toBe(1);
    expect(svgEl.querySelectorAll('path[data-series="accuracy"]').length).toBe(1);
    const d1 = loss[0].getAttribute("d");
    expect(d1).toMatch(/^M[\d.]+ [\d.]+ L[\d.]+ [\d.]+$/);
    model.set("metrics", METRICS);
    const d2 = q('svg[data-testid="loss-chart"] path[data-series="loss"]').getAttribute("d");
    expect(d2).not.toBe(d1);
    expect(d2.split(/[ML]/).filter(Boolean).length).toBe(3);
    expect(q('td[data-metric="loss"]').textContent).toBe("0.31");
  });

  it("has no accuracy line without accuracy and no chart without loss", () => {
    const model = fakeModel({ metrics: [{ step: 1, loss: 2 }, { step: 2, loss: 1 }] });
    mount(model);
    expect(q('path[data-series="loss"]')).not.toBeNull();
    expect(q('path[data-series="accuracy"]')).toBeNull();
    model.set("metrics", [{ step: 1, accuracy: 0.3 }]);
    expect(q('[data-testid="loss-chart"]')).toBeNull();
    expect(q('td[data-metric="accuracy"]').textContent).toBe("0.3");
  });
});

describe("cleanup", () => {
  it("unsubscribes every listener it added", () => {
    const model = fakeModel({ app: RUNNING_APP });
    mount(model);
    for (const t of ["app", "tasks", "pending", "metrics", "failure", "summary", "error"]) {
      expect(model.listenerCount(`change:${t}`)).toBe(1);
    }
    expect(model.listenerCount("msg:custom")).toBe(1);
    cleanup();
    cleanup = undefined;
    expect(model.totalListeners()).toBe(0);
    // and changes no longer reach the DOM
    model.set("app", { ...RUNNING_APP, state: "FAILED" });
    expect(q(".tfyarn-panel").getAttribute("data-app-state")).toBe("RUNNING");
  });
});

describe("format helpers", () => {
  it("formats durations and numbers", () => {
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(59_999)).toBe("59s");
    expect(formatDuration(65_000)).toBe("1m 05s");
    expect(formatDuration(3_723_000)).toBe("1h 02m 03s");
    expect(formatDuration(-5000)).toBe("0s");
    expect(formatNumber(0.123456)).toBe("0.1235");
    expect(formatNumber(42)).toBe("42");
    expect(formatNumber(Number.NaN)).toBe("NaN");
  });

  it("groups unknown types after the known ones, sorted by name", () => {
    const g = groupTasks([{ task: "zeta:0" }, { task: "alpha:0" }, { task: "ps:1" }, { task: "ps:0" }]);
    expect(g.map((x) => x.type)).toEqual(["ps", "alpha", "zeta"]);
    expect(g[0].tasks.map((t) => t.task)).toEqual(["ps:0", "ps:1"]);
  });

  it("scales each series to its own range", () => {
    const c = chartSeries(
      [
        { step: 0, loss: 10, accuracy: 0.1 },
        { step: 10, loss: 0, accuracy: 0.2 },
      ],
      { width: 100, height: 50, pad: 0 },
    );
    const loss = c.series.find((s) => s.series === "loss");
    const acc = c.series.find((s) => s.series === "accuracy");
    expect(loss.d).toBe("M0 0 L100 50");
    expect(acc.d).toBe("M0 50 L100 0");
  });

  it("only passes http(s) urls", () => {
    expect(safeHttpUrl("https://rm:8090/x")).toBe("https://rm:8090/x");
    expect(safeHttpUrl("rm:8088/proxy/a/")).toBe("http://rm:8088/proxy/a/");
    expect(safeHttpUrl("javascript:alert(1)")).toBe("");
    expect(safeHttpUrl("data:text/html,hi")).toBe("");
    expect(safeHttpUrl("")).toBe("");
  });
});
