// The timeline (timeline.js): one bar per task, requested → allocated → running → ended.
import { describe, expect, it, vi } from "vitest";

import { restartMarks, taskPhases, taskSegments, ticks, timelineModel } from "../src/timeline.js";
import { fakeModel } from "./fake-model.js";
import { RUNNING_APP, T0, task, usePanel } from "./panel.js";

const p = usePanel();

const ENDED = {
  requested_time: T0 + 1000,
  allocated_time: T0 + 3000,
  running_time: T0 + 5000,
  end_time: T0 + 25_000,
};

describe("timeline", () => {
  it("splits a task into waiting, launching and running segments", () => {
    const segs = taskSegments({ state: "succeeded", ...ENDED }, RUNNING_APP, T0 + 99_000);
    expect(segs).toEqual([
      { kind: "wait", from: T0 + 1000, to: T0 + 3000 },
      { kind: "launch", from: T0 + 3000, to: T0 + 5000 },
      { kind: "run", from: T0 + 5000, to: T0 + 25_000 },
    ]);
  });

  it("falls back on the times it has: app start, container start, duration, now", () => {
    const now = T0 + 60_000;
    expect(taskSegments({ state: "requested" }, RUNNING_APP, now)).toEqual([{ kind: "wait", from: T0, to: now }]);
    const running = taskSegments({ state: "running", start_time: T0 + 4000 }, RUNNING_APP, now);
    expect(running.map((s) => [s.kind, s.from, s.to])).toEqual([["wait", T0, T0 + 4000], ["launch", T0 + 4000, T0 + 4000], ["run", T0 + 4000, now]]);
    const done = taskSegments({ state: "succeeded", start_time: T0 + 4000, finish_time: 0, duration_s: 12 }, RUNNING_APP, now);
    expect(done[done.length - 1]).toEqual({ kind: "run", from: T0 + 4000, to: T0 + 16_000 });
  });

  it("reads a task's phases in their order and leaves out those it did not reach", () => {
    const t = { phases: { first_step: T0 + 9000, interpreter: T0 + 5500, tensorflow: T0 + 7000, bogus: T0 } };
    expect(taskPhases(t)).toEqual([
      { name: "interpreter", at: T0 + 5500 },
      { name: "tensorflow", at: T0 + 7000 },
      { name: "first_step", at: T0 + 9000 },
    ]);
    expect(taskPhases({})).toEqual([]);
  });

  it("marks each phase on the task's bar, timed from its container's start", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 40_000);
    const phases = { interpreter: T0 + 5500, tensorflow: T0 + 8000, first_step: T0 + 12_000 };
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", { ...ENDED, phases })] }));
    const marks = p.qa('[data-testid="timeline-phase"]');
    expect(marks.map((m) => m.getAttribute("data-phase"))).toEqual(["interpreter", "tensorflow", "first_step"]);
    expect(marks[1].getAttribute("title")).toBe("TensorFlow imported: +5s");
    const key = p.q('[data-testid="timeline-legend"] .tfy-seg-key[data-kind="phase"]');
    expect(key.parentElement.textContent).toBe("a step of the task's start (hover: which, and when)");
  });

  it("keys the phase markers only where a bar has one", () => {
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED)] }));
    expect(p.qa('[data-testid="timeline-phase"]').length).toBe(0);
    expect(p.q('[data-testid="timeline-legend"] .tfy-seg-key[data-kind="phase"]')).toBeNull();
  });

  it("has round ticks along the axis", () => {
    expect(ticks(T0, T0 + 60_000).map((t) => t.label)).toEqual(["0s", "+10s", "+20s", "+30s", "+40s", "+50s", "+1m 00s"]);
    expect(ticks(T0, T0 + 25 * 60_000).map((t) => t.label)).toEqual(["0s", "+5m 00s", "+10m 00s", "+15m 00s", "+20m 00s", "+25m 00s"]);
    expect(ticks(T0, T0 + 3000).length).toBe(4);
  });

  it("draws one row per task, segments in percent of a shared axis, and grows while running", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 40_000);
    const tasks = [task("chief:0", "succeeded", ENDED), task("evaluator:0", "running", { ...ENDED, end_time: 0 })];
    p.mount(fakeModel({ app: RUNNING_APP, tasks }));
    const rows = p.qa('[data-testid="timeline-row"]');
    expect(rows.map((r) => r.getAttribute("data-task"))).toEqual(["chief:0", "evaluator:0"]);
    const segs = rows[0].querySelectorAll(".tfy-seg");
    expect([...segs].map((s) => s.getAttribute("data-kind"))).toEqual(["wait", "launch", "run"]);
    // axis from T0+1s to T0+40s: the chief's run is 4s..24s of 39s
    expect(segs[2].getAttribute("style")).toBe("left:10.26%;width:51.28%");
    expect(p.qa('[data-testid="timeline-axis"] .tfy-tick')[0].textContent).toBe("0s");
    const evRun = () => Number(p.row("evaluator:0") && p.q('[data-testid="timeline-row"][data-task="evaluator:0"] [data-kind="run"]').getAttribute("data-ms"));
    expect(evRun()).toBe(35_000);
    vi.advanceTimersByTime(2000);
    expect(evRun()).toBe(37_000);
  });

  it("keys each colour the bars use: a running bar, and a task that succeeded", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 40_000);
    const labels = () => p.qa('[data-testid="timeline-legend"] > span').map((s) => s.textContent);
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED), task("evaluator:0", "running", { ...ENDED, end_time: 0 })] }));
    expect(labels()).toEqual(["requested → allocated", "allocated → running", "running → ended", "running → succeeded"]);
  });

  it("has no running key once every task has ended, and one key per end state", () => {
    const labels = () => p.qa('[data-testid="timeline-legend"] > span').map((s) => s.textContent);
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED), task("worker:0", "failed", ENDED)] }));
    expect(labels()).toEqual(["requested → allocated", "allocated → running", "running → succeeded", "running → failed"]);
    const failedKey = p.q('[data-testid="timeline-legend"] .tfy-seg-key[data-state="failed"]');
    expect(failedKey.getAttribute("data-kind")).toBe("run");
  });

  it("groups by type from 48 tasks, one bar per type, expandable", () => {
    const tasks = [task("chief:0", "running", ENDED)];
    for (let i = 0; i < 60; i += 1) tasks.push(task(`worker:${i}`, i < 50 ? "running" : "requested", ENDED));
    expect(timelineModel(tasks, RUNNING_APP, T0 + 30_000).bars.length).toBe(61);
    p.mount(fakeModel({ app: RUNNING_APP, tasks }));
    const groups = p.qa('[data-testid="timeline-group"]');
    expect(groups.map((g) => g.getAttribute("data-type"))).toEqual(["chief", "worker"]);
    expect(p.qa('[data-testid="timeline-row"]').length).toBe(0);
    groups[1].open = true;
    groups[1].dispatchEvent(new Event("toggle"));
    expect(p.qa('[data-testid="timeline-row"]').length).toBe(60);
  });

  // worker:1 lost its first container at +9s (preempted), ran again from +12s
  const RESTARTED = {
    requested_time: T0 + 1000,
    allocated_time: T0 + 12_000,
    running_time: T0 + 14_000,
    end_time: T0 + 30_000,
    restarts: 1,
    restart_cause: "preempted",
    steps_lost: 200,
    restart_log: [{ n: 1, cause: "preempted", exit_status: -102, step: 1200, resumed_step: 1000, steps_lost: 200, lost_start: T0 + 3000, lost_at: T0 + 9000, restarted_at: T0 + 12_000 }],
  };

  it("draws a restarted task's lost container, the gap until its next one, then its run", () => {
    expect(taskSegments({ state: "succeeded", ...RESTARTED }, RUNNING_APP, T0 + 99_000)).toEqual([
      { kind: "wait", from: T0 + 1000, to: T0 + 3000 },
      { kind: "lost", from: T0 + 3000, to: T0 + 9000 },
      { kind: "gap", from: T0 + 9000, to: T0 + 12_000 },
      { kind: "launch", from: T0 + 12_000, to: T0 + 14_000 },
      { kind: "run", from: T0 + 14_000, to: T0 + 30_000 },
    ]);
    expect(restartMarks(RESTARTED)).toEqual([
      { n: 1, cause: "preempted", at: T0 + 9000, text: "restart 1: preempted (exit status -102) at step 1200, resumed at step 1000: 200 steps lost" },
    ]);
  });

  it("runs the gap to now while the replacement waits for its container", () => {
    const waiting = { ...RESTARTED, state: "requested", allocated_time: 0, running_time: 0, end_time: 0, start_time: 0 };
    waiting.restart_log = [{ ...RESTARTED.restart_log[0], restarted_at: 0 }];
    const segs = taskSegments(waiting, RUNNING_APP, T0 + 20_000);
    expect(segs.map((s) => [s.kind, s.from, s.to])).toEqual([
      ["wait", T0 + 1000, T0 + 3000],
      ["lost", T0 + 3000, T0 + 9000],
      ["gap", T0 + 9000, T0 + 20_000],
    ]);
  });

  it("marks each restart with its cause on the bar, and keys the lost run and the gap", () => {
    vi.useFakeTimers();
    vi.setSystemTime(T0 + 40_000);
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED), task("worker:1", "succeeded", RESTARTED)] }));
    const row = p.q('[data-testid="timeline-row"][data-task="worker:1"]');
    expect([...row.querySelectorAll(".tfy-seg")].map((s) => s.getAttribute("data-kind"))).toEqual(["wait", "lost", "gap", "launch", "run"]);
    const marks = p.qa('[data-testid="timeline-restart"]');
    expect(marks.length).toBe(1);
    expect(marks[0].getAttribute("data-cause")).toBe("preempted");
    expect(marks[0].textContent).toBe("↻ preempted");
    expect(marks[0].getAttribute("title")).toContain("200 steps lost");
    // axis from T0+1s to the last end, T0+30s: lost at 8s of 29s
    expect(marks[0].getAttribute("style")).toBe("left:27.59%");
    expect(marks[0].getAttribute("data-side")).toBe("left"); // its flag over the lost run
    const labels = p.qa('[data-testid="timeline-legend"] > span').map((s) => s.textContent);
    expect(labels).toEqual(["requested → allocated", "allocated → running", "running → succeeded", "running → lost", "lost → restarted (↻ why)"]);
    // a restart near the axis's start flags its cause right of it, off the labels
    p.unmount();
    p.el.replaceChildren();
    const early = { ...RESTARTED, restart_log: [{ ...RESTARTED.restart_log[0], lost_start: T0 + 1500, lost_at: T0 + 2000 }] };
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED), task("worker:1", "succeeded", early)] }));
    expect(p.q('[data-testid="timeline-restart"]').getAttribute("data-side")).toBe("right");
    // a timeline without restarts has neither marker nor key
    p.unmount();
    p.el.replaceChildren();
    p.mount(fakeModel({ app: RUNNING_APP, tasks: [task("chief:0", "succeeded", ENDED)] }));
    expect(p.qa('[data-testid="timeline-restart"]').length).toBe(0);
    expect(p.qa('[data-testid="timeline-legend"] > span').map((s) => s.textContent)).not.toContain("running → lost");
  });
});
