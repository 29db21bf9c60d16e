// The chart result component: title (a saved chart's opens in a new tab),
// type, Preview / Saved / Unavailable, the chart itself, dataset links,
// the saved location with Open dashboard, and the dashboard picker that
// places a preview. Every copy of one chart in the transcript is kept in
// step by a Charts registry, which also tells apart charts of one name.

import { api } from "./api.js";
import { h, icon, newTab } from "./dom.js";
import { chartTypeLabel, distinctName } from "./format.js";
import { draw } from "./chart-svg.js";

const stateLabel = { preview: "Preview", saved: "Saved", unavailable: "Unavailable" };

// Charts keeps every chart result component of the transcript by chart.
// The chat reads and places its charts through the conversation; the
// preview page passes load and place of its own routes.
export class Charts {
  constructor({ conversation, defaultDashboard, load, place }) {
    this.conversation = conversation; // () => the conversation ID
    this.defaultDashboard = defaultDashboard; // () => the dashboard ID selected in context, or ""
    this.load = load || ((id) => api.chart(this.conversation(), id).then((doc) => doc.chart)); // id => the chart view
    this.place = place || ((id, dashboard) => api.place(this.conversation(), id, dashboard)); // => {chart, links}
    this.byChart = new Map();
    this.loading = new Map();
  }

  clear() { this.byChart.clear(); this.loading.clear(); }

  // add makes a component for a chart result (references only) and loads
  // its data.
  add(result) {
    const c = new ChartResult(this, result);
    const id = result.chart.id;
    if (!this.byChart.has(id)) this.byChart.set(id, new Set());
    this.byChart.get(id).add(c);
    this.retitle();
    this.reload(id);
    return c.el;
  }

  // refs are the references of the charts shown, one per chart.
  refs() { return [...this.byChart.values()].map((set) => set.values().next().value.view.chart); }

  // name is a chart's title: its name, with its scope when another chart
  // shown has the same name.
  name(chart) { return distinctName(chart, this.refs()); }

  // retitle names every copy again, after a chart came or changed its
  // name.
  retitle() { for (const set of this.byChart.values()) for (const c of set) c.retitle(); }

  // reload fetches a chart once and shows it in every copy.
  reload(id) {
    if (this.loading.has(id)) return this.loading.get(id);
    for (const c of this.byChart.get(id) || []) c.busy();
    const p = this.load(id)
      .then((view) => this.show(id, view))
      .catch((err) => { for (const c of this.byChart.get(id) || []) c.failed(err.message); })
      .finally(() => this.loading.delete(id));
    this.loading.set(id, p);
    return p;
  }

  // reloadAll shows every chart as it stands now, after an action that
  // may have changed or deleted some.
  reloadAll() { for (const id of this.byChart.keys()) this.reload(id); }

  show(id, view) {
    for (const c of this.byChart.get(id) || []) c.show(view);
    this.retitle();
  }

  // placed shows a placement's result in every copy at once.
  placed(id, result, chosen, links) {
    for (const c of this.byChart.get(id) || []) {
      c.show({ ...c.view, ...result, place_on: [], data: c.view && c.view.data, links: links || (c.view && c.view.links) }, chosen);
    }
    this.retitle();
  }
}

class ChartResult {
  constructor(charts, result) {
    this.charts = charts;
    this.view = { ...result, place_on: [] };
    this.el = h("section", { class: "chart-result" });
    this.render();
  }

  // head is the title (a link to the chart's page), type and state.
  head() {
    const v = this.view;
    const status = v.status || "preview";
    const links = v.links || {};
    const name = this.shown = this.charts.name(v.chart);
    this.el.setAttribute("aria-label", "Chart: " + name);
    return h("header", { class: "chart-head" },
      h("h3", { class: "chart-title" }, links.chart && status !== "unavailable" ? newTab(links.chart, name) : name),
      h("span", { class: "chart-type" }, chartTypeLabel(v.chart_type)),
      h("span", { class: "badge state-" + status, "data-state": status }, stateLabel[status] || status));
  }

