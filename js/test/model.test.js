// Reading the model and sending to it (model.js).
import { afterEach, describe, expect, it, vi } from "vitest";

import { memoryOf, reader, sender } from "../src/model.js";
import { fakeModel } from "./fake-model.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("reader", () => {
  it("reads a throwing model as undefined and non-objects as empty", () => {
    const read = reader({ ...fakeModel(), get: () => { throw new Error("not synced"); } });
    expect(read.get("app")).toBeUndefined();
    expect(read.app()).toEqual({});
    expect(read.summary()).toBeNull();
    expect(read.ended()).toBe(false);
    expect(read.elapsedMs()).toBeNull();
    expect(reader(fakeModel({ summary: [] })).summary()).toBeNull();
  });

  it("counts the run as ended on a terminal state or once a summary came", () => {
    expect(reader(fakeModel({ app: { state: "RUNNING" } })).ended()).toBe(false);
    for (const state of ["FINISHED", "FAILED", "KILLED"]) {
      expect(reader(fakeModel({ app: { state } })).ended()).toBe(true);
    }
    expect(reader(fakeModel({ app: { state: "RUNNING" }, summary: {} })).ended()).toBe(true);
  });

  it("measures elapsed time to now while running, to the finish once ended", () => {
    vi.useFakeTimers();
    vi.setSystemTime(10_000);
    expect(reader(fakeModel({ app: { state: "RUNNING", start_time: 4000 } })).elapsedMs()).toBe(6000);
    const finished = { state: "FINISHED", start_time: 4000, finish_time: 7000 };
    expect(reader(fakeModel({ app: finished })).elapsedMs()).toBe(3000);
    const noFinish = { state: "KILLED", start_time: 4000 };
    expect(reader(fakeModel({ app: noFinish, summary: { duration_s: 2 } })).elapsedMs()).toBe(2000);
    expect(reader(fakeModel({ app: noFinish })).elapsedMs()).toBe(6000);
  });
});

describe("sender", () => {
  it("sends, and reports a failed send instead of throwing", () => {
    const model = fakeModel();
    const errors = [];
    sender(model, (e) => errors.push(e))({ type: "cancel" });
    expect(model.sent).toEqual([{ type: "cancel" }]);
    const broken = { ...model, send: () => { throw new Error("comm closed"); } };
    sender(broken, (e) => errors.push(e))({ type: "kill", task: "worker:0" });
    expect(errors).toEqual(["Could not send kill: comm closed"]);
  });
});

describe("memoryOf", () => {
  it("is one Map per run for every proxy of its model, and per model before an id", () => {
    const a = fakeModel({ app: { app_id: "application_1_0007" } });
    const proxyA = { get: (k) => a.get(k) };
    expect(memoryOf(a)).toBe(memoryOf(proxyA));
    expect(memoryOf(fakeModel({ app: { app_id: "application_1_0008" } }))).not.toBe(memoryOf(a));
    const unsubmitted = fakeModel();
    expect(memoryOf(unsubmitted)).toBe(memoryOf(unsubmitted));
    expect(memoryOf(unsubmitted)).not.toBe(memoryOf(fakeModel()));
    expect(memoryOf({ get: () => { throw new Error("not synced"); } })).toBeInstanceOf(Map);
  });
});
