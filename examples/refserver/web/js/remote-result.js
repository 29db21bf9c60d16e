// The result of a remote MCP tool's call (the typed chat result
// remote_result): the user's own data, drawn in the chat. A chart with
// the chart component's drawing (chart-svg.js), and its rows in a table
// below; a table where the rows do not chart; the answer's text
// otherwise, always as text, never as markup.

import { h, icon } from "./dom.js";
import { draw } from "./chart-svg.js";
import { chartTypeLabel } from "./format.js";

export function remoteOf(result) {
  return result && result.type === "remote_result" && result.kind ? result : null;
}

export function remoteResult(r) {
  const name = r.tool + " · " + r.connection;
  const parts = [h("header", { class: "chart-head" },
    h("h3", { class: "chart-title" }, icon("connection"), " ", r.tool),
    h("span", { class: "chart-type" }, (r.kind === "chart" && r.chart_data ? chartTypeLabel(r.chart_data.chart_type) + " · " : "") + "from " + r.connection))];
  switch (r.kind) {
    case "chart":
      parts.push(h("div", { class: "chart-body" }, draw(r.chart_data)));
      if (r.table) parts.push(h("details", { class: "remote-rows" }, h("summary", {}, "Rows"), rows(r.table)));
      break;
    case "table":
      parts.push(h("div", { class: "chart-body" }, r.table && r.table.rows.length ? rows(r.table) : h("p", { class: "muted" }, "The answer has no rows.")));
      break;
    default:
      parts.push(h("div", { class: "chart-body" }, r.text ? h("p", { class: "remote-text" }, r.text) : h("p", { class: "muted" }, "The answer has no content.")));
  }
  return h("section", { class: "chart-result remote-result", "data-kind": r.kind, "aria-label": "Answer of " + name }, parts);
}

// rows is a table of the answer's rows (at most 100), every cell as text.
function rows(t) {
  const shown = t.rows.slice(0, 100);
  const cell = (v) => (v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));
  return h("div", { class: "table-wrap" },
    h("table", { class: "data" },
      h("thead", {}, h("tr", {}, t.columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, shown.map((row) => h("tr", {}, row.map((v) => h("td", {}, cell(v))))))),
    t.rows.length > shown.length ? h("p", { class: "chart-note" }, `Showing 100 of ${t.rows.length} rows.`) : null);
}
