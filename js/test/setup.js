// uPlot needs a canvas and matchMedia, which jsdom lacks: every test file gets the fake.
// Each test starts with no remembered choices (model.js's memoryOf).
import { beforeEach, vi } from "vitest";

import { forgetRuns } from "../src/model.js";
import { reset } from "./fake-uplot.js";

vi.mock("uplot", () => import("./fake-uplot.js"));

beforeEach(() => {
  reset();
  forgetRuns();
});
