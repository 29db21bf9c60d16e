// The result of a remote MCP tool's call (the typed chat result
// remote_result): the user's own data, drawn in the chat. A chart with
// the chart component's drawing (chart-svg.js), and its rows in a table
// below; a table where the rows do not chart; the answer's text
// otherwise, always as text, never as markup.

import { h, icon } from "./dom.js";
import { draw } from "./chart-svg.js";
import { chartTypeLabel } from "./format.js";
import { tableOf, MAX_ROWS } from "./dataset-table.js";

export function remoteOf(result) {
  return result && result.type === "remote_result" && result.kind ? result : null;
}

export function remoteResult(r) {
  // Titled after the question it answers (the server's title), the tool
  // named below it.
  const title = r.title || r.tool;
  const name = title + " · " + r.connection;
  const parts = [h("header", { class: "chart-head" },
    h("h3", { class: "chart-title" }, icon("connection"), " ", title),
    h("span", { class: "chart-type" }, (r.kind === "chart" && r.chart_data ? chartTypeLabel(r.chart_data.chart_type) + " · " : "") +
      (r.title ? r.tool + " from " : "from ") + r.connection))];
  switch (r.kind) {
    case "chart":
      parts.push(h("div", { class: "chart-body" }, draw(r.chart_data)));
      if (r.table) parts.push(h("details", { class: "remote-rows" }, h("summary", {}, "Rows"), rows(r.table, title)));
      break;
    case "table":
      parts.push(h("div", { class: "chart-body" }, r.table && r.table.rows.length ? rows(r.table, title) : h("p", { class: "muted" }, "The answer has no rows.")));
      break;
    default:
      parts.push(h("div", { class: "chart-body" }, r.text ? h("p", { class: "remote-text" }, r.text) : h("p", { class: "muted" }, "The answer has no content.")));
  }
  return h("section", { class: "chart-result remote-result", "data-kind": r.kind, "aria-label": "Answer of " + name }, parts);
}

// rows is a table of the answer's rows (at most 100), dates and numbers
// as people read them, in a region the keyboard can scroll.
function rows(t, label) {
  return [tableOf(t.columns, t.rows, label + ", as a table"),
    t.rows.length > MAX_ROWS ? h("p", { class: "chart-note" }, `Showing ${MAX_ROWS} of ${t.rows.length} rows.`) : null];
}
