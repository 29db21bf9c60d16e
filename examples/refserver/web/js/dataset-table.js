// A dataset's rows as a table: the chat's answer to a question about a
// dataset with no numeric field to chart (a run_dataset result, typed
// dataset_result: references only, the rows read from the Data API
// with the filters the run had), and the dataset page's table. Dates and
// numbers are formatted for people; the table scrolls in a region the
// keyboard can reach.

import { api } from "./api.js";
import { h, icon, newTab } from "./dom.js";
import { cellText, isNumberCell } from "./format.js";

// MAX_ROWS is how many rows a table shows.
export const MAX_ROWS = 100;

export function datasetOf(result) {
  return result && result.type === "dataset_result" && result.dataset && result.dataset.id ? result : null;
}

// tableOf is a scrolling table of columns and rows (at most MAX_ROWS),
// labelled for screen readers; the region takes the focus so the
// keyboard scrolls it.
export function tableOf(columns, rows, label) {
  const shown = rows.slice(0, MAX_ROWS);
  // A column of numbers is aligned right, its heading too; any other
  // left.
  const numeric = columns.map((_, i) => shown.length > 0 && shown.every((r) => r[i] === null || r[i] === undefined || isNumberCell(r[i])));
  const align = (i) => (numeric[i] ? "cell-num" : "cell-text");
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label },
    h("table", { class: "data" },
      h("thead", {}, h("tr", {}, columns.map((c, i) => h("th", { scope: "col", class: align(i) }, c)))),
      h("tbody", {}, shown.map((row) => h("tr", {}, row.map((v, i) => h("td", { class: align(i) }, cellText(v))))))));
}

// datasetTable shows a dataset_result in the chat: its name (a link to
// the dataset's page), then its rows, loaded now.
export function datasetTable(r) {
  const name = r.dataset.name;
  const el = h("section", { class: "chart-result dataset-result", "aria-label": "Table: " + name });
  const head = h("header", { class: "chart-head" },
    h("h3", { class: "chart-title" }, icon("dataset"), " ", r.url ? newTab(r.url, name) : name),
    h("span", { class: "chart-type" }, "Table"));
  const load = async () => {
    el.replaceChildren(head, h("div", { class: "chart-body loading", "aria-busy": "true" }, h("p", {}, "Loading the rows…")));
    try {
      const res = await api.datasetData(r.dataset.id, r.filters);
      const note = res.rows.length > MAX_ROWS ? h("p", { class: "chart-note" }, `Showing ${MAX_ROWS} of ${res.row_count.toLocaleString("en")} rows.`) : null;
      el.replaceChildren(head, h("div", { class: "chart-body" },
        res.rows.length ? tableOf(res.columns, res.rows, name + ", as a table") : h("p", { class: "muted" }, "It has no rows."), note));
    } catch (err) {
      el.replaceChildren(head, h("div", { class: "chart-body" }, h("p", { class: "error" }, err.message),
        h("button", { type: "button", onclick: load }, "Try again")));
    }
  };
  load();
  return el;
}
