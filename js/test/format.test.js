// The pure helpers (format.js).
import { describe, expect, it } from "vitest";

import {
  alignSeries,
  etaSeconds,
  formatBytes,
  formatDuration,
  formatNumber,
  groupTasks,
  metricNames,
  restartText,
  safeHttpUrl,
  seriesByStep,
  stateCounts,
} from "../src/format.js";

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

  it("finds the metrics to chart, loss and accuracy first, without the step", () => {
    const rows = [{ step: 1, auc: 0.5, global_step: 1, t: 9 }, { step: 2, accuracy: 0.7, loss: 0.3, auc: 0.6, name: "x" }];
    expect(metricNames(rows)).toEqual(["loss", "accuracy", "auc"]);
    expect(seriesByStep([{ step: 3, loss: 1 }, { step: 1, loss: 2 }, { loss: 5 }, { step: 2, loss: null }], "loss")).toEqual([[1, 3], [2, 1]]);
    expect(seriesByStep([{ global_step: 7, loss: 1 }], "loss")).toEqual([[7], [1]]);
  });

  it("puts several curves on one shared step axis with gaps as null", () => {
    expect(alignSeries([[[1, 0.5], [3, 0.3]], [[2, 0.9], [3, 0.8]]])).toEqual([
      [1, 2, 3],
      [0.5, null, 0.3],
      [null, 0.9, 0.8],
    ]);
    expect(alignSeries([[]])).toEqual([[], []]);
  });

  it("formats bytes and tells the time left from the rate", () => {
    expect(formatBytes(512 * 1024 * 1024)).toBe("512 MiB");
    expect(formatBytes(1.5 * 1024 ** 3)).toBe("1.5 GiB");
    expect(formatBytes(900)).toBe("900 B");
    expect(formatBytes(null)).toBe("");
    expect(etaSeconds({ step: 100, max_steps: 400, steps_per_s: 10 })).toBe(30);
    expect(etaSeconds({ step: 400, max_steps: 400, steps_per_s: 0 })).toBe(0);
    expect(etaSeconds({ step: 100, max_steps: null, steps_per_s: 10 })).toBeNull();
    expect(etaSeconds({ step: 100, max_steps: 400, steps_per_s: 0 })).toBeNull();
  });

  it("counts tasks per state in the order states go", () => {
    const tasks = ["running", "requested", "running", "succeeded"].map((state) => ({ state }));
    expect(stateCounts(tasks)).toEqual([["requested", 1], ["running", 2], ["succeeded", 1]]);
  });

  it("only passes http(s) urls", () => {
    expect(safeHttpUrl("https://rm:8090/x")).toBe("https://rm:8090/x");
    expect(safeHttpUrl("rm:8088/proxy/a/")).toBe("http://rm:8088/proxy/a/");
    expect(safeHttpUrl("javascript:alert(1)")).toBe("");
    expect(safeHttpUrl("data:text/html,hi")).toBe("");
    expect(safeHttpUrl("")).toBe("");
  });

  it("says a restart in words, with what it knows", () => {
    expect(restartText({ n: 1, cause: "preempted", exit_status: -102, step: 1200, resumed_step: 1000, steps_lost: 200 })).toBe(
      "restart 1: preempted (exit status -102) at step 1200, resumed at step 1000: 200 steps lost",
    );
    expect(restartText({ n: 2, cause: "peer restarted", exit_status: null, step: 7, resumed_step: null, steps_lost: null })).toBe(
      "restart 2: peer restarted at step 7",
    );
    expect(restartText({ n: 3, steps_lost: 1 })).toBe("restart 3: lost: 1 step lost");
  });
});
