// The tool list of one connection: 10 tools a page, a search and a kind
// (hint) filter that the server applies to the whole list before paging
// (changing either goes back to page 1), one "Allow access" switch per
// tool for Ask and datasets together, and "Allow all" beside the pages.
// Approvals are the server's: a page change or a reload shows them as
// saved. Tool focus is shown only when the server left tools out. For a
// member who cannot approve, the list is read-only and a tool that is off
// says "Ask an admin". Names and descriptions are the remote server's
// and are shown as text only.

import { connections as api } from "./settings-api.js";
import { h, icon } from "./dom.js";

export const classLabel = { read_only: "Read-only", mutating: "Changes data", destructive: "Destructive", unknown: "Unknown" };

const SEARCH_DELAY = 250;

export class ToolList {
  // el is the section to fill; say(text) announces a status, fail(text)
  // an error; onReload() is called after Tool focus reloaded the tools.
  constructor(el, { say, fail, onReload }) {
    this.el = el;
    this.say = say;
    this.fail = fail;
    this.onReload = onReload;
    this.query = { page: 1, search: "", hint: "" };
    this.seq = 0;
  }

  // show loads the first page of connection c's tools.
  async show(c) {
    if (!this.c || this.c.id !== c.id) this.query = { page: 1, search: "", hint: "" };
    this.c = c;
    this.build();
    await this.load();
  }

