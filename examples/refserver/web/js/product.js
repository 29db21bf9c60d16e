// The product pages behind the links of chat results and MCP tools:
// /previews/{id} (the chart with the dashboard selector), and read-only
// /charts/{id}, /dashboards/{id} and /datasets/{id}. The server sends a
// browser without a session to sign in and back here; the data comes
// from the data routes (/api/), which check team, project and dataset
// access and answer 404 for anything out of reach.

import { api, onUnauthenticated } from "./api.js";
import { $, h } from "./dom.js";
import { Charts } from "./chart-result.js";

const [, kind, rawID] = location.pathname.split("/");
const id = decodeURIComponent(rawID || "");
const names = { previews: "Chart preview", charts: "Chart", dashboards: "Dashboard", datasets: "Dataset" };

onUnauthenticated(() => { location.assign("/signin?return=" + encodeURIComponent(location.pathname)); });

function title(text) {
  $("product-title").textContent = text;
  document.title = text + " · askbi";
}

function notFound(err) {
  title(err.status === 404 ? "Not found" : "This page could not be loaded");
  $("product-info").textContent = err.status === 404
    ? `This ${names[kind].toLowerCase()} does not exist, or you do not have access to it.`
    : err.message;
  $("product-body").replaceChildren(h("p", {}, h("a", { href: "/" }, "Back to askbi")));
}

// chart shows a chart as the chat's chart result does. On the preview
// page a preview keeps its dashboard selector; the chart page is
// read-only.
async function chart() {
  const view = await api.pageChart(id);
  const editable = kind === "previews";
  // This page is the chart: its title opens no page (the chat's opens
  // this one), before and after placement.
  const own = (links) => links && { ...links, chart: undefined };
  const toView = (doc) => ({ ...doc.chart, place_on: editable ? doc.place_on : [], links: own(doc.links) });
  let first = view; // the component's first load is this one
  const charts = new Charts({
    defaultDashboard: () => "",
    load: async (cid) => {
      const doc = first || await api.pageChart(cid);
      first = null;
      return toView(doc);
    },
    place: async (cid, dashboard) => {
      const doc = await api.pagePlace(cid, dashboard);
      return { ...doc, links: own(doc.links) };
    },
  });
  title(view.chart.chart.name);
  // The chart's own heading (h3) sits under this one: headings in order.
  $("product-body-title").textContent = "The chart";
  $("product-body-title").hidden = false;
  $("product-info").textContent = view.chart.chart.info || names[kind];
  $("product-body").replaceChildren(charts.add({ ...view.chart, data: undefined }));
}

async function dashboard() {
  const { dashboard: d } = await api.pageDashboard(id);
  title(d.name);
  $("product-info").textContent = "Dashboard" + (d.info ? " · " + d.info : "");
  $("product-body").replaceChildren(h("p", {}, "This stands in for the product's dashboard page."));
}

async function dataset() {
  const res = await api.datasetData(id);
  title(res.dataset.name);
  $("product-info").textContent = "Dataset" + (res.dataset.info ? " · " + res.dataset.info : "");
  const shown = res.rows.slice(0, 100);
  const meta = [`${res.row_count} ${res.row_count === 1 ? "row" : "rows"}`];
  if (res.truncated) meta.push("cut at the row or size limit");
  if (res.data_date) meta.push("data from " + new Date(res.data_date).toLocaleString());
  if (shown.length < res.rows.length) meta.push(`showing the first ${shown.length}`);
  $("product-body").replaceChildren(
    h("p", { class: "muted" }, meta.join(" · ")),
    h("div", { class: "table-wrap" }, h("table", { class: "data" },
      h("thead", {}, h("tr", {}, res.columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, shown.map((row) => h("tr", {}, row.map((cell) => h("td", {}, cell === null ? "" : String(cell)))))))));
}

const show = { previews: chart, charts: chart, dashboards: dashboard, datasets: dataset }[kind];
try {
  await show();
} catch (err) {
  notFound(err);
} finally {
  $("product").removeAttribute("aria-busy");
}
