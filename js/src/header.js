// The panel's header: application name, id, state pills, queue, user, start time, the
// elapsed clock, the YARN UI and TensorBoard links, YARN's diagnostics, and while the
// ResourceManager does not answer (the `unreachable` trait) a note saying so. It also stamps
// the panel's root with `data-app-id` / `data-app-state`.

import { asString, asTime, formatClock, formatDuration, safeHttpUrl } from "./format.js";
import { section } from "./dom.js";

/**
 * Tone of the application state pill.
 * @param {string} state
 * @param {string} finalStatus
 */
export function appTone(state, finalStatus) {
  if (state === "RUNNING") return "blue";
  if (state === "FAILED" || finalStatus === "FAILED") return "red";
  if (state === "KILLED" || finalStatus === "KILLED") return "dark";
  if (state === "FINISHED") return "green";
  if (state === "ACCEPTED" || state === "SUBMITTED" || state === "NEW_SAVING") return "amber";
  return "grey";
}

/**
 * Tone of a final status pill.
 * @param {string} finalStatus
 */
export function finalTone(finalStatus) {
  if (finalStatus === "SUCCEEDED") return "green";
  if (finalStatus === "FAILED") return "red";
  if (finalStatus === "KILLED") return "dark";
  return "grey";
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @param {Record<string, any>} a the app trait
 */
function title({ h }, a) {
  const state = asString(a.state);
  const finalStatus = asString(a.final_status);
  return h(
    "div",
    { class: "tfy-header-title" },
    h("span", { class: "tfy-app-name", "data-testid": "app-name", text: asString(a.name) || "TensorFlow on YARN" }),
    h("span", { class: "tfy-mono tfy-muted", "data-testid": "app-id", text: asString(a.app_id) || "not submitted" }),
    state
      ? h("span", { class: "tfy-pill", "data-testid": "app-state", "data-tone": appTone(state, finalStatus), text: state })
      : null,
    finalStatus && finalStatus !== "UNDEFINED"
      ? h("span", { class: "tfy-pill", "data-testid": "app-final-status", "data-tone": finalTone(finalStatus), text: finalStatus })
      : null,
  );
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @param {Record<string, any>} a the app trait
 * @param {HTMLElement} elapsed the elapsed clock
 */
function meta({ h, read }, a, elapsed) {
  const tb = safeHttpUrl(read.get("tensorboard_url"));
  /** @param {string} label @param {HTMLElement} value */
  const item = (label, value) => h("span", null, h("span", { class: "tfy-muted", text: `${label} ` }), value);
  const url = safeHttpUrl(a.tracking_url);
  return h(
    "div",
    { class: "tfy-header-meta" },
    asString(a.queue) ? item("queue", h("span", { "data-testid": "app-queue", text: asString(a.queue) })) : null,
    asString(a.user) ? item("user", h("span", { "data-testid": "app-user", text: asString(a.user) })) : null,
    asTime(a.start_time) ? item("started", h("span", { class: "tfy-mono", text: formatClock(a.start_time) })) : null,
    item("elapsed", elapsed),
    url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", "data-testid": "yarn-ui", text: "YARN UI" }) : null,
    tb ? h("a", { href: tb, target: "_blank", rel: "noopener noreferrer", "data-testid": "tensorboard", class: "tfy-tb", text: "TensorBoard" }) : null,
  );
}

/**
 * @param {import("./model.js").Ctx} ctx
 * @param {HTMLElement} root the panel's root, stamped with the app's id and state
 * @returns {{ el: HTMLElement, update(): void, tick(): void }}
 */
export function createHeader(ctx, root) {
  const { h, read } = ctx;
  const el = section(h, "header");
  /** @type {HTMLElement | null} */
  let elapsedEl = null;

  function tick() {
    if (!elapsedEl) return;
    const ms = read.elapsedMs();
    elapsedEl.textContent = ms === null ? "—" : formatDuration(ms);
    if (ms === null) elapsedEl.removeAttribute("data-elapsed-s");
    else elapsedEl.setAttribute("data-elapsed-s", String(Math.max(0, Math.floor(ms / 1000))));
  }

  function update() {
    const a = read.app();
    root.setAttribute("data-app-id", asString(a.app_id));
    root.setAttribute("data-app-state", asString(a.state));
    elapsedEl = h("span", { class: "tfy-mono", "data-testid": "elapsed" });
    tick();
    const diag = asString(a.diagnostics).trim();
    const unreachable = asString(read.get("unreachable")).trim();
    // replaceChildren, unlike h(), would print a null child as the text "null".
    el.replaceChildren(
      title(ctx, a),
      meta(ctx, a, elapsedEl),
      ...(unreachable ? [h("div", { class: "tfy-unreachable", "data-testid": "rm-unreachable", role: "status", text: unreachable })] : []),
      ...(diag ? [h("div", { class: "tfy-diagnostics", "data-testid": "diagnostics", text: diag })] : []),
    );
  }

  return { el, update, tick };
}
