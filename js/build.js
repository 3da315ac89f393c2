// Builds the front end the Python side loads: src/widget.js bundled by esbuild into one ES
// module (`_esm`), and src/widget.css copied as is beside it (`_css`).
// `npm run build` runs this file; the tests import its options to check the build.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const staticDir = path.join(here, "..", "tfyarn_jupyter", "static");

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

/** The stylesheet, and where the build puts it (tfyarn_jupyter/widget.py's `_css`). */
export const css = {
  source: path.join(here, "src", "widget.css"),
  outfile: path.join(staticDir, "widget.css"),
};

/**
 * Copies the stylesheet unchanged, so the panel looks exactly as its source says.
 * @param {string} [outfile]
 */
export async function copyCss(outfile = css.outfile) {
  await mkdir(path.dirname(outfile), { recursive: true });
  await copyFile(css.source, outfile);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await build(buildOptions);
  await copyCss();
}
