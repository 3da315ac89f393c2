// The header section (header.js), through the mounted panel.
import { describe, expect, it } from "vitest";

import { appTone, finalTone } from "../src/header.js";
import { fakeModel } from "./fake-model.js";
import { RUNNING_APP, usePanel } from "./panel.js";

const p = usePanel();

describe("header", () => {
  it("shows id, name, queue, state pill and a YARN UI link; root carries data attributes", () => {
    const root = p.mount(fakeModel({ app: RUNNING_APP }));
    expect(root.getAttribute("data-app-id")).toBe("application_1705311000000_0001");
    expect(root.getAttribute("data-app-state")).toBe("RUNNING");
    expect(p.q('[data-testid="app-id"]').textContent).toBe("application_1705311000000_0001");
    expect(p.q('[data-testid="app-name"]').textContent).toBe("mnist-dist");
    expect(p.q('[data-testid="app-queue"]').textContent).toBe("ml-gpu");
    expect(p.q('[data-testid="app-state"]').textContent).toBe("RUNNING");
    expect(p.q('[data-testid="app-state"]').getAttribute("data-tone")).toBe("blue");
    const link = p.q('[data-testid="yarn-ui"]');
    expect(link.textContent).toBe("YARN UI");
    expect(link.getAttribute("href")).toBe(RUNNING_APP.tracking_url);
    expect(link.getAttribute("target")).toBe("_blank");
  });

  it("links to TensorBoard in a new tab once the run has one", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(p.q('[data-testid="tensorboard"]')).toBeNull();
    model.set("tensorboard_url", "http://localhost:8088/proxy/application_1705311000000_0001/tensorboard/");
    const link = p.q('[data-testid="tensorboard"]');
    expect(link.textContent).toBe("TensorBoard");
    expect(link.getAttribute("href")).toBe("http://localhost:8088/proxy/application_1705311000000_0001/tensorboard/");
    expect(link.getAttribute("target")).toBe("_blank");
    model.set("tensorboard_url", "javascript:alert(1)");
    expect(p.q('[data-testid="tensorboard"]')).toBeNull();
  });

  it("updates the root's state on change:app and hides the link without a url", () => {
    const model = fakeModel({ app: RUNNING_APP });
    const root = p.mount(model);
    model.set("app", { ...RUNNING_APP, state: "FINISHED", final_status: "SUCCEEDED", tracking_url: "" });
    expect(root.getAttribute("data-app-state")).toBe("FINISHED");
    expect(p.q('[data-testid="app-final-status"]').textContent).toBe("SUCCEEDED");
    expect(p.q('[data-testid="yarn-ui"]')).toBeNull();
  });

  it("never links a javascript: tracking url", () => {
    p.mount(fakeModel({ app: { ...RUNNING_APP, tracking_url: "javascript:alert(1)" } }));
    expect(p.q('[data-testid="yarn-ui"]')).toBeNull();
  });

  it("adds no diagnostics line (and no stray text) when the app has none", () => {
    p.mount(fakeModel({ app: { ...RUNNING_APP, diagnostics: "" } }));
    expect(p.q('[data-testid="diagnostics"]')).toBeNull();
    expect(p.el.textContent).not.toContain("null");
  });

  it("escapes model text instead of parsing it as HTML", () => {
    p.mount(fakeModel({ app: { ...RUNNING_APP, name: "<img src=x onerror=alert(1)>" } }));
    expect(p.q('[data-testid="app-name"]').textContent).toBe("<img src=x onerror=alert(1)>");
    expect(p.el.querySelector("img")).toBeNull();
  });
});

describe("tones", () => {
  it("colours the state pill by state, then by final status", () => {
    const tones = ["RUNNING", "FAILED", "KILLED", "FINISHED", "ACCEPTED", "SUBMITTED", "NEW_SAVING", "NEW"].map(
      (s) => appTone(s, "UNDEFINED"),
    );
    expect(tones).toEqual(["blue", "red", "dark", "green", "amber", "amber", "amber", "grey"]);
    expect(appTone("FINISHED", "FAILED")).toBe("red");
    expect(appTone("FINISHED", "KILLED")).toBe("dark");
  });

  it("colours a final status pill", () => {
    expect(["SUCCEEDED", "FAILED", "KILLED", "UNDEFINED", ""].map(finalTone)).toEqual(["green", "red", "dark", "grey", "grey"]);
  });
});

describe("header: the ResourceManager unreachable", () => {
  it("says so while the trait is set, and drops the note once it answers again", () => {
    const model = fakeModel({ app: RUNNING_APP });
    p.mount(model);
    expect(p.q('[data-testid="rm-unreachable"]')).toBeNull();
    const note = "ResourceManager unreachable since 06:50:12 (40 s; no answer in 8 s).";
    model.set("unreachable", note);
    const el = p.q('[data-testid="rm-unreachable"]');
    expect(el.textContent).toBe(note);
    expect(el.getAttribute("role")).toBe("status");
    model.set("unreachable", "");
    expect(p.q('[data-testid="rm-unreachable"]')).toBeNull();
  });
});
