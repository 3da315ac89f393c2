// Styles of the tfyarn panel, injected once per document by widget.js (the bundle is one
// file, loaded by the Python side as `_esm`). Colours come from JupyterLab's theme
// variables, with fallbacks for plain pages; badges use solid fills with their own text
// colour so they read the same on light and dark themes.

export const STYLE_ID = "tfyarn-jupyter-style";

export const CSS = `
.tfyarn-panel {
  font-family: var(--jp-ui-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color1, #222);
  background: var(--jp-layout-color1, transparent);
  border: 1px solid var(--jp-border-color2, #d0d0d0);
  border-radius: 4px;
  padding: 8px 10px;
  line-height: 1.4;
  box-sizing: border-box;
  max-width: 100%;
}
.tfyarn-panel * { box-sizing: border-box; }
.tfyarn-panel section + section { margin-top: 8px; }
.tfyarn-panel .tfy-mono {
  font-family: var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace);
  font-size: var(--jp-code-font-size, 12px);
}
.tfyarn-panel .tfy-muted { color: var(--jp-ui-font-color2, #616161); }
.tfyarn-panel .tfy-header-title { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
.tfyarn-panel .tfy-app-name { font-weight: 600; font-size: var(--jp-ui-font-size2, 14px); }
.tfyarn-panel .tfy-header-meta { display: flex; flex-wrap: wrap; gap: 4px 14px; margin-top: 2px; }
.tfyarn-panel .tfy-header-meta a { color: var(--jp-content-link-color, #1565c0); }
.tfyarn-panel .tfy-diagnostics {
  white-space: pre-wrap; margin-top: 4px; color: var(--jp-ui-font-color2, #616161);
  max-height: 6em; overflow: auto;
}
.tfyarn-panel .tfy-pill, .tfyarn-panel .tfy-badge {
  display: inline-block; border-radius: 9px; padding: 0 7px; font-size: 11px;
  font-weight: 600; line-height: 17px; white-space: nowrap; color: #fff;
  background: #757575; border: 1px solid transparent;
}
.tfyarn-panel .tfy-pill[data-tone="grey"], .tfyarn-panel .tfy-badge[data-state="requested"] { background: #757575; color: #fff; }
.tfyarn-panel .tfy-pill[data-tone="amber"], .tfyarn-panel .tfy-badge[data-state="allocated"] { background: #f0a30a; color: #1f1f1f; }
.tfyarn-panel .tfy-pill[data-tone="blue"], .tfyarn-panel .tfy-badge[data-state="running"] { background: #1e6fd0; color: #fff; }
.tfyarn-panel .tfy-pill[data-tone="green"], .tfyarn-panel .tfy-badge[data-state="succeeded"] { background: #2e7d32; color: #fff; }
.tfyarn-panel .tfy-pill[data-tone="red"], .tfyarn-panel .tfy-badge[data-state="failed"] { background: #c62828; color: #fff; }
.tfyarn-panel .tfy-pill[data-tone="dark"], .tfyarn-panel .tfy-badge[data-state="killed"] {
  background: #3c3c3c; color: #f0f0f0; border-color: var(--jp-border-color1, #9e9e9e);
}
.tfyarn-panel .tfy-gpu {
  background: #6a1b9a; color: #fff; font-size: 10px; border-radius: 3px; padding: 0 4px;
  font-weight: 700; letter-spacing: 0.03em;
}
.tfyarn-panel .tfy-box {
  border: 1px solid var(--jp-border-color2, #d0d0d0); border-radius: 4px; padding: 6px 8px;
  background: var(--jp-layout-color2, rgba(127, 127, 127, 0.08));
}
.tfyarn-panel .tfy-box h4, .tfyarn-panel .tfy-group h4, .tfyarn-panel .tfy-metrics-title { margin: 0 0 4px; font-size: inherit; font-weight: 600; }
.tfyarn-panel .tfy-pending { border-left: 4px solid #f0a30a; }
.tfyarn-panel .tfy-pending ul { margin: 0; padding-left: 18px; }
.tfyarn-panel .tfy-failure { border-left: 4px solid #c62828; }
.tfyarn-panel .tfy-summary { border-left: 4px solid #2e7d32; }
.tfyarn-panel .tfy-summary[data-final-status="FAILED"] { border-left-color: #c62828; }
.tfyarn-panel .tfy-summary[data-final-status="KILLED"] { border-left-color: #3c3c3c; }
.tfyarn-panel pre {
  margin: 4px 0 0; padding: 6px 8px; max-height: 24em; overflow: auto; white-space: pre-wrap;
  word-break: break-word; border-radius: 3px;
  background: var(--jp-cell-editor-background, rgba(127, 127, 127, 0.12));
  color: var(--jp-content-font-color1, inherit);
  border: 1px solid var(--jp-border-color2, #d0d0d0);
}
.tfyarn-panel .tfy-group + .tfy-group { margin-top: 6px; }
.tfyarn-panel .tfy-task { border-top: 1px solid var(--jp-border-color3, #eee); padding: 3px 0; }
.tfyarn-panel .tfy-task-main { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 10px; }
.tfyarn-panel .tfy-task-name { font-weight: 600; min-width: 6.5em; }
.tfyarn-panel .tfy-task-node:empty::before, .tfyarn-panel .tfy-task-container:empty::before,
.tfyarn-panel .tfy-task-start:empty::before { content: "—"; color: var(--jp-ui-font-color3, #9e9e9e); }
.tfyarn-panel .tfy-task-actions { margin-left: auto; display: flex; gap: 4px; }
.tfyarn-panel .tfy-exit { color: var(--jp-ui-font-color2, #616161); font-size: 12px; white-space: pre-wrap; }
.tfyarn-panel button {
  font: inherit; font-size: 12px; cursor: pointer; border-radius: 3px; padding: 1px 8px;
  color: var(--jp-ui-font-color1, #222); background: var(--jp-layout-color2, #eee);
  border: 1px solid var(--jp-border-color1, #bdbdbd);
}
.tfyarn-panel button:hover { background: var(--jp-layout-color3, #ddd); }
.tfyarn-panel button:disabled { cursor: default; opacity: 0.6; }
.tfyarn-panel button.tfy-danger { color: #fff; background: #c62828; border-color: #b71c1c; }
.tfyarn-panel button.tfy-danger:hover { background: #b71c1c; }
.tfyarn-panel details summary { cursor: pointer; color: var(--jp-ui-font-color2, #616161); font-size: 12px; }
.tfyarn-panel .tfy-metrics { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: flex-start; }
.tfyarn-panel table { border-collapse: collapse; }
.tfyarn-panel th, .tfyarn-panel td {
  text-align: right; padding: 1px 8px; border-bottom: 1px solid var(--jp-border-color2, #ddd);
}
.tfyarn-panel th { font-weight: 600; color: var(--jp-ui-font-color2, #616161); }
.tfyarn-panel th:first-child, .tfyarn-panel td:first-child { text-align: left; }
.tfyarn-panel svg.tfy-chart {
  display: block; width: 360px; max-width: 100%; height: 120px;
  border: 1px solid var(--jp-border-color2, #ddd); border-radius: 3px;
}
.tfyarn-panel svg.tfy-chart path { fill: none; stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }
.tfyarn-panel svg.tfy-chart path[data-series="loss"] { stroke: var(--jp-brand-color1, #1e6fd0); }
.tfyarn-panel svg.tfy-chart path[data-series="accuracy"] { stroke: var(--jp-success-color1, #2e7d32); }
.tfyarn-panel svg.tfy-chart text { fill: var(--jp-ui-font-color2, #616161); font-size: 10px; }
.tfyarn-panel .tfy-legend { font-size: 12px; margin-top: 2px; }
.tfyarn-panel .tfy-legend span + span { margin-left: 12px; }
.tfyarn-panel .tfy-swatch { display: inline-block; width: 10px; height: 3px; vertical-align: middle; margin-right: 4px; }
.tfyarn-panel .tfy-swatch[data-series="loss"] { background: var(--jp-brand-color1, #1e6fd0); }
.tfyarn-panel .tfy-swatch[data-series="accuracy"] { background: var(--jp-success-color1, #2e7d32); }
.tfyarn-panel .tfy-actions { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }
.tfyarn-panel .tfy-error {
  color: var(--jp-error-color1, #c62828); display: flex; gap: 8px; align-items: baseline;
  white-space: pre-wrap;
}
.tfyarn-panel .tfy-error button { padding: 0 6px; }
`;
