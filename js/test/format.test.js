// The pure helpers (format.js).
import { describe, expect, it } from "vitest";

import {
  chartSeries,
  formatDuration,
  formatNumber,
  groupTasks,
  safeHttpUrl,
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
