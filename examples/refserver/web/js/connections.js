// The connection page (#/connections, #/connections/{id} for one
// connection and its tools, #/connections/new to add one): the team's remote MCP connections with their
// URL host, authentication, state, whether a token is saved, the last
// tool refresh, tool counts and the count of excluded tools. Owners and
// admins (the server's can_manage) add, edit, delete and refresh them
// and set tool access; other members read. An OAuth connection's
// Reconnect (and a new one's Save and connect) starts its sign-in.
//
// The sign-in's callback sends the browser to
// /?oauth=connected&connection=…&conversation=…&team=…#/connections/{id}
// (oauth=failed&code=… when it failed): the page consumes those
// parameters at once (a reload does not repeat them), says how the
// sign-in went, and makes the conversation the active one without
// opening it; the conversation bar offers it. Nothing is sent to the
// model.

import { connections as api } from "./settings-api.js";
import { $, h, icon } from "./dom.js";
import { ago, capitalize } from "./format.js";
import { confirm } from "./memory.js";
import { ConnectionForm, authLabel } from "./connection-form.js";
import { ToolList } from "./tool-list.js";

const ID = /^[A-Za-z0-9_-]{1,100}$/;
const RETURN = ["oauth", "connection", "code", "conversation", "team"];

// failures words a failed sign-in by its error code.
const failures = {
  forbidden: "The sign-in was refused or started elsewhere. Nothing was connected.",
  invalid_argument: "The sign-in answer was not valid. Nothing was connected.",
  invalid_result: "The provider's answer could not be trusted. Nothing was connected.",
  timeout: "The sign-in took too long and expired. Nothing was connected.",
  conflict: "This sign-in was already used. Nothing new was connected.",
  too_large: "The provider's answer was too large. Nothing was connected.",
  unavailable: "The provider could not be reached. Nothing was connected.",
};

// takeReturn reads the OAuth return from the address and removes it:
// null when the address has none. An ID that is not one is dropped.
function takeReturn() {
  const q = new URLSearchParams(location.search);
  if (!q.has("oauth")) return null;
  const id = (k) => (ID.test(q.get(k) || "") ? q.get(k) : "");
  const ret = { ok: q.get("oauth") === "connected", code: q.get("code") || "",
    connection: id("connection"), conversation: id("conversation"), team: id("team") };
  for (const k of RETURN) q.delete(k);
  const qs = q.toString();
  history.replaceState(history.state, "", location.pathname + (qs ? "?" + qs : "") + location.hash);
  return ret;
}

// host is the URL's host, as the list shows it.
function host(url) {
  try { return new URL(url).host; } catch { return url; }
}

// needsSignIn says an OAuth connection has no working sign-in.
const needsSignIn = (c) => c.auth === "oauth" && (!c.sign_in || c.sign_in.state !== "signed_in");

// lastFailure is the connection's last failure: its tool refresh's, or its
// sign-in's.
const lastFailure = (c) => c.discovery.error || (needsSignIn(c) && c.sign_in && c.sign_in.error) || null;

