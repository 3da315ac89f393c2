// The panel mounted in jsdom for a test file, with query helpers and task fixtures.
import { afterEach, beforeEach, vi } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import widget from "../src/widget.js";

export const T0 = Date.UTC(2024, 0, 15, 9, 30, 0); // an app start time, epoch ms

/** The stylesheet the Python side loads as `_css`. */
export const CSS_TEXT = readFileSync(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "src", "widget.css"),
  "utf8",
);

export function task(name, state, extra = {}) {
  const [type, index] = name.split(":");
  return {
    task: name,
    type,
    index: Number(index),
    state,
    node: state === "requested" ? "" : "localhost:45423",
    gpu: false,
    container_id: state === "requested" ? "" : `container_1705311000000_0001_01_00000${index}`,
    start_time: state === "requested" ? 0 : T0 + 1000,
    finish_time: 0,
    exit_message: "",
    ...extra,
  };
}

export const RUNNING_APP = {
  app_id: "application_1705311000000_0001",
  name: "mnist-dist",
  queue: "ml-gpu",
  user: "alice",
  state: "RUNNING",
  final_status: "UNDEFINED",
  start_time: T0,
  finish_time: 0,
  tracking_url: "http://localhost:8088/proxy/application_1705311000000_0001/",
  diagnostics: "",
};

export const click = (node) => node.dispatchEvent(new MouseEvent("click", { bubbles: true }));

/**
 * Registers a fresh host element per test (removed, with the panel cleaned up and real
 * timers back, after it) and returns helpers that act on it.
 */
export function usePanel() {
  const p = {
    /** @type {HTMLElement} */
    el: undefined,
    /** @type {(() => void) | undefined} */
    cleanup: undefined,
    mount(model) {
      p.cleanup = widget.render({ model, el: p.el });
      // Every view asks for the loss histories as it starts (progress.test.js checks it);
      // the other tests look at what the user's actions send.
      if (Array.isArray(model.sent) && model.sent[0]?.type === "history-sync") model.sent.shift();
      return p.el.querySelector(".tfyarn-panel");
    },
    /** Runs the panel's cleanup now instead of after the test. */
    unmount() {
      p.cleanup();
      p.cleanup = undefined;
    },
    q: (sel) => p.el.querySelector(sel),
    qa: (sel) => [...p.el.querySelectorAll(sel)],
    row: (name) => p.q(`[data-testid="task-row"][data-task="${name}"]`),
  };
  beforeEach(() => {
    p.el = document.createElement("div");
    document.body.appendChild(p.el);
    p.cleanup = undefined;
  });
  afterEach(() => {
    if (typeof p.cleanup === "function") p.cleanup();
    p.el.remove();
    vi.useRealTimers();
  });
  return p;
}
