// The account MCP settings (#/mcp): the published MCP server URL with a
// copy button, the client setup steps as the server gives them (Claude,
// ChatGPT, Cursor, the MCP Inspector), and the clients the user allowed
// (app name, marked unverified; return host; team; permissions; since
// when), each with "Remove access", confirmed first, which revokes the
// client's tokens at once.

import { account } from "./settings-api.js";
import { $, h } from "./dom.js";
import { confirm } from "./memory.js";

const scopeWords = {
  "data:read": "Read data",
  "data:refresh": "Refresh data",
  "charts:preview": "Preview charts",
  "datasets:write": "Save datasets and edit dashboards",
};

function since(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export class McpSettingsPage {
  constructor() {
    this.el = $("mcp-page");
    this.statusEl = $("mcp-status");
    this.errorEl = $("mcp-error");
    $("mcp-copy").addEventListener("click", () => this.copy());
  }

  say(text) {
    this.errorEl.textContent = "";
    this.statusEl.textContent = text;
  }

  hide() { this.el.hidden = true; }

  async show() {
    this.el.hidden = false;
    this.errorEl.textContent = "";
    const [settings, clients] = await Promise.allSettled([account.settings(), account.clients()]);
    if (settings.status === "fulfilled") this.drawSettings(settings.value);
    else this.errorEl.textContent = settings.reason.message;
    if (clients.status === "fulfilled") this.drawClients(clients.value.clients);
    else this.errorEl.textContent = clients.reason.message;
  }

  drawSettings(s) {
    $("mcp-url").value = s.server_url;
    $("mcp-setup").replaceChildren(...s.setup.map((c, i) => h("section", { class: "setup", "aria-labelledby": "mcp-setup-" + i },
      h("h3", { id: "mcp-setup-" + i }, c.client),
      h("ol", {}, c.steps.map((step) => h("li", {}, step))))));
  }

  async copy() {
    const input = $("mcp-url");
    try {
      await navigator.clipboard.writeText(input.value);
      this.say("The server URL is copied.");
    } catch {
      input.focus();
      input.select();
      this.say("Copying is not allowed here: the URL is selected, press Ctrl+C (or ⌘C) to copy it.");
    }
  }

  drawClients(list) {
    $("mcp-empty").hidden = list.length > 0;
    const box = $("mcp-clients");
    if (!list.length) { box.replaceChildren(); return; }
    const head = ["App", "Returns to", "Team", "Permissions", "Connected since"];
    box.replaceChildren(h("table", { class: "clients" },
      h("caption", { class: "vh" }, "Connected clients"),
      h("thead", {}, h("tr", {}, head.map((t) => h("th", { scope: "col" }, t)), h("th", { scope: "col" }, h("span", { class: "vh" }, "Actions")))),
      h("tbody", {}, list.map((c) => this.row(c)))),
    h("p", { class: "muted note" }, "App names are what each app calls itself; they are not verified."));
  }

  row(c) {
    const remove = h("button", { type: "button", class: "danger", "aria-label": `Remove access for ${c.app_name} (${c.team_name || c.team_id})` }, "Remove access");
    remove.addEventListener("click", () => this.remove(c, remove));
    return h("tr", { "data-client": c.id },
      h("th", { scope: "row", "data-label": "App" }, h("span", { class: "app-name" }, c.app_name), " ",
        c.unverified ? h("span", { class: "badge unverified" }, "Unverified") : null),
      h("td", { "data-label": "Returns to" }, c.return_host || "—"),
      h("td", { "data-label": "Team" }, c.team_name || c.team_id),
      h("td", { "data-label": "Permissions" }, h("ul", { class: "scopes" }, c.scopes.map((s) => h("li", {}, scopeWords[s] || s)))),
      h("td", { "data-label": "Connected since" }, h("time", { datetime: c.created_at }, since(c.created_at))),
      h("td", { class: "row-actions" }, remove));
  }

  async remove(c, button) {
    const team = c.team_name || c.team_id;
    if (!await confirm(`Remove access for ${c.app_name}?`, `${c.app_name} stops reaching your ${team} data at once: its tokens no longer work. ` +
      "To use it again, connect it again and allow it on the consent page.", "Remove access")) {
      button.focus();
      return;
    }
    try {
      await account.removeClient(c.id);
    } catch (err) {
      this.errorEl.textContent = err.message;
      return;
    }
    const clients = await account.clients().catch((err) => { this.errorEl.textContent = err.message; return null; });
    if (clients) this.drawClients(clients.clients);
    this.say(`Access removed for ${c.app_name}.`);
    $("mcp-title").focus();
  }
}
