// The task rows and the pending box (tasks.js), through the mounted panel.
import { describe, expect, it, vi } from "vitest";

import { fakeModel } from "./fake-model.js";
import { click, CSS_TEXT, RUNNING_APP, T0, task, usePanel } from "./panel.js";

const p = usePanel();

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
    p.mount(fakeModel({ app: RUNNING_APP, tasks: TASKS }));
    const groups = p.qa('[data-testid="task-group"]');
    expect(groups.map((g) => g.getAttribute("data-type"))).toEqual(["chief", "worker", "ps", "evaluator", "custom"]);
    expect(groups[1].querySelector("h4").textContent).toBe("worker (3)");
    const workerRows = [...groups[1].querySelectorAll('[data-testid="task-row"]')];
    expect(workerRows.map((r) => r.getAttribute("data-task"))).toEqual(["worker:0", "worker:1", "worker:2"]);
    expect(workerRows.every((r) => r.getAttribute("data-type") === "worker")).toBe(true);
  });

  it("colour-codes the state badge and sets data-state", () => {
    const states = ["requested", "allocated", "running", "succeeded", "failed", "killed"];
    p.mount(fakeModel({ tasks: states.map((s, i) => task(`worker:${i}`, s)) }));
    const styleText = CSS_TEXT;
    states.forEach((s, i) => {
      const r = p.row(`worker:${i}`);
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
    p.mount(model);
    expect(p.row("worker:0").getAttribute("data-state")).toBe("allocated");
    model.set("tasks", [task("worker:0", "running")]);
    expect(p.row("worker:0").getAttribute("data-state")).toBe("running");
    expect(p.row("worker:0").querySelector('[data-testid="task-state"]').textContent).toBe("running");
  });

  it("shows the gpu badge only when gpu is true", () => {
    p.mount(
      fakeModel({
        tasks: [task("worker:0", "running", { gpu: true }), task("worker:1", "running", { gpu: false }), task("worker:2", "running", { gpu: "yes" })],
      }),
    );
    expect(p.row("worker:0").querySelector('[data-testid="gpu-badge"]').textContent).toBe("gpu");
    expect(p.row("worker:1").querySelector('[data-testid="gpu-badge"]')).toBeNull();
    expect(p.row("worker:2").querySelector('[data-testid="gpu-badge"]')).toBeNull();
    expect(p.qa('[data-testid="gpu-badge"]').length).toBe(1);
  });

  it("shows the GPUs YARN reserved beside the node, and nothing without any", () => {
    p.mount(
      fakeModel({
        tasks: [task("chief:0", "running", { gpus: 1 }), task("worker:0", "running", { gpus: 4 }), task("worker:1", "running", { gpus: 0 }), task("evaluator:0", "running")],
      }),
    );
    expect(p.row("chief:0").querySelector('[data-testid="gpu-count"]').textContent).toBe("1 GPU");
    expect(p.row("worker:0").querySelector('[data-testid="gpu-count"]').textContent).toBe("4 GPUs");
    expect(p.row("worker:1").querySelector('[data-testid="gpu-count"]')).toBeNull();
    expect(p.row("evaluator:0").querySelector('[data-testid="gpu-count"]')).toBeNull();
  });

  it("shows node, container id, start time and duration", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 100_000);
    const start = new Date(2024, 0, 15, 14, 5, 9).getTime(); // local time
    p.mount(
      fakeModel({
        tasks: [
          task("worker:0", "succeeded", { node: "node-7:45454", start_time: start, finish_time: start + 75_000 }),
          task("worker:1", "requested"),
        ],
      }),
    );
    const r = p.row("worker:0");
    expect(r.querySelector('[data-testid="task-node"]').textContent).toBe("node-7:45454");
    expect(r.querySelector('[data-testid="task-container"]').textContent).toBe("container_1705311000000_0001_01_000000");
    expect(r.querySelector('[data-testid="task-start"]').textContent).toBe("14:05:09");
    expect(r.querySelector('[data-testid="task-duration"]').textContent).toBe("1m 15s");
    expect(p.row("worker:1").querySelector('[data-testid="task-node"]').textContent).toBe("");
    expect(p.row("worker:1").querySelector('[data-testid="task-duration"]').textContent).toBe("");
  });

  it("shows Kill only on requested/allocated/running tasks and sends the right message", () => {
    const states = ["requested", "allocated", "running", "succeeded", "failed", "killed"];
    const model = fakeModel({ tasks: states.map((s, i) => task(`worker:${i}`, s)) });
    p.mount(model);
    const withKill = states.filter((_, i) => p.row(`worker:${i}`).querySelector('[data-testid="kill"]'));
    expect(withKill).toEqual(["requested", "allocated", "running"]);
    click(p.row("worker:2").querySelector('[data-testid="kill"]'));
    expect(model.sent).toEqual([{ type: "kill", task: "worker:2" }]);
    // every row keeps its Logs button
    expect(p.qa('[data-testid="logs-button"]').filter((b) => b.tagName === "BUTTON").length).toBe(6);
  });

  it("takes durations from the task's own times when YARN has no finish time", () => {
    p.mount(
      fakeModel({
        tasks: [
          task("chief:0", "succeeded", { start_time: T0, finish_time: 0, running_time: T0 + 2000, end_time: T0 + 92_000 }),
          task("evaluator:0", "succeeded", { start_time: T0, finish_time: 0, duration_s: 47.5 }),
        ],
      }),
    );
    expect(p.row("chief:0").querySelector('[data-testid="task-duration"]').textContent).toBe("1m 30s");
    expect(p.row("evaluator:0").querySelector('[data-testid="task-duration"]').textContent).toBe("47s");
  });

  it("rebuilds only the rows whose task changed", () => {
    const model = fakeModel({ tasks: [task("chief:0", "running"), task("worker:0", "running")] });
    p.mount(model);
    const chief = p.row("chief:0");
    const worker = p.row("worker:0");
    model.set("tasks", [task("chief:0", "running"), task("worker:0", "succeeded")]);
    expect(p.row("chief:0")).toBe(chief);
    expect(p.row("worker:0")).not.toBe(worker);
    expect(p.row("worker:0").getAttribute("data-state")).toBe("succeeded");
  });

  it("from 48 tasks shows one line per type with counts per state, rows only when opened", () => {
    const tasks = [task("chief:0", "running")];
    for (let i = 0; i < 199; i += 1) tasks.push(task(`worker:${i}`, i < 150 ? "running" : "requested"));
    const model = fakeModel({ tasks });
    p.mount(model);
    const groups = p.qa('[data-testid="task-group"]');
    expect(groups.map((g) => [g.tagName, g.getAttribute("data-type")])).toEqual([["DETAILS", "chief"], ["DETAILS", "worker"]]);
    const counts = [...groups[1].querySelectorAll('[data-testid="group-count"]')].map((c) => c.textContent);
    expect(counts).toEqual(["49 requested", "150 running"]);
    expect(p.qa('[data-testid="task-row"]').length).toBe(0);
    groups[1].open = true;
    groups[1].dispatchEvent(new Event("toggle"));
    expect(p.qa('[data-testid="task-row"]').length).toBe(199);
    // an update keeps the group open and its rows
    const w3 = p.row("worker:3");
    model.set("tasks", tasks.map((t) => (t.task === "worker:199" ? t : t)));
    expect(p.q('[data-testid="task-group"][data-type="worker"]').open).toBe(true);
    expect(p.row("worker:3")).toBe(w3);
    // and so does a new view of the same model (the notebook re-displaying the output)
    p.unmount();
    p.el.replaceChildren();
    p.mount(model);
    expect(p.q('[data-testid="task-group"][data-type="worker"]').open).toBe(true);
    expect(p.qa('[data-testid="task-row"]').length).toBe(199);
  });

  it("shows a task's exit message", () => {
    p.mount(fakeModel({ tasks: [task("worker:0", "failed", { exit_message: "Exit code 1" })] }));
    expect(p.row("worker:0").querySelector('[data-testid="exit-message"]').textContent).toBe("Exit code 1");
  });
});

