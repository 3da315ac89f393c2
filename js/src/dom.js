// DOM helpers shared by the panel's sections. Model data goes into the page through
// textContent / setAttribute only, never innerHTML.

import { asString } from "./format.js";

/**
 * @typedef {(
 *   tag: string,
 *   attrs?: Record<string, any> | null,
 *   ...children: (Node | string | null | undefined | false)[]
 * ) => HTMLElement} Builder
 */

/**
 * A tiny element builder. `attrs` keys are set with setAttribute, except `text`
 * (textContent) and `on*` functions (event listeners). Children that are strings become
 * text nodes; null/false children are skipped.
 * @param {Document} doc
 * @returns {Builder}
 */
export function builder(doc) {
  return function h(tag, attrs, ...children) {
    const node = doc.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = asString(v);
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : asString(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(typeof c === "string" ? doc.createTextNode(c) : c);
    }
    return node;
  };
}

/**
 * The `<section>` one part of the panel draws into; browser tests find parts by its class.
 * @param {Builder} h
 * @param {string} name
 */
export function section(h, name) {
  return h("section", { class: `tfy-section tfy-${name}-section` });
}
