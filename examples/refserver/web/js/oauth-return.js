// The return from a connection's OAuth sign-in. The server's callback
// sends the browser to /?oauth=connected&connection=…&conversation=…
// &team=…#/connections/{id}: takeOAuthReturn consumes those parameters
// at once (a later refresh does not repeat them), selects the
// conversation as the active one without opening it, and the connection
// page shows the result with the connection's tools to approve. The chat
// stays closed and nothing is sent to the model; the conversation bar
// offers to reopen it.

import { call } from "./api.js";
import { $, h } from "./dom.js";
import "./setup-card.js"; // the stylesheet

const failures = {
  forbidden: "The sign-in was refused or started elsewhere. Nothing was connected.",
  invalid_argument: "The sign-in answer was not valid. Nothing was connected.",
  invalid_result: "The provider's answer could not be trusted. Nothing was connected.",
  timeout: "The sign-in took too long and expired. Nothing was connected.",
  conflict: "This sign-in was already used. Nothing new was connected.",
  too_large: "The provider's answer was too large. Nothing was connected.",
  unavailable: "The provider could not be reached. Nothing was connected.",
};

// takeOAuthReturn reads and removes the return parameters; it returns
// them (or null) and makes the conversation active through setActive when
// the team is the session's.
export function takeOAuthReturn(status, setActive) {
  const q = new URLSearchParams(location.search);
  if (!q.has("oauth")) return null;
  const ret = { ok: q.get("oauth") === "connected", connection: q.get("connection") || "", code: q.get("code") || "",
    conversation: q.get("conversation") || "", team: q.get("team") || "" };
  history.replaceState(null, "", location.pathname + location.hash);
  if (ret.conversation && ret.team === status.team_id) setActive(ret.conversation);
  return ret;
}

// ConnectionPage is the connection view at #/connections/{id}: its state
// and, for whoever may approve, one "Allow access" switch per tool, ten a
// page; others see "Ask an admin".
export class ConnectionPage {
  constructor() {
    this.el = h("main", { id: "connection-page", class: "page conn-page", hidden: true, "aria-labelledby": "conn-title" });
    $("memory-page").after(this.el);
    this.ret = null;
  }

  hide() { this.el.hidden = true; }

  async show(id, ret) {
    this.el.hidden = false;
    this.id = id;
    if (ret) this.ret = ret;
    this.el.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    let c;
    try {
      c = (await call("GET", "/ai/connections/" + encodeURIComponent(id))).connection;
    } catch (err) {
      this.el.replaceChildren(h("h1", { id: "conn-title" }, "Connection"), h("p", { class: "error", role: "alert" }, err.message));
      return;
    }
    const banner = this.banner(c);
    this.list = h("ul", { class: "conn-tools", "aria-label": "Tools" });
    this.pager = h("div", { class: "conn-pages" });
    this.note = h("p", { class: "muted", role: "status" });
    this.el.replaceChildren(...[h("h1", { id: "conn-title" }, c.name), banner,
      h("p", { class: "conn-state" }, (c.active ? "Active" : "Inactive") + (c.sign_in ? " · " + (c.sign_in.state === "signed_in" ? "signed in" : "sign-in needed") : "")),
      c.sign_in && c.sign_in.state !== "signed_in" && c.sign_in.error ? h("p", { class: "error" }, c.sign_in.error.message) : null,
      h("h2", {}, "Tools Ask may use"), this.note, this.list, this.pager].filter(Boolean));
    await this.page(1);
  }

  banner(c) {
    const r = this.ret;
    if (!r || r.connection !== c.id) return null;
    return r.ok
      ? h("p", { class: "conn-banner", role: "status" }, `${c.name} is connected. New tools start off: allow the ones Ask may use. Your chat is waiting in the bar below.`)
      : h("p", { class: "conn-banner failed", role: "alert" }, failures[r.code] || "The sign-in failed. Nothing was connected.");
  }

  async page(n) {
    let doc;
    try {
      doc = await call("GET", `/ai/connections/${encodeURIComponent(this.id)}/tools?page=${n}`);
    } catch (err) {
      this.note.textContent = err.message;
      return;
    }
    this.note.textContent = doc.total ? "" : "No tools yet: the connection has not been discovered.";
    this.list.replaceChildren(...doc.tools.map((t) => this.tool(t, doc.can_approve)));
    this.pager.replaceChildren(...(doc.pages > 1 ? [
      h("button", { type: "button", disabled: n <= 1, onclick: () => this.page(n - 1) }, "Previous"),
      h("span", {}, `Page ${n} of ${doc.pages}`),
      h("button", { type: "button", disabled: n >= doc.pages, onclick: () => this.page(n + 1) }, "Next")] : []));
  }

  tool(t, canApprove) {
    let control;
    if (t.action === "allow" || t.action === "disallow") {
      const box = h("input", { type: "checkbox", checked: t.state === "allowed" });
      box.addEventListener("change", async () => {
        box.disabled = true;
        try {
          await call("PUT", `/ai/connections/${encodeURIComponent(this.id)}/tools/${encodeURIComponent(t.name)}/access`, { allowed: box.checked });
          this.note.textContent = (box.checked ? "Allowed " : "Turned off ") + t.name + ".";
        } catch (err) {
          box.checked = !box.checked;
          this.note.textContent = err.message;
        }
        box.disabled = false;
      });
      control = h("label", {}, box, "Allow access");
    } else if (t.action === "ask_admin" || !canApprove) {
      control = h("span", { class: "muted" }, "Ask an admin");
    } else {
      control = h("span", { class: "badge" }, t.reason || t.state);
    }
    return h("li", { class: "conn-tool" }, h("div", { class: "conn-tool-text" },
      h("span", { class: "conn-tool-name" }, t.title || t.name), t.description ? h("span", { class: "conn-tool-desc" }, t.description) : null), control);
  }
}
