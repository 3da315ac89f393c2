// The error line (error.js), through the mounted panel.
import { describe, expect, it } from "vitest";

import { fakeModel } from "./fake-model.js";
import { click, task, usePanel } from "./panel.js";

const p = usePanel();

describe("error", () => {
  it("shows the error trait when non-empty and custom error messages", () => {
    const model = fakeModel();
    p.mount(model);
    expect(p.q('[data-testid="error"]')).toBeNull();
    model.set("error", "kill failed: container not found");
    expect(p.q('[data-testid="error"]').textContent).toBe("kill failed: container not found");
    model.set("error", "");
    expect(p.q('[data-testid="error"]')).toBeNull();
    model.emitCustom({ type: "error", message: "logs not available yet" });
    expect(p.q('[data-testid="error"]').textContent).toBe("logs not available yet");
    click(p.q('[data-testid="dismiss-error"]'));
    expect(p.q('[data-testid="error"]')).toBeNull();
  });
});

describe("send failures", () => {
  it("shows a message the front end could not send", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    model.send = () => {
      throw new Error("comm closed");
    };
    p.mount(model);
    click(p.row("worker:0").querySelector('[data-testid="logs-button"]'));
    expect(p.q('[data-testid="error"]').textContent).toBe("Could not send logs: comm closed");
  });
});
