// The context picker: Add context opens a search of what the user may
// select, grouped Recent, Dashboards, Charts, Datasets and Connections,
// each row one label and one information line.

import { api } from "./api.js";
import { $, h, icon } from "./dom.js";

export class Picker {
  constructor({ team, selected, onPick }) {
    this.dialog = $("picker");
    this.query = $("picker-query");
    this.results = $("picker-results");
    this.team = team;
    this.selected = selected; // () => the selected items
    this.onPick = onPick;
    this.seq = 0;
    let timer;
    this.query.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.search(), 150);
    });
    this.dialog.addEventListener("keydown", (ev) => {
      if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
      const rows = [this.query, ...this.results.querySelectorAll("button:not([disabled])")];
      const i = rows.indexOf(document.activeElement);
      const next = rows[Math.min(rows.length - 1, Math.max(0, i + (ev.key === "ArrowDown" ? 1 : -1)))];
      if (next) { ev.preventDefault(); next.focus(); }
    });
  }

  open() {
    this.query.value = "";
    delete this.results.dataset.query;
    this.results.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    this.dialog.showModal();
    this.query.focus();
    this.search();
  }

  async search() {
    const seq = ++this.seq;
    const text = this.query.value.trim();
    let doc;
    try {
      doc = await api.search(this.team(), text, 20);
    } catch (err) {
      if (seq === this.seq) this.results.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
      return;
    }
    // An answer to an older query is dropped, and the shown results name
    // the query they answer, not what the box holds by now.
    if (seq !== this.seq) return;
    this.results.dataset.query = text;
    const chosen = new Set(this.selected().map((it) => it.entity_type + ":" + it.id));
    const groups = doc.groups.filter((g) => g.items.length);
    if (!groups.length) {
      this.results.replaceChildren(h("p", { class: "muted", role: "status" }, "No matches. Try another name."));
      return;
    }
    this.results.replaceChildren(...groups.map((g) => {
      const id = "pick-group-" + g.name.toLowerCase();
      return h("section", { class: "pick-group", "aria-labelledby": id },
        h("h3", { id }, g.name),
        h("ul", {}, g.items.map((it) => {
          const taken = chosen.has(it.entity_type + ":" + it.id);
          return h("li", {}, h("button", {
            type: "button", class: "pick-row", disabled: taken,
            onclick: () => { this.dialog.close(); this.onPick(it); },
          }, icon(it.entity_type), h("span", { class: "pick-text" },
            h("span", { class: "pick-label" }, g.name === "Recent" ? it.label : it.name),
            h("span", { class: "pick-info" }, taken ? "Selected" : (it.metadata && it.metadata.info) || ""))));
        })));
    }));
  }
}
