// Logs, kill and cancel (actions.js), through the mounted panel.
import { describe, expect, it } from "vitest";

import { fakeModel } from "./fake-model.js";
import { click, RUNNING_APP, T0, task, usePanel } from "./panel.js";

const p = usePanel();

describe("logs", () => {
  const logsButton = (name) => p.row(name).querySelector('button[data-testid="logs-button"]');

  it("keeps a shown logs view when the panel is rendered again for the same model", () => {
    const model = fakeModel({ tasks: [task("chief:0", "running")] });
    p.mount(model);
    click(p.row("chief:0").querySelector('[data-testid="logs-button"]'));
    // the notebook re-displays the output before the reply comes: a new view gets it
    p.unmount();
    p.el.replaceChildren();
    p.mount(model);
    expect(p.row("chief:0").querySelector('[data-testid="logs-button"]').textContent).toBe("Logs…");
    model.emitCustom({ type: "logs", task: "chief:0", source: "live", stdout: "step 1\n", stderr: "" });
    expect(p.row("chief:0").querySelector('[data-testid="logs-text"]').textContent).toBe("step 1\n");
    // and once more after it came
    p.unmount();
    p.el.replaceChildren();
    p.mount(model);
    expect(p.row("chief:0").querySelector('[data-testid="logs-text"]').textContent).toBe("step 1\n");
  });

  it("finds the shown logs again through another proxy of the same run's model", () => {
    // anywidget gives each view its own proxy of the model: views match by application id
    const model = fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "running")] });
    p.mount(model);
    click(p.row("chief:0").querySelector('[data-testid="logs-button"]'));
    model.emitCustom({ type: "logs", task: "chief:0", source: "live", stdout: "hello\n", stderr: "" });
    p.unmount();
    p.el.replaceChildren();
    const proxy = { ...model, get: (k) => model.get(k), on: model.on, off: model.off };
    p.mount(proxy);
    expect(p.row("chief:0").querySelector('[data-testid="logs-text"]').textContent).toBe("hello\n");
  });

  it("sends a logs request and renders the reply under that task's row", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running"), task("worker:1", "running")] });
    p.mount(model);
    click(logsButton("worker:1"));
    expect(model.sent).toEqual([{ type: "logs", task: "worker:1" }]);
    model.emitCustom({ type: "logs", task: "worker:1", stdout: "step 100 loss=0.3\n", stderr: "", source: "live" });
    const pre = p.row("worker:1").querySelector('[data-testid="logs-text"]');
    expect(pre.tagName).toBe("PRE");
    expect(pre.textContent).toBe("step 100 loss=0.3\n");
    expect(p.row("worker:0").querySelector('[data-testid="logs-text"]')).toBeNull();
    expect(p.qa('[data-testid="logs-text"]').length).toBe(1);
    expect(p.row("worker:1").querySelector("details").open).toBe(true);
    expect(p.row("worker:1").querySelector('[data-testid="logs-label"]').textContent).toContain("live");
  });

  it("replaces earlier text and shows stderr and the source", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    p.mount(model);
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "first", stderr: "", source: "live" });
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "second out", stderr: "oops", source: "aggregated" });
    const pre = p.row("worker:0").querySelector('[data-testid="logs-text"]');
    expect(pre.textContent).not.toContain("first");
    expect(pre.textContent).toContain("second out");
    expect(pre.textContent).toContain("oops");
    expect(p.row("worker:0").querySelector('[data-testid="logs-label"]').textContent).toBe("Logs of worker:0 (aggregated)");
    expect(p.qa('[data-testid="logs-text"]').length).toBe(1);
  });

  it("keeps the logs pane (same node, same text) across a tasks update", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running"), task("worker:1", "running")] });
    p.mount(model);
    model.emitCustom({ type: "logs", task: "worker:1", stdout: "epoch 3\n", stderr: "", source: "live" });
    const before = p.row("worker:1").querySelector('[data-testid="logs-text"]');
    const oldRow = p.row("worker:1");
    model.set("tasks", [task("worker:0", "running"), task("worker:1", "succeeded", { finish_time: T0 + 9000 })]);
    const newRow = p.row("worker:1");
    expect(newRow).not.toBe(oldRow); // the row was rebuilt
    expect(newRow.getAttribute("data-state")).toBe("succeeded");
    const after = newRow.querySelector('[data-testid="logs-text"]');
    expect(after).toBe(before);
    expect(after.textContent).toBe("epoch 3\n");
    expect(p.row("worker:0").querySelector('[data-testid="logs-text"]')).toBeNull();
  });

  it("does not interpret logs as HTML", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    p.mount(model);
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "<b>bold</b>", stderr: "", source: "live" });
    expect(p.row("worker:0").querySelector('[data-testid="logs-text"]').textContent).toBe("<b>bold</b>");
    expect(p.el.querySelector("b")).toBeNull();
  });
});

