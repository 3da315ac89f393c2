// The error line: the `error` trait, or an error the front end met (a failed send, an
// `error` message from Python), with a button to dismiss it.

import { section } from "./dom.js";

/**
 * @param {import("./dom.js").Builder} h
 * @param {string} initial the error shown first
 * @returns {{ el: HTMLElement, set(text: string): void }}
 */
export function createError(h, initial) {
  const el = section(h, "error");
  let text = initial;

  function update() {
    if (!text) {
      el.replaceChildren();
      return;
    }
    el.replaceChildren(
      h(
        "div",
        { class: "tfy-error", role: "alert" },
        h("span", { "data-testid": "error", text }),
        h("button", { type: "button", "data-testid": "dismiss-error", title: "Dismiss", text: "×", onclick: () => set("") }),
      ),
    );
  }

  /** @param {string} next */
  function set(next) {
    text = next;
    update();
  }

  update();
  return { el, set };
}