// state is where a connection stands, in words.
export function connectionState(c) {
  const e = c.discovery.error;
  if (needsSignIn(c) || (c.auth === "oauth" && e && e.code === "forbidden")) return { label: "Sign-in needed", cls: "warn" };
  if (e) return c.active ? { label: "Last refresh failed", cls: "bad" } : { label: "Not connected", cls: "bad" };
  if (c.active) return { label: "Active", cls: "ok" };
  return { label: "Tools not listed yet", cls: "" };
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export class ConnectionsPage {
  // status is GET /ai/status; setActive(conversationID) makes the
  // conversation an OAuth return names the active one, without opening
  // it.
  constructor(status, { setActive }) {
    this.status = status;
    this.setActive = setActive;
    this.el = $("connections-page");
    this.body = $("connections-body");
    this.statusEl = $("connections-status");
    this.errorEl = $("connections-error");
    this.tools = new ToolList(h("section", { class: "tool-section", "aria-labelledby": "tools-title" }), {
      say: (t) => this.say(t), fail: (t) => this.fail(t), onReload: (c) => this.detail(c.id, true, c),
    });
  }

  say(text) {
    this.errorEl.textContent = "";
    this.statusEl.textContent = text;
  }

  fail(text) { this.errorEl.textContent = text; }

  hide() { this.el.hidden = true; }

  // show draws the list, or connection id with its tools, and the OAuth
  // return when the address has one.
  async show(id) {
    this.el.hidden = false;
    this.errorEl.textContent = "";
    this.statusEl.textContent = "";
    const ret = takeReturn();
    const here = ret && ret.team === this.status.team_id;
    if (here && ret.conversation) this.setActive(ret.conversation);
    $("connections-return").replaceChildren();
    let c = null;
    if (id === "new") await this.startNew();
    else c = id ? await this.detail(id) : await this.list();
    if (ret) this.drawReturn(ret, here, c);
  }

  // startNew is #/connections/new?name=…, where the chat's manual MCP
  // setup sends the user: the list with the form open, its name filled
  // in. A member who cannot add connections sees the list.
  async startNew() {
    await this.list();
    const add = $("add-connection");
    if (!add) return;
    const name = new URLSearchParams(location.hash.split("?")[1] || "").get("name") || "";
    const form = this.openForm(null, add);
    form.name.value = name.slice(0, 64);
    if (name) form.url.focus();
  }

  // drawReturn says how the sign-in went, above the connection.
  drawReturn(ret, here, c) {
    const name = c && c.id === ret.connection ? c.name : "The connection";
    // A reload of a callback whose first request completed: the state
    // was used, by the sign-in that connected it.
    const done = ret.code === "conflict" && c && c.id === ret.connection && c.active && !needsSignIn(c);
    if (done) ret = { ...ret, ok: true };
    const parts = [ret.ok
      ? h("p", { class: "conn-banner", role: "status" }, `${name} is connected. New tools start off: allow the ones Ask may use.` +
        (here && ret.conversation ? " Your chat is waiting in the bar below." : ""))
      : h("p", { class: "conn-banner failed", role: "alert" }, (failures[ret.code] || "The sign-in failed. Nothing was connected.") +
        (c && this.canManage && needsSignIn(c) ? " Reconnect tries again." : ""))];
    if (ret.conversation && !here) {
      parts.push(h("p", { class: "muted" }, "The conversation you came from is in another team. Sign in to that team to continue it."));
    }
    $("connections-return").replaceChildren(...parts);
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
    const e = lastFailure(c);
    return h("li", { class: "conn-card" },
      h("h2", { class: "conn-name" }, h("a", { href: "#/connections/" + encodeURIComponent(c.id) }, c.name)),
      this.facts(c),
      e ? h("p", { class: "error" }, this.problem(c)) : null);
  }

  // problem is the last failure as a sentence: the sign-in's, or the
  // tool refresh's.
  problem(c) {
    const e = lastFailure(c);
    const m = e.message.trim();
    const text = capitalize(m) + (/[.!?]$/.test(m) ? "" : ".");
    if (!c.discovery.error || (c.auth === "oauth" && e.code === "forbidden")) {
      return "Sign-in is needed. " + text + " The connection is saved; Reconnect tries again.";
    }
    if (e.code === "invalid_result") return "No usable tools: " + text;
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
    return form;
  }

  // saved follows a save: a new or changed server is checked at once
  // (its tools listed, or OAuth started), then the connection is shown.
  async saved(c, { created, reconnect, start }) {
    const target = "#/connections/" + encodeURIComponent(c.id);
    if (location.hash !== target) history.pushState(null, "", target);
    if (start && start.authorization_url) return location.assign(start.authorization_url);
    if (start) {
      await this.signInFailed(c, "Connection added.", start.error);
    } else if (reconnect) {
      await this.connect(c, created ? "Connection added." : "Saved.");
    } else {
      await this.detail(c.id, false, c);
      this.say("Saved.");
    }
    $("connections-title").focus();
  }

  // connect lists a connection's tools or, for OAuth, starts its sign-in
  // and goes to the provider; the sign-in returns to this page. A start
  // that fails keeps the connection saved; Reconnect tries again.
  async connect(c, prefix) {
    this.say((prefix ? prefix + " " : "") + (needsSignIn(c) ? "Starting sign-in…" : "Listing its tools…"));
    if (needsSignIn(c)) {
      try {
        location.assign((await api.startOAuth(c.id)).authorization_url);
      } catch (err) {
        await this.signInFailed(c, prefix, err);
      }
      return;
    }
    let failure = null;
    let text = "";
    let known;
    try {
      const { connection } = await api.discover(c.id);
      known = connection;
      const d = connection.discovery;
      text = `Found ${plural(d.tools, "tool", "tools")}. New tools start off.` + (d.excluded ? ` ${plural(d.excluded, "tool was", "tools were")} excluded.` : "");
    } catch (err) {
      failure = err;
    }
    // A failure the connection recorded is drawn with it, as an alert.
    this.announce = !!failure;
    await this.detail(c.id, false, known);
    this.announce = false;
    if (!failure) return this.say((prefix ? prefix + " " : "") + text);
    this.statusEl.textContent = prefix || "";
    if (!$("connection-problem")) this.fail(failure.message);
  }

  // signInFailed shows a connection whose sign-in did not start: saved,
  // with why (the connection keeps the failure, drawn as an alert).
  async signInFailed(c, prefix, err) {
    this.announce = true;
    await this.detail(c.id, true);
    this.announce = false;
    this.statusEl.textContent = prefix || "";
    if (!$("connection-problem")) this.fail((err && err.message) || "The sign-in could not start.");
  }

  // detail draws connection id; known is the connection as a request
  // just answered it (then nothing is fetched again).
  async detail(id, keepStatus, known) {
    const list = known ? [known] : await this.load();
    if (!list) return null;
    const c = list.find((x) => x.id === id);
    if (!c) {
      $("connections-crumb").replaceChildren();
      $("connections-title").textContent = "Connection not found";
      this.body.replaceChildren(h("p", {}, "This connection does not exist, or was deleted. ", h("a", { href: "#/connections" }, "See all connections")));
      return null;
    }
    if (!keepStatus) this.errorEl.textContent = "";
    $("connections-title").textContent = c.name;
    $("connections-crumb").replaceChildren(h("a", { href: "#/connections" }, "← All connections"));
    const parts = [this.facts(c)];
    if (lastFailure(c)) {
      parts.push(h("div", { class: "problem", id: "connection-problem", role: this.announce ? "alert" : undefined },
        h("p", { class: "error" }, icon("alert"), this.problem(c)),
        c.discovery.at ? h("p", { class: "muted" }, "The tools from the last successful refresh are kept, with their approvals.") : null));
    }
    if (this.canManage) {
      const actions = h("div", { class: "page-actions" });
      const refresh = h("button", { type: "button", class: "primary" }, needsSignIn(c) ? "Reconnect" : "Refresh tools");
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
    return c;
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
