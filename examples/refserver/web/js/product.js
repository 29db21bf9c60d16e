// The product pages behind the links of chat results and MCP tools:
// /previews/{id} (the chart with the dashboard selector), and read-only
// /charts/{id}, /dashboards/{id} and /datasets/{id}. The server sends a
// browser without a session to sign in and back here; the data comes
// from the data routes (/api/), which check team, project and dataset
// access and answer 404 for anything out of reach.

import { api, onUnauthenticated } from "./api.js";
import { $, h } from "./dom.js";
import { Charts } from "./chart-result.js";
import { tableOf, MAX_ROWS } from "./dataset-table.js";

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

// dashboard draws the dashboard's charts, each with the chat's chart
// component (its title opens the chart's page), read-only.
async function dashboard() {
  const { dashboard: d, charts: list } = await api.pageDashboard(id);
  title(d.name);
  $("product-info").textContent = "Dashboard" + (d.info ? " · " + d.info : "");
  $("product-body-title").textContent = "Charts";
  $("product-body-title").hidden = false;
  $("product-body-title").classList.remove("vh");
  if (!(list || []).length) {
    $("product-body").replaceChildren(h("p", { class: "muted" }, "This dashboard has no charts yet. Add one from a chat's chart preview."));
    return;
  }
  const charts = new Charts({
    defaultDashboard: () => "",
    load: async (cid) => {
      const doc = await api.pageChart(cid);
      // On its own dashboard a chart needs no "Saved in" line.
      return { ...doc.chart, dashboard: undefined, place_on: [], links: doc.links };
    },
  });
  $("product-body").replaceChildren(h("div", { class: "dashboard-grid" },
    list.map((c) => charts.add({ chart: c, status: "saved", datasets: [] }))));
}

// dataset shows a dataset's rows: dates and numbers as people read
// them, in a table the keyboard can scroll.
async function dataset() {
  const res = await api.datasetData(id);
  title(res.dataset.name);
  $("product-info").textContent = "Dataset" + (res.dataset.info ? " · " + res.dataset.info : "");
  const shown = Math.min(res.rows.length, MAX_ROWS);
  const meta = [`${res.row_count.toLocaleString("en")} ${res.row_count === 1 ? "row" : "rows"}`];
  if (res.truncated) meta.push("cut at the row or size limit");
  if (res.data_date) meta.push("read " + new Date(res.data_date).toLocaleString("en-GB", { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit" }));
  if (shown < res.rows.length) meta.push(`showing the first ${shown}`);
  $("product-body").replaceChildren(h("p", { class: "muted" }, meta.join(" · ")), tableOf(res.columns, res.rows, res.dataset.name + ", its rows"));
}

const show = { previews: chart, charts: chart, dashboards: dashboard, datasets: dataset }[kind];
try {
  await show();
} catch (err) {
  notFound(err);
} finally {
  $("product").removeAttribute("aria-busy");
}
