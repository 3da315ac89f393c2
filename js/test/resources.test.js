// Memory, CPU and GPU use beside the YARN limit (resources.js).
import { describe, expect, it } from "vitest";

import { memoryLevel, memoryLimit } from "../src/resources.js";
import { fakeModel } from "./fake-model.js";
import { CSS_TEXT, RUNNING_APP, task, usePanel } from "./panel.js";

const p = usePanel();
const GiB = 1024 ** 3;

describe("resources", () => {
  it("tells the level of memory use and the limit from the report or the request", () => {
    expect(memoryLevel({ memory_level: "ok" })).toBe("ok");
    expect(memoryLevel({ memory_level: "high" })).toBe("high");
    expect(memoryLevel({ memory_level: "critical" })).toBe("critical");
    expect(memoryLevel({ memory_level: "bogus" })).toBe("");
    expect(memoryLevel({ rss_bytes: 0.95 * GiB, memory_limit_bytes: GiB })).toBe("");
    expect(memoryLimit({ memory_limit_bytes: GiB }, { memory_mb: 2048 })).toBe(GiB);
    expect(memoryLimit({}, { memory_mb: 2048 })).toBe(2 * GiB);
    expect(memoryLimit({}, {})).toBeNull();
  });

  it("shows RSS beside the limit and CPU; warns at the level the data gives", () => {
    const progress = {
      "chief:0": { step: 10, rss_bytes: 0.5 * GiB, cpu_percent: 187.4, memory_limit_bytes: GiB, memory_level: "ok" },
      "evaluator:0": { rss_bytes: 0.95 * GiB, cpu_percent: 12, memory_level: "critical" },
      "worker:0": { rss_bytes: 0.85 * GiB, memory_limit_bytes: GiB, memory_level: "high" },
    };
    const tasks = [task("chief:0", "running"), task("evaluator:0", "running", { memory_mb: 1024 })];
    p.mount(fakeModel({ app: RUNNING_APP, tasks, progress }));
    const chief = p.q('[data-testid="resources-row"][data-task="chief:0"]');
    expect(chief.querySelector('[data-testid="memory"]').textContent).toBe("512 MiB / 1.0 GiB (50%)");
    expect(chief.querySelector('[data-testid="memory"]').getAttribute("data-level")).toBe("ok");
    expect(chief.querySelector('[data-testid="cpu"]').textContent).toBe("187%");
    const ev = p.q('[data-testid="resources-row"][data-task="evaluator:0"]');
    const mem = ev.querySelector('[data-testid="memory"]');
    expect(mem.getAttribute("data-level")).toBe("critical");
    expect(ev.querySelector('[data-testid="memory-warning"]').textContent).toContain("near the YARN limit");
    const worker = p.q('[data-testid="resources-row"][data-task="worker:0"] [data-testid="memory"]');
    expect(worker.getAttribute("data-level")).toBe("high");
    expect(worker.getAttribute("title")).toBe("memory use is high");
    expect(worker.querySelector('[data-testid="memory-warning"]')).toBeNull();
    expect(p.q('[data-testid="resources"] th:nth-child(4)')).toBeNull();
    expect(CSS_TEXT).toMatch(/\[data-level="critical"\] \.tfy-bar-fill \{ background: #c62828/);
  });

  it("shows GPU utilisation and memory where a task reports them", () => {
    const progress = { "chief:0": { rss_bytes: GiB, gpu: [{ util: 87.2, mem_used: 3 * GiB, mem_total: 16 * GiB }] } };
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "running")], progress }));
    expect(p.q('[data-testid="gpu"]').textContent).toBe("gpu0 87% 3.0 GiB / 16 GiB");
    expect(p.q('[data-testid="memory"]').textContent).toBe("1.0 GiB");
  });

  it("with many tasks shows those nearest their limit", () => {
    const progress = {};
    for (let i = 0; i < 30; i += 1) progress[`worker:${i}`] = { rss_bytes: (i / 30) * GiB, memory_limit_bytes: GiB };
    p.mount(fakeModel({ app: RUNNING_APP, progress }));
    const rows = p.qa('[data-testid="resources-row"]').map((r) => r.getAttribute("data-task"));
    expect(rows.length).toBe(8);
    expect(rows[0]).toBe("worker:29");
    expect(p.q(".tfy-resources-section h4").textContent).toContain("8 of 30");
  });
});
