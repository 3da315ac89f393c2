// The DOM helpers (dom.js).
import { describe, expect, it, vi } from "vitest";

import { builder, section } from "../src/dom.js";

const h = builder(document);

describe("builder", () => {
  it("sets attributes, text and listeners, and skips null, undefined and false", () => {
    const onclick = vi.fn();
    const node = h("button", { type: "button", text: 42, disabled: true, title: null, hidden: false, onclick });
    expect(node.getAttribute("type")).toBe("button");
    expect(node.textContent).toBe("42");
    expect(node.getAttribute("disabled")).toBe("");
    expect(node.hasAttribute("title")).toBe(false);
    expect(node.hasAttribute("hidden")).toBe(false);
    expect(node.hasAttribute("onclick")).toBe(false);
    node.dispatchEvent(new MouseEvent("click"));
    expect(onclick).toHaveBeenCalledTimes(1);
  });

  it("appends element and text children, skipping empty ones, never parsing HTML", () => {
    const node = h("div", null, "a <b>", null, undefined, false, h("span", { text: "c" }));
    expect(node.childNodes.length).toBe(2);
    expect(node.textContent).toBe("a <b>c");
    expect(node.querySelector("b")).toBeNull();
  });
});

describe("section", () => {
  it("names a section by class for the browser tests", () => {
    const s = section(h, "header");
    expect(s.tagName).toBe("SECTION");
    expect(s.className).toBe("tfy-section tfy-header-section");
  });
});
