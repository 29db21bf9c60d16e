// The connection page (#/connections, and #/connections/{id} for one
// connection and its tools): the team's remote MCP connections with their
// URL host, authentication, state, whether a token is saved, the last
// tool refresh, tool counts and the count of excluded tools. Owners and
// admins (the server's can_manage) add, edit, delete and refresh them
// and set tool access; other members read. The OAuth return lands here
// with ?conversation=…&team=… (in the query, or in the hash after the
// route): the page then offers a link back to that conversation, and
// drops the parameters from the address at once, so a reload does not
// offer it again. It never opens the chat by itself.

import { connections as api } from "./settings-api.js";
import { $, h, icon } from "./dom.js";
import { ago } from "./format.js";
import { confirm } from "./memory.js";
import { ConnectionForm, authLabel } from "./connection-form.js";
import { ToolList } from "./tool-list.js";

const ID = /^[A-Za-z0-9_-]{1,100}$/;

// takeReturn reads the OAuth return's conversation and team from the
// address and removes them from it: undefined when the address has none,
// null when they are not IDs.
function takeReturn() {
  const [route, hashQuery = ""] = location.hash.split("?");
  const q = new URLSearchParams(location.search);
  const hq = new URLSearchParams(hashQuery);
  const get = (k) => q.get(k) || hq.get(k) || "";
  const conversation = get("conversation");
  const team = get("team");
  if (!q.has("conversation") && !q.has("team") && !hq.has("conversation") && !hq.has("team")) return undefined;
  for (const k of ["conversation", "team"]) { q.delete(k); hq.delete(k); }
  const qs = q.toString();
  const hqs = hq.toString();
  history.replaceState(history.state, "", location.pathname + (qs ? "?" + qs : "") + route + (hqs ? "?" + hqs : ""));
  return ID.test(conversation) && ID.test(team) ? { conversation, team } : null;
}

// host is the URL's host, as the list shows it.
function host(url) {
  try { return new URL(url).host; } catch { return url; }
}

