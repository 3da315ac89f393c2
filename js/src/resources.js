// What each task's processes use, as the tasks report it (the `progress` trait): memory
// (RSS) beside the container's YARN memory limit, with a warning as it nears the limit
// past which YARN kills the container (the level comes with the data: `memory_level`),
// CPU, and GPU utilisation and memory where present.

import { asArray, asObject, asString, formatBytes, formatNumber, groupTasks } from "./format.js";
import { section } from "./dom.js";

/** Rows shown; with more tasks, those nearest their limit. */
export const MAX_ROWS = 8;

/**
 * The memory limit of a task in bytes: what it reports, else its request (`memory_mb`).
 * @param {Record<string, any>} p
 * @param {Record<string, any>} t
 * @returns {number | null}
 */
export function memoryLimit(p, t) {
  if (typeof p.memory_limit_bytes === "number" && p.memory_limit_bytes > 0) return p.memory_limit_bytes;
  const mb = Number(t.memory_mb);
  return Number.isFinite(mb) && mb > 0 ? mb * 1024 * 1024 : null;
}

/**
 * "ok", "high" or "critical" as the data says (`memory_level`: the thresholds live on the
 * Python side, tfyarn_jupyter/resources.py); "" when unknown.
 * @param {Record<string, any>} p
 */
export function memoryLevel(p) {
  return ["ok", "high", "critical"].includes(p.memory_level) ? p.memory_level : "";
}

/**
 * Tasks with resource figures: `{task, rss, limit, ratio, level, cpu, gpu}`, in task order.
 * @param {unknown} progress
 * @param {unknown} tasks
 */
export function usage(progress, tasks) {
  const byTask = new Map(asArray(tasks).map((t) => [asString(asObject(t).task), asObject(t)]));
  const names = Object.keys(asObject(progress));
  const order = groupTasks(names.map((task) => ({ task }))).flatMap((g) => g.tasks.map((t) => asString(t.task)));
  return order
    .map((task) => {
      const p = asObject(asObject(progress)[task]);
      const rss = typeof p.rss_bytes === "number" ? p.rss_bytes : null;
      const cpu = typeof p.cpu_percent === "number" ? p.cpu_percent : null;
      const limit = memoryLimit(p, byTask.get(task) || {});
      const ratio = rss !== null && limit ? rss / limit : null;
      return { task, rss, limit, ratio, level: memoryLevel(p), cpu, gpu: asArray(p.gpu).map(asObject) };
    })
    .filter((u) => u.rss !== null || u.cpu !== null || u.gpu.length > 0);
}

/**
 * @param {import("./dom.js").Builder} h
 * @param {ReturnType<typeof usage>[number]} u
 */
function memoryCell(h, u) {
  const level = u.level;
  const pct = u.ratio === null ? null : Math.round(u.ratio * 100);
  const text = u.rss === null ? "—" : `${formatBytes(u.rss)}${u.limit ? ` / ${formatBytes(u.limit)} (${pct}%)` : ""}`;
  const title = level === "critical" ? "near the YARN memory limit: the container will be killed past it" : level === "high" ? "memory use is high" : "";
  return h(
    "td",
    { "data-testid": "memory", "data-level": level || null, title: title || null },
    h("div", { class: "tfy-bar tfy-mem-bar", "data-level": level || null }, h("div", { class: "tfy-bar-fill", style: `width:${Math.min(100, pct ?? 0)}%` }), h("span", { class: "tfy-bar-text", text })),
    level === "critical" ? h("span", { class: "tfy-mem-warning", "data-testid": "memory-warning", text: "⚠ near the YARN limit" }) : null,
  );
}

/**
 * "gpu0 87% 3.1 GiB / 16 GiB, gpu1 …"
 * @param {Record<string, any>[]} gpus
 */
function gpuText(gpus) {
  return gpus
    .map((g, i) => `gpu${i} ${typeof g.util === "number" ? `${formatNumber(Math.round(g.util))}%` : "—"}${typeof g.mem_used === "number" ? ` ${formatBytes(g.mem_used)}${typeof g.mem_total === "number" ? ` / ${formatBytes(g.mem_total)}` : ""}` : ""}`)
    .join(", ");
}

/**
 * The resources section: absent until a task reported its usage.
 * @param {import("./model.js").Ctx} ctx
 * @returns {{ el: HTMLElement, update(): void }}
 */
export function createResources({ h, read }) {
  const el = section(h, "resources");
  function update() {
    const all = usage(read.get("progress"), read.get("tasks"));
    if (!all.length) {
      el.replaceChildren();
      return;
    }
    const shown = all.length > MAX_ROWS ? [...all].sort((a, b) => (b.ratio ?? -1) - (a.ratio ?? -1)).slice(0, MAX_ROWS) : all;
    const anyGpu = all.some((u) => u.gpu.length > 0);
    el.replaceChildren(
      h("h4", { text: all.length > MAX_ROWS ? `Resources (the ${MAX_ROWS} of ${all.length} tasks nearest their memory limit)` : "Resources" }),
      h(
        "div",
        { class: "tfy-scroll" },
        h(
          "table",
          { class: "tfy-resources", "data-testid": "resources" },
          h("thead", null, h("tr", null, h("th", { text: "task" }), h("th", { text: "memory (RSS / YARN limit)" }), h("th", { text: "CPU" }), anyGpu ? h("th", { text: "GPU" }) : null)),
          h(
            "tbody",
            null,
            ...shown.map((u) =>
              h(
                "tr",
                { "data-testid": "resources-row", "data-task": u.task },
                h("td", { class: "tfy-mono", text: u.task }),
                memoryCell(h, u),
                h("td", { class: "tfy-mono", "data-testid": "cpu", text: u.cpu === null ? "—" : `${formatNumber(Math.round(u.cpu))}%` }),
                anyGpu ? h("td", { class: "tfy-mono", "data-testid": "gpu", text: gpuText(u.gpu) || "—" }) : null,
              ),
            ),
          ),
        ),
      ),
    );
  }
  return { el, update };
}