describe("test ids", () => {
  it("names the Logs button and the logs view apart", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    p.mount(model);
    model.emitCustom({ type: "logs", task: "worker:0", stdout: "out", stderr: "", source: "live" });
    expect(p.qa('[data-testid="logs-button"]').map((n) => n.tagName)).toEqual(["BUTTON"]);
    expect(p.qa('[data-testid="logs-view"]').map((n) => n.tagName)).toEqual(["DETAILS"]);
    expect(p.q('[data-testid="logs-view"]').getAttribute("data-task")).toBe("worker:0");
    const ids = p.qa("[data-testid]").map((n) => n.getAttribute("data-testid"));
    const perRow = ids.filter((id) => id !== "task-row" && id !== "task-group");
    expect(new Set(perRow).size).toBe(perRow.length);
  });
});

describe("kill", () => {
  it("disables a sent Kill until the task's state changes, and after an error", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    p.mount(model);
    const kill = () => p.row("worker:0").querySelector('[data-testid="kill"]');
    click(kill());
    expect(kill().textContent).toBe("Killing…");
    model.set("tasks", [task("worker:0", "running")]);
    expect(kill().hasAttribute("disabled")).toBe(true);
    model.emitCustom({ type: "error", message: "kill failed" });
    expect(kill().hasAttribute("disabled")).toBe(false);
    click(kill());
    model.set("tasks", [task("worker:0", "allocated")]);
    expect(kill().textContent).toBe("Kill");
    expect(model.sent).toEqual([{ type: "kill", task: "worker:0" }, { type: "kill", task: "worker:0" }]);
  });
});

describe("cancel", () => {
  it("needs confirmation: No sends nothing, Yes sends cancel", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(p.q('[data-testid="confirm-cancel"]')).toBeNull();
    click(p.q('[data-testid="cancel"]'));
    expect(model.sent).toEqual([]);
    const confirmation = p.q('[data-testid="cancel-confirmation"]');
    expect(confirmation.textContent).toContain(
      "Cancel application_1705311000000_0001? Checkpoints already written are kept.",
    );
    expect(p.q('[data-testid="confirm-cancel"]').textContent).toBe("Yes, cancel");
    click(p.q('[data-testid="dismiss-cancel"]'));
    expect(model.sent).toEqual([]);
    expect(p.q('[data-testid="confirm-cancel"]')).toBeNull();
    expect(p.q('[data-testid="cancel"]')).not.toBeNull();

    click(p.q('[data-testid="cancel"]'));
    click(p.q('[data-testid="confirm-cancel"]'));
    expect(model.sent).toEqual([{ type: "cancel" }]);
    expect(p.q('[data-testid="confirm-cancel"]')).toBeNull();
  });

  it("keeps an open confirmation across app updates", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    click(p.q('[data-testid="cancel"]'));
    model.set("app", { ...RUNNING_APP, diagnostics: "still running" });
    expect(p.q('[data-testid="confirm-cancel"]')).not.toBeNull();
  });

  it("is hidden once the application ended", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(p.q('[data-testid="cancel"]').textContent).toBe("Cancel application");
    model.set("app", { ...RUNNING_APP, state: "KILLED", final_status: "KILLED", finish_time: T0 + 1000 });
    expect(p.q('[data-testid="cancel"]')).toBeNull();
  });
});