// state is where a connection stands, in words.
export function connectionState(c) {
  const e = c.discovery.error;
  if (c.auth === "oauth" && (!c.active || (e && e.code === "forbidden"))) return { label: "Sign-in needed", cls: "warn" };
  if (e) return c.active ? { label: "Last refresh failed", cls: "bad" } : { label: "Not connected", cls: "bad" };
  if (c.active) return { label: "Active", cls: "ok" };
  return { label: "Tools not listed yet", cls: "" };
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export class ConnectionsPage {
  // status is GET /ai/status; onBack(conversationID) opens the chat with
  // that conversation.
  constructor(status, { onBack }) {
    this.status = status;
    this.onBack = onBack;
    this.el = $("connections-page");
    this.body = $("connections-body");
    this.statusEl = $("connections-status");
    this.errorEl = $("connections-error");
    this.tools = new ToolList(h("section", { class: "tool-section", "aria-labelledby": "tools-title" }), {
      say: (t) => this.say(t), fail: (t) => this.fail(t), onReload: (c) => this.detail(c.id, true),
    });
    this.returnTo = null;
  }

  say(text) {
    this.errorEl.textContent = "";
    this.statusEl.textContent = text;
  }

  fail(text) { this.errorEl.textContent = text; }

  hide() { this.el.hidden = true; }

  // show draws the list, or connection id with its tools.
  async show(id) {
    this.el.hidden = false;
    this.errorEl.textContent = "";
    const back = takeReturn();
    if (back !== undefined) this.returnTo = back;
    this.drawReturn();
    if (id) await this.detail(id);
    else await this.list();
  }

  drawReturn() {
    const box = $("connections-return");
    box.replaceChildren();
    const r = this.returnTo;
    if (!r) return;
    if (r.team !== this.status.team_id) {
      box.append(h("p", { class: "muted" }, "The conversation you came from is in another team. Sign in to that team to continue it."));
      return;
    }
    const a = h("a", { href: "#/", class: "back-link" }, "← Back to your conversation");
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      this.returnTo = null;
      box.replaceChildren();
      this.onBack(r.conversation);
    });
    box.append(a);
  }

  async load() {
    try {
      const doc = await api.list();
      this.canManage = doc.can_manage;
      return doc.connections;
    } catch (err) {
      this.fail(err.message);
      return null;
    }
  }

  async list() {
    $("connections-title").textContent = "Connections";
    $("connections-crumb").replaceChildren();
    const list = await this.load();
    if (!list) { this.body.replaceChildren(); return; }
    const parts = [h("p", { class: "lede" }, "Remote MCP servers whose tools Ask and datasets may use. " +
      (this.canManage ? "New tools start off until you allow them." : "Owners and admins add them and choose which tools are allowed."))];
    if (this.canManage) {
      const add = h("button", { type: "button", class: "primary", id: "add-connection" }, "Add connection");
      add.addEventListener("click", () => this.openForm(null, add));
      parts.push(h("div", { class: "page-actions", id: "connections-actions" }, add));
    }
    parts.push(list.length
      ? h("ul", { class: "connections", "aria-label": "Connections" }, list.map((c) => this.card(c)))
      : h("p", { class: "empty" }, this.canManage
        ? "No connections yet. Add one to let Ask and datasets use a remote MCP server's tools."
        : "No connections yet. An owner or admin of your team can add one."));
    this.body.replaceChildren(...parts);
  }

  facts(c) {
    const d = c.discovery;
    const state = connectionState(c);
    const items = [
      h("li", {}, h("span", { class: "badge state-" + state.cls }, state.label)),
      h("li", {}, host(c.url)),
      h("li", {}, authLabel[c.auth] || c.auth),
      h("li", {}, c.has_token ? "Token saved" : "No token saved"),
      h("li", {}, d.at ? h("span", {}, "Tools last listed ", h("time", { datetime: d.at }, ago(d.at))) : "Tools never listed"),
    ];
    if (d.at) {
      items.push(h("li", {}, d.omitted ? `${d.shown} of ${plural(d.tools, "tool", "tools")} shown` : plural(d.tools, "tool", "tools")));
    }
    if (d.excluded) {
      items.push(h("li", { class: "warn" }, icon("alert"), " ", plural(d.excluded, "tool", "tools"), " excluded: failed the safety checks"));
    }
    return h("ul", { class: "facts" }, items);
  }

  card(c) {
    const e = c.discovery.error;
    return h("li", { class: "conn-card" },
      h("h2", { class: "conn-name" }, h("a", { href: "#/connections/" + encodeURIComponent(c.id) }, c.name)),
      this.facts(c),
      e ? h("p", { class: "error" }, this.problem(c)) : null);
  }

  // problem is the last refresh's failure as a sentence.
  problem(c) {
    const e = c.discovery.error;
    const m = e.message.trim();
    const text = m[0].toUpperCase() + m.slice(1) + (/[.!?]$/.test(m) ? "" : ".");
    if (e.code === "invalid_result") return "No usable tools: " + text;
    if (c.auth === "oauth" && e.code === "forbidden") return "Sign-in is needed. " + text + " The connection is saved; Reconnect tries again.";
    return text;
  }

  openForm(c, opener) {
    const form = new ConnectionForm(c, {
      onCancel: () => { slot.replaceChildren(); opener.hidden = false; opener.focus(); },
      onSaved: async (conn, how) => {
        slot.replaceChildren();
        opener.hidden = false;
        await this.saved(conn, how);
      },
    });
    const slot = $("connection-form-slot") || h("div", { id: "connection-form-slot" });
    opener.hidden = true;
    opener.closest(".page-actions").after(slot);
    slot.replaceChildren(form.el);
    form.focus();
  }

  // saved follows a save: a new or changed server is checked at once
  // (its tools listed, or OAuth started), then the connection is shown.
  async saved(c, { created, reconnect }) {
    const target = "#/connections/" + encodeURIComponent(c.id);
    if (location.hash !== target) history.pushState(null, "", target);
    if (reconnect) {
      await this.connect(c, created ? "Connection added." : "Saved.");
    } else {
      await this.detail(c.id);
      this.say("Saved.");
    }
    $("connections-title").focus();
  }

  // connect lists a connection's tools, or for OAuth starts its sign-in.
  // The reference server has no OAuth start route for remote connections
  // yet: an OAuth connection stays saved and inactive, its refresh
  // answers that sign-in is needed, and Reconnect tries again.
  async connect(c, prefix) {
    this.say((prefix ? prefix + " " : "") + (c.auth === "oauth" ? "Starting sign-in…" : "Listing its tools…"));
    let failure = null;
    let text = "";
    try {
      const { connection } = await api.discover(c.id);
      const d = connection.discovery;
      text = `Found ${plural(d.tools, "tool", "tools")}. New tools start off.` + (d.excluded ? ` ${plural(d.excluded, "tool was", "tools were")} excluded.` : "");
    } catch (err) {
      failure = err;
    }
    // A failure the connection recorded is drawn with it, as an alert.
    this.announce = !!failure;
    await this.detail(c.id);
    this.announce = false;
    if (!failure) return this.say((prefix ? prefix + " " : "") + text);
    this.statusEl.textContent = prefix || "";
    if (!$("connection-problem")) this.fail(failure.message);
  }

  async detail(id, keepStatus) {
    const list = await this.load();
    if (!list) return;
    const c = list.find((x) => x.id === id);
    if (!c) {
      $("connections-crumb").replaceChildren();
      $("connections-title").textContent = "Connection not found";
      this.body.replaceChildren(h("p", {}, "This connection does not exist, or was deleted. ", h("a", { href: "#/connections" }, "See all connections")));
      return;
    }
    if (!keepStatus) this.errorEl.textContent = "";
    $("connections-title").textContent = c.name;
    $("connections-crumb").replaceChildren(h("a", { href: "#/connections" }, "← All connections"));
    const parts = [this.facts(c)];
    if (c.discovery.error) {
      parts.push(h("div", { class: "problem", id: "connection-problem", role: this.announce ? "alert" : undefined },
        h("p", { class: "error" }, icon("alert"), this.problem(c)),
        c.discovery.at ? h("p", { class: "muted" }, "The tools from the last successful refresh are kept, with their approvals.") : null));
    }
    if (this.canManage) {
      const actions = h("div", { class: "page-actions" });
      const refresh = h("button", { type: "button", class: "primary" }, c.auth === "oauth" ? "Reconnect" : "Refresh tools");
      refresh.addEventListener("click", async () => {
        refresh.disabled = true;
        await this.connect(c, "");
        refresh.disabled = false;
      });
      const edit = h("button", { type: "button" }, icon("edit"), " Edit");
      edit.addEventListener("click", () => this.openForm(c, edit));
      const del = h("button", { type: "button", class: "danger" }, icon("trash"), " Delete");
      del.addEventListener("click", () => this.remove(c, del));
      actions.append(refresh, edit, del);
      parts.push(actions);
    }
    parts.push(this.tools.el);
    this.body.replaceChildren(...parts);
    await this.tools.show(c);
  }

  async remove(c, button) {
    if (!await confirm(`Delete ${c.name}?`, "Ask and datasets stop using its tools at once, and datasets built on it become unavailable. " +
      "Its token and tool approvals are deleted. This cannot be undone.", "Delete connection")) {
      button.focus();
      return;
    }
    try {
      await api.remove(c.id);
    } catch (err) {
      this.fail(err.message);
      return;
    }
    history.pushState(null, "", "#/connections");
    await this.list();
    this.say(`${c.name} was deleted.`);
    $("connections-title").focus();
  }
}