describe("restarts inside the application", () => {
  const LOG = [
    { n: 1, cause: "node lost", exit_status: -100, step: 300, resumed_step: 200, steps_lost: 100 },
    { n: 2, cause: "preempted", exit_status: -102, step: 1200, resumed_step: 1050, steps_lost: 150 },
  ];

  it("shows a restarted task's attempt, why it restarted and the steps lost beside its state", () => {
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("worker:1", "running", { restarts: 2, restart_cause: "preempted", steps_lost: 250, restart_log: LOG })] }));
    const info = p.row("worker:1").querySelector('[data-testid="task-restart"]');
    expect(info.querySelector('[data-testid="task-attempt"]').textContent).toBe("attempt 3");
    expect(info.querySelector('[data-testid="restart-cause"]').textContent).toBe("↻ preempted");
    expect(info.querySelector('[data-testid="restart-cause"]').getAttribute("data-cause")).toBe("preempted");
    expect(info.querySelector('[data-testid="steps-lost"]').textContent).toBe("250 steps lost");
    expect(info.getAttribute("title")).toBe(
      "restart 1: node lost (exit status -100) at step 300, resumed at step 200: 100 steps lost\n" +
        "restart 2: preempted (exit status -102) at step 1200, resumed at step 1050: 150 steps lost",
    );
    // right after the state badge
    expect(p.row("worker:1").querySelector('[data-testid="task-state"]').nextElementSibling).toBe(info);
  });

  it("says nothing of restarts for a task that never restarted, nor steps lost it cannot tell", () => {
    p.mount(
      fakeModel({
        tasks: [
          task("worker:0", "running", { restarts: 0, restart_cause: "", steps_lost: null, restart_log: [] }),
          task("evaluator:0", "running", { restarts: 1, restart_cause: "failed", steps_lost: null }),
        ],
      }),
    );
    expect(p.row("worker:0").querySelector('[data-testid="task-restart"]')).toBeNull();
    const ev = p.row("evaluator:0");
    expect(ev.querySelector('[data-testid="task-attempt"]').textContent).toBe("attempt 2");
    expect(ev.querySelector('[data-testid="restart-cause"]').textContent).toBe("↻ failed");
    expect(ev.querySelector('[data-testid="steps-lost"]')).toBeNull();
    expect(p.qa('[data-testid="task-restart"]').length).toBe(1);
  });

  it("counts the restarted tasks of a group in grouped mode", () => {
    const tasks = [task("chief:0", "running")];
    for (let i = 0; i < 60; i += 1) tasks.push(task(`worker:${i}`, "running", i % 20 === 3 ? { restarts: 1, restart_cause: "node lost" } : {}));
    p.mount(fakeModel({ app: RUNNING_APP, tasks }));
    const counts = p.qa('[data-testid="group-restarted"]');
    expect(counts.map((c) => c.textContent)).toEqual(["3 restarted"]);
    expect(counts[0].closest('[data-testid="task-group"]').getAttribute("data-type")).toBe("worker");
  });

  it("updates the row when the task restarts again", () => {
    const model = fakeModel({ tasks: [task("worker:0", "running")] });
    p.mount(model);
    expect(p.row("worker:0").querySelector('[data-testid="task-restart"]')).toBeNull();
    model.set("tasks", [task("worker:0", "requested", { restarts: 1, restart_cause: "node lost" })]);
    expect(p.row("worker:0").querySelector('[data-testid="task-attempt"]').textContent).toBe("attempt 2");
  });
});

describe("pending", () => {
  it("lists pending strings only when there are some", () => {
    const model = fakeModel({ pending: ["worker: 2 of 3 allocated; waiting for gpu capacity on queue ml-gpu"] });
    p.mount(model);
    const items = [...p.q('[data-testid="pending"]').querySelectorAll("li")].map((li) => li.textContent);
    expect(items).toEqual(["worker: 2 of 3 allocated; waiting for gpu capacity on queue ml-gpu"]);
    model.set("pending", []);
    expect(p.q('[data-testid="pending"]')).toBeNull();
  });

  it("shows why the run waits for the cluster's capacity, above the pending list", () => {
    const message = "queue ml-gpu has 8 GiB, 6 GiB in use by other applications: 4 GiB more needed";
    const model = fakeModel({ capacity: { message }, pending: ["chief: 0 of 1 allocated"] });
    p.mount(model);
    const box = p.q('[data-testid="capacity"]');
    expect(box.textContent).toBe(`Waiting for cluster capacity${message}`);
    expect(box.nextElementSibling.getAttribute("data-testid")).toBe("pending");
    model.set("capacity", null);
    expect(p.q('[data-testid="capacity"]')).toBeNull();
    expect(p.q('[data-testid="pending"]')).not.toBeNull();
  });
});