  build() {
    const search = h("input", { id: "tool-search", type: "search", autocomplete: "off", spellcheck: "false" });
    search.value = this.query.search;
    const hint = h("select", { id: "tool-hint" },
      h("option", { value: "" }, "All kinds"),
      ...Object.entries(classLabel).map(([v, label]) => h("option", { value: v }, label)));
    hint.value = this.query.hint;
    let timer;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.filter({ search: search.value.trim() }), SEARCH_DELAY);
    });
    search.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); clearTimeout(timer); this.filter({ search: search.value.trim() }); }
    });
    hint.addEventListener("change", () => this.filter({ hint: hint.value }));
    this.focusBox = h("div", { class: "tool-focus", hidden: true });
    this.summary = h("p", { class: "tool-summary", id: "tool-summary" });
    this.list = h("ul", { class: "tools", id: "tool-rows", "aria-label": "Tools", "aria-describedby": "tool-summary" });
    this.pager = h("div", { class: "pager" });
    this.el.replaceChildren(
      h("h2", { id: "tools-title" }, "Tools"),
      this.focusBox,
      h("div", { class: "tool-filters", role: "search", "aria-label": "Filter tools" },
        h("div", { class: "field" }, h("label", { for: "tool-search" }, "Search tools"), search),
        h("div", { class: "field" }, h("label", { for: "tool-hint" }, "Kind"), hint)),
      this.summary, this.list, this.pager);
  }

  filter(change) {
    const next = { ...this.query, ...change, page: 1 };
    if (next.search === this.query.search && next.hint === this.query.hint) return;
    this.query = next;
    this.load(true);
  }

  async go(page) {
    this.query = { ...this.query, page };
    await this.load(true);
    this.list.focus();
  }

  // load fetches the current page; only the latest answer is drawn.
  async load(announce) {
    const seq = ++this.seq;
    let p;
    try {
      p = await api.tools(this.c.id, this.query);
    } catch (err) {
      if (seq === this.seq) this.fail(err.message);
      return;
    }
    if (seq !== this.seq) return;
    if (p.pages > 0 && p.page > p.pages) return this.go(p.pages); // the list shrank under us
    this.page = p;
    this.drawFocus(p);
    this.summary.textContent = this.describe(p);
    this.list.setAttribute("tabindex", "-1");
    this.list.replaceChildren(...p.tools.map((t) => this.row(t)));
    if (!p.tools.length) this.list.append(h("li", { class: "empty" }, this.emptyText()));
    this.drawPager(p);
    if (announce) this.say(this.summary.textContent);
  }

  describe(p) {
    const filtered = this.query.search || this.query.hint;
    const n = p.total === 1 ? "1 tool" : `${p.total} tools`;
    const where = p.pages > 1 ? `, page ${p.page} of ${p.pages}` : "";
    return (filtered ? `${n} match${p.total === 1 ? "es" : ""}` : n) + where + ".";
  }

  emptyText() {
    if (this.query.search || this.query.hint) return "No tools match. Change the search or the kind.";
    if (!this.c.discovery.at) return this.page.can_approve ? "No tools yet. Refresh tools to list what the server offers." : "No tools yet.";
    return "This server lists no usable tools.";
  }

  drawFocus(p) {
    // Tool focus exists only when the server listed more tools than are
    // shown (tool_focus is absent otherwise).
    if (p.tool_focus === undefined) {
      this.focusBox.hidden = true;
      this.focusBox.replaceChildren();
      return;
    }
    this.focusBox.hidden = false;
    const note = h("p", { id: "tool-focus-note", class: "muted" },
      `This server lists more tools than can be shown: ${p.omitted} ${p.omitted === 1 ? "was" : "were"} left out. ` +
      "The tools shown are those closest to the Tool focus; approved tools always stay.");
    if (!p.can_approve) {
      this.focusBox.replaceChildren(h("h3", {}, "Tool focus"), note, h("p", {}, p.tool_focus || "No Tool focus saved."));
      return;
    }
    const input = h("textarea", { id: "tool-focus", rows: 2, maxlength: 500, "aria-describedby": "tool-focus-note" });
    input.value = p.tool_focus;
    const form = h("form", { class: "tool-focus-form" }, h("label", { for: "tool-focus" }, "Tool focus"), note, input,
      h("button", { type: "submit" }, "Save and reload tools"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const button = form.querySelector("button");
      button.disabled = true;
      this.say("Reloading tools…");
      try {
        const { connection } = await api.discover(this.c.id, input.value.trim());
        this.c = connection;
        this.query = { ...this.query, page: 1 };
        this.say("Tool focus saved. The tools were reloaded.");
        await this.onReload(connection);
      } catch (err) {
        this.fail(err.message);
      } finally {
        button.disabled = false;
      }
    });
    this.focusBox.replaceChildren(form);
  }

  row(t) {
    const name = t.title ? `${t.title} (${t.name})` : t.name;
    const notes = [];
    if (t.state === "reapprove") notes.push(h("p", { class: "tool-note warn" }, icon("alert"), " Needs approval again: ", t.reason + "."));
    if (t.description_changed) notes.push(h("p", { class: "tool-note" }, "Its description changed since it was approved."));
    if (t.state === "excluded") notes.push(h("p", { class: "tool-note warn" }, icon("alert"), " Excluded: ", t.reason + "."));
    if (t.state === "removed") notes.push(h("p", { class: "tool-note" }, "The server no longer lists it."));
    const li = h("li", { class: "tool", "data-tool": t.name, "data-state": t.state },
      h("div", { class: "tool-main" },
        h("p", { class: "tool-head" }, h("span", { class: "tool-name" }, name), " ",
          h("span", { class: "badge " + t.class }, classLabel[t.class] || t.class)),
        t.description ? h("p", { class: "tool-desc" }, t.description) : null,
        notes),
      h("div", { class: "tool-access" }, this.access(t)));
    return li;
  }

  // access is the tool's switch for an admin, or its state in words.
  access(t) {
    if (t.state === "blocked") return h("span", { class: "tool-state blocked" }, icon("cross"), " Blocked: marked destructive");
    if (t.action === "allow" || t.action === "disallow") {
      const input = h("input", { type: "checkbox", role: "switch", class: "switch-input", checked: t.state === "allowed" });
      input.addEventListener("change", () => this.toggle(t, input));
      return h("label", { class: "switch" }, input, h("span", { class: "switch-track", "aria-hidden": "true" }),
        h("span", {}, "Allow access", h("span", { class: "vh" }, " to " + t.name)));
    }
    if (t.action === "ask_admin") return h("span", { class: "tool-state" }, "Off · ", h("strong", {}, "Ask an admin"));
    const words = { allowed: "Allowed", off: "Off", excluded: "Cannot be allowed", removed: "Not available" }[t.state] || "";
    return h("span", { class: "tool-state " + t.state }, t.state === "allowed" ? icon("check") : null, " ", words);
  }

  async toggle(t, input) {
    const allowed = input.checked;
    input.disabled = true;
    try {
      const { tool } = await api.setAccess(this.c.id, t.name, allowed);
      const li = this.row(tool);
      this.list.querySelector(`li[data-tool="${CSS.escape(t.name)}"]`).replaceWith(li);
      const next = li.querySelector("input");
      if (next) next.focus();
      this.say(allowed ? `${t.name} is allowed for Ask and datasets.` : `${t.name} is off for Ask and datasets.`);
    } catch (err) {
      input.checked = !allowed;
      input.disabled = false;
      this.fail(err.message);
    }
  }

  drawPager(p) {
    const parts = [];
    if (p.pages > 1) {
      const prev = h("button", { type: "button", disabled: p.page <= 1 }, "Previous");
      const next = h("button", { type: "button", disabled: p.page >= p.pages }, "Next");
      prev.addEventListener("click", () => this.go(p.page - 1));
      next.addEventListener("click", () => this.go(p.page + 1));
      parts.push(h("nav", { class: "pages", "aria-label": "Tool pages" }, prev, h("span", { class: "page-of" }, `Page ${p.page} of ${p.pages}`), next));
    }
    if (p.can_approve && (p.total > 0 || this.query.search || this.query.hint)) {
      const all = h("button", { type: "button", class: "allow-all", "aria-describedby": "allow-all-note" }, "Allow all");
      all.addEventListener("click", () => this.allowAll(all));
      parts.push(h("span", { class: "allow-all-box" }, all,
        h("span", { id: "allow-all-note", class: "muted" }, "Every tool on every page, whatever the filters; never destructive or unknown ones.")));
    }
    this.pager.replaceChildren(...parts);
  }

  async allowAll(button) {
    button.disabled = true;
    try {
      const res = await api.allowAll(this.c.id);
      const allowed = res.allowed === 1 ? "1 tool" : `${res.allowed} tools`;
      const skipped = res.skipped ? ` ${res.skipped} ${res.skipped === 1 ? "stays" : "stay"} off: destructive, unknown or unusable tools are never allowed at once.` : "";
      await this.load();
      this.say(`Allowed ${allowed}.${skipped}`);
    } catch (err) {
      this.fail(err.message);
    } finally {
      button.disabled = false;
    }
  }
}
