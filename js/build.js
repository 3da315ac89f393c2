// Builds the front end the Python side loads: src/widget.js bundled by esbuild into one ES
// module (`_esm`), and beside it (`_css`) uPlot's stylesheet followed by src/widget.css.
// `npm run build` runs this file; the tests import its options to check the build.
import { build } from "esbuild";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const staticDir = path.join(here, "..", "tfyarn_jupyter", "panel", "static");

/** @type {import("esbuild").BuildOptions} */
export const buildOptions = {
  entryPoints: [path.join(here, "src", "widget.js")],
  outfile: path.join(staticDir, "widget.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2020"],
  minify: true,
  legalComments: "none",
  logLevel: "info",
};

/** The stylesheets, and where the build puts them (tfyarn_jupyter/panel/widget.py's `_css`). */
export const css = {
  uplot: createRequire(import.meta.url).resolve("uplot/dist/uPlot.min.css"),
  source: path.join(here, "src", "widget.css"),
  outfile: path.join(staticDir, "widget.css"),
};

/**
 * `text`'s rules with every selector put under `scope`, so that a stylesheet written for a
 * whole page (uPlot's) touches nothing outside the panel. Plain rules only: at-rules are
 * refused, rather than scoped wrongly.
 * @param {string} text
 * @param {string} scope
 */
export function scopeCss(text, scope) {
  if (text.includes("@")) throw new Error("scopeCss: at-rules are not supported");
  return text
    .split("}")
    .filter((rule) => rule.includes("{"))
    .map((rule) => {
      const [selectors, ...body] = rule.split("{");
      const scoped = selectors.split(",").map((sel) => `${scope} ${sel.trim()}`);
      return `${scoped.join(", ")} {${body.join("{")}}`;
    })
    .join("\n");
}

/**
 * Writes uPlot's stylesheet, scoped to the panel, then the panel's own, unchanged: the
 * panel's rules come last and win.
 * @param {string} [outfile]
 */
export async function copyCss(outfile = css.outfile) {
  await mkdir(path.dirname(outfile), { recursive: true });
  const [uplot, own] = await Promise.all([readFile(css.uplot, "utf8"), readFile(css.source, "utf8")]);
  await writeFile(outfile, `/* uPlot ${uplotVersion()} (MIT), scoped to .tfyarn-panel */\n${scopeCss(uplot, ".tfyarn-panel")}\n${own}`);
}

/** The bundled uPlot's version, for the stylesheet's header. */
function uplotVersion() {
  return createRequire(import.meta.url)("uplot/package.json").version;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await build(buildOptions);
  await copyCss();
}
