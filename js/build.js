// Bundles src/widget.js into one ES module that the Python side loads as `_esm`.
// `npm run build` runs this file; the tests import `buildOptions` to check the bundle.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));

/** @type {import("esbuild").BuildOptions} */
export const buildOptions = {
  entryPoints: [path.join(here, "src", "widget.js")],
  outfile: path.join(here, "..", "tfyarn_jupyter", "static", "widget.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2020"],
  minify: true,
  legalComments: "none",
  logLevel: "info",
};

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await build(buildOptions);
}