  // retitle shows the title anew when the chart's name now needs its
  // scope to tell it apart, or no longer does.
  retitle() {
    const old = this.el.querySelector(".chart-head");
    if (old && this.charts.name(this.view.chart) !== this.shown) old.replaceWith(this.head());
  }

  busy() {
    this.loadingNow = true;
    this.error = "";
    this.render();
  }

  failed(message) {
    this.loadingNow = false;
    this.error = message;
    this.render();
  }

  show(view, chosen) {
    this.loadingNow = false;
    this.error = "";
    this.view = view;
    if (chosen) this.chosen = chosen;
    this.render();
  }

  render() {
    const v = this.view;
    const id = v.chart.id;
    const status = v.status || "preview";
    // The links come with the loaded chart (the server's Links): a
    // preview opens its preview page, a saved chart its chart page.
    const links = v.links || {};
    const parts = [this.head()];
    if (status === "unavailable") {
      parts.push(h("p", { class: "chart-gone" }, "This chart is no longer available."));
    } else if (this.error) {
      parts.push(h("div", { class: "chart-body" }, h("p", { class: "error" }, this.error),
        h("button", { type: "button", onclick: () => this.charts.reload(id) }, "Try again")));
    } else if (v.data && !this.loadingNow) {
      parts.push(h("div", { class: "chart-body" }, draw(v.data)));
    } else {
      parts.push(h("div", { class: "chart-body loading", "aria-busy": "true" }, h("p", {}, "Loading chart…")));
    }
    const datasets = v.datasets || [];
    if (datasets.length) {
      parts.push(h("ul", { class: "datasets", "aria-label": "Datasets" }, datasets.map((d) =>
        h("li", {}, icon("dataset"), " ", (links.datasets || {})[d.id] ? newTab(links.datasets[d.id], d.name) : d.name,
          d.info ? h("span", { class: "info" }, " · " + d.info) : null))));
    }
    if (status === "saved" && v.dashboard) {
      parts.push(h("p", { class: "saved-at" }, "Saved in ", h("strong", {}, v.dashboard.name),
        links.dashboard ? [" · ", newTab(links.dashboard, "Open dashboard")] : null));
    }
    if (status === "preview" && (v.place_on || []).length) parts.push(this.placement(v));
    this.el.replaceChildren(...parts);
  }

  placement(v) {
    return placementControl({
      chart: v.chart.id, placeOn: v.place_on, wanted: this.chosen || this.charts.defaultDashboard(),
      choose: (id) => { this.chosen = id; },
      place: (dashboard) => this.charts.place(v.chart.id, dashboard),
      placed: (doc, dashboard) => this.charts.placed(v.chart.id, doc.chart, dashboard, doc.links),
    });
  }
}

// placementControl is the dashboard selector of a preview, for the chat's
// chart results and the preview page alike: the dashboards it may go on
// (the exact wanted one preselected, never a guess), and Add to dashboard,
// which calls place(dashboard) and hands its answer to placed.
export function placementControl({ chart, placeOn, wanted, choose, place, placed }) {
  const exact = placeOn.some((d) => d.id === wanted) ? wanted : "";
  const selectId = "place-" + chart + "-" + Math.random().toString(36).slice(2, 8);
  const select = h("select", { id: selectId },
    h("option", { value: "" }, "Choose a dashboard"),
    placeOn.map((d) => h("option", { value: d.id, selected: d.id === exact }, d.name)));
  const add = h("button", { type: "button", class: "primary", disabled: !exact }, "Add to dashboard");
  const error = h("p", { class: "error", role: "alert" });
  select.addEventListener("change", () => { add.disabled = !select.value; if (choose) choose(select.value); });
  add.addEventListener("click", async () => {
    const dashboard = select.value;
    if (!dashboard) return;
    add.disabled = select.disabled = true;
    error.textContent = "";
    try {
      placed(await place(dashboard), dashboard);
    } catch (err) {
      error.textContent = err.message;
      add.disabled = select.disabled = false;
    }
  });
  return h("div", { class: "place" }, h("label", { for: selectId }, "Dashboard"), select, add, error);
}
