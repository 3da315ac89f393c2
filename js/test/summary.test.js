// The failure and summary boxes (summary.js), through the mounted panel.
import { describe, expect, it } from "vitest";

import { fakeModel } from "./fake-model.js";
import { RUNNING_APP, task, usePanel } from "./panel.js";

const p = usePanel();

describe("failure, summary", () => {
  it("shows the failure box with task and traceback", () => {
    const model = fakeModel();
    p.mount(model);
    expect(p.q('[data-testid="failure"]')).toBeNull();
    const tb = 'Traceback (most recent call last):\n  File "train.py", line 3\nValueError: bad\n';
    model.set("failure", { task: "worker:0", traceback: tb });
    const box = p.q('[data-testid="failure"]');
    expect(box.querySelector('[data-testid="failure-task"]').textContent).toBe("worker:0");
    const pre = box.querySelector("pre");
    expect(pre.textContent).toBe(tb);
    model.set("failure", null);
    expect(p.q('[data-testid="failure"]')).toBeNull();
  });

  it("shows the summary box with final status, durations and metrics", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(p.q('[data-testid="summary"]')).toBeNull();
    model.set("summary", {
      final_status: "SUCCEEDED",
      duration_s: 754,
      tasks: { "worker:0": { state: "succeeded", duration_s: 700 }, "chief:0": { state: "succeeded", duration_s: 745.5 } },
      metrics: { step: 1000, loss: 0.1234567, accuracy: 0.97 },
    });
    const box = p.q('[data-testid="summary"]');
    expect(box.querySelector('[data-testid="summary-status"]').textContent).toBe("SUCCEEDED");
    expect(box.querySelector('[data-testid="summary-duration"]').textContent).toBe("12m 34s");
    const trs = [...box.querySelectorAll('[data-testid="summary-tasks"] tbody tr')];
    expect(trs.map((tr) => tr.getAttribute("data-task"))).toEqual(["chief:0", "worker:0"]);
    expect(trs[0].querySelector('[data-testid="summary-task-duration"]').textContent).toBe("12m 25s");
    expect(box.querySelector('[data-metric="loss"]').textContent).toContain("0.1235");
    expect(box.querySelector('[data-metric="step"]').textContent).toContain("1000");
    // a summary means the run ended: no cancel button any more
    expect(p.q('[data-testid="cancel"]')).toBeNull();
  });

  it("lists the restarts inside the application of the tasks that restarted, and only then", () => {
    const ended = { ...RUNNING_APP, state: "FINISHED", final_status: "SUCCEEDED" };
    const summary = { final_status: "SUCCEEDED", duration_s: 60, tasks: { "chief:0": { state: "succeeded", duration_s: 58 }, "worker:0": { state: "succeeded", duration_s: 40 } }, metrics: {} };
    const model = fakeModel({ app: ended, summary, tasks: [task("chief:0", "succeeded"), task("worker:0", "succeeded")] });
    p.mount(model);
    expect(p.qa('[data-testid="summary-task-restarts"]').length).toBe(0);
    expect(p.qa('[data-testid="summary-tasks"] th').map((th) => th.textContent)).toEqual(["task", "state", "duration"]);
    model.set("tasks", [task("chief:0", "succeeded"), task("worker:0", "succeeded", { restarts: 1, restart_cause: "preempted", steps_lost: 200 })]);
    const cells = p.qa('[data-testid="summary-task-restarts"]').map((td) => td.textContent);
    expect(cells).toEqual(["", "attempt 2: preempted, 200 steps lost"]);
    expect(p.qa('[data-testid="summary-tasks"] th').map((th) => th.textContent)).toEqual(["task", "state", "duration", "restarts"]);
  });
});
