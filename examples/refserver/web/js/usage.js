// The usage page (#/usage): what the assistant (Ask) and the MCP server
// cost and how they are used, over a chosen period, from the usage view
// (GET /ai/usage: package usage): totals, the tool that fails most,
// people, tool calls by tool with error rate and p50/p95, tokens and
// estimated cost by model, MCP clients and remote MCP connections. And the
// token budgets: owners and admins set, change and remove them; anyone
// else sees the ones that apply to them. A member who is not an owner or
// admin sees their own row only: the server decides, the page says so.
// It never shows message text, arguments or data: the view holds none.

import { call } from "./api.js";
import { $, h } from "./dom.js";
import { confirm } from "./memory.js";

export const usageApi = {
  report: (from, to) => call("GET", "/ai/usage?" + new URLSearchParams({ from: from.toISOString(), to: to.toISOString() })),
  budgets: () => call("GET", "/ai/usage/budgets"),
  setBudget: (body) => call("PUT", "/ai/usage/budgets", body),
  removeBudget: (userID, period) => call("DELETE", "/ai/usage/budgets?" + new URLSearchParams({ user_id: userID, period })),
};

const DAY = 24 * 3600 * 1000;

// range is the period's [from, to), in the browser's time zone: "week"
// starts on Monday.
export function range(period, now = new Date()) {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  switch (period) {
    case "today": return [midnight, now];
    case "week": return [new Date(now.getFullYear(), now.getMonth(), now.getDate() - (now.getDay() + 6) % 7), now]; // a date, not 24 h steps: DST-safe
    case "month": return [new Date(now.getFullYear(), now.getMonth(), 1), now];
    case "30d": return [new Date(now.getTime() - 30 * DAY), now];
    case "90d": return [new Date(now.getTime() - 90 * DAY), now];
    default: return [new Date(now.getTime() - 7 * DAY), now];
  }
}

const PERIODS = ["today", "week", "7d", "month", "30d", "90d"];

const int = (n) => Number(n || 0).toLocaleString("en");

// usd is an estimated cost: cents, or four decimals below one cent.
export function usd(n) {
  n = Number(n || 0);
  if (n === 0) return "$0.00";
  if (n < 0.01) return "$" + n.toFixed(4);
  return "$" + n.toLocaleString("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

const pct = (r) => (r === 0 ? "0%" : r < 0.01 ? "<1%" : Math.round(r * 100) + "%");

function ms(v) {
  if (!v) return "—";
  if (v < 1) return "<1 ms";
  if (v < 1000) return Math.round(v) + " ms";
  return (v / 1000).toFixed(v < 10000 ? 1 : 0) + " s";
}

const day = (iso) => {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? "" : new Date(t).toLocaleDateString("en-GB", { day: "numeric", month: "short", year: "numeric" });
};
const when = (iso) => {
  const t = Date.parse(iso);
  if (Number.isNaN(t) || t <= 0) return "—";
  return new Date(t).toLocaleString("en-GB", { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });
};
// utc is a reset time as the refusal says it: "00:00 UTC on 6 Dec 2026".
const utc = (iso) => {
  const d = new Date(iso);
  return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")} UTC on ` +
    d.toLocaleDateString("en-GB", { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" });
};

const surfaceWords = { chat: "Chat", mcp: "MCP" };
const authWords = { api_key: "API key", oauth: "OAuth", session: "Session" };

// table is a data table that becomes one card per row on a narrow
// screen (each cell then shows its heading). cols: {label, cell(row),
// num} with the first column the row's heading.
function table(caption, cols, rows) {
  return h("div", { class: "table-scroll" }, h("table", { class: "usage-table" },
    h("caption", { class: "vh" }, caption),
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, cols.map((c, i) => h(i === 0 ? "th" : "td",
      { scope: i === 0 ? "row" : null, class: c.num ? "num" : null, "data-label": c.label }, c.cell(r))))))));
}

function empty(text) { return h("p", { class: "empty" }, text); }

export class UsagePage {
  constructor(status) {
    this.status = status;
    this.el = $("usage-page");
    this.report = null;
    this.loading = 0;
    $("usage-period").addEventListener("change", () => {
      // The period is part of the address: a view can be linked to and
      // reloaded.
      history.replaceState(null, "", "#/usage?period=" + $("usage-period").value);
      this.load();
    });
    $("usage-range").addEventListener("submit", (ev) => ev.preventDefault());
    $("budget-form").addEventListener("submit", (ev) => { ev.preventDefault(); this.save(); });
    $("budget-tokens").addEventListener("input", () => this.fieldError(""));
  }

  hide() { this.el.hidden = true; }

  async show() {
    this.el.hidden = false;
    const q = new URLSearchParams(location.hash.split("?")[1] || "");
    $("usage-period").value = PERIODS.includes(q.get("period")) ? q.get("period") : "7d";
    await this.load();
  }

  say(text) { $("usage-status").textContent = text; }

  // load reads the view and the budgets; an older load's answer that
  // arrives late is dropped.
  async load() {
    const seq = ++this.loading;
    const period = $("usage-period").value;
    const [from, to] = range(period);
    this.el.setAttribute("aria-busy", "true");
    const [rep, bud] = await Promise.allSettled([usageApi.report(from, to), usageApi.budgets()]);
    if (seq !== this.loading) return;
    this.el.removeAttribute("aria-busy");
    $("usage-error").textContent = rep.status === "rejected" ? rep.reason.message : bud.status === "rejected" ? bud.reason.message : "";
    $("usage-dates").textContent = from.toLocaleDateString("en-GB", { day: "numeric", month: "short" }) + " – " +
      to.toLocaleDateString("en-GB", { day: "numeric", month: "short", year: "numeric" });
    if (rep.status === "fulfilled") {
      for (const k of ["users", "tools", "models", "clients", "connections"]) rep.value[k] = rep.value[k] || [];
      this.report = rep.value;
      this.draw(rep.value);
      this.say(`Showing ${$("usage-period").selectedOptions[0].textContent.toLowerCase()}: ${$("usage-dates").textContent}.`);
    }
    if (bud.status === "fulfilled") this.drawBudgets(bud.value.budgets);
  }

  // team reports whether the caller sees the whole team (an owner or an
  // admin), as the server decided.
  get team() { return this.report && !this.report.user_id; }

  draw(r) {
    const name = r.team_name || r.team_id;
    $("usage-lede").textContent = this.team
      ? `How ${name} uses the assistant and the MCP server, and what it costs. Costs are estimates from the tokens the model provider reports, at this server's prices.`
      : `Your own use of the assistant and the MCP server in ${name}. Owners and admins see the whole team.`;
    const t = r.total;
    const tile = (label, value, note) => [h("div", { class: "tile" }, h("dt", {}, label), h("dd", {}, value, note ? h("span", { class: "tile-note" }, note) : null))];
    const tokens = t.tokens.input_tokens + t.tokens.output_tokens;
    $("usage-totals").replaceChildren(
      ...tile("Estimated cost", usd(t.cost_usd)),
      ...tile("Tokens", int(tokens), `${int(t.tokens.input_tokens)} in · ${int(t.tokens.output_tokens)} out`),
      ...tile("Chat messages", int(t.chat_turns)),
      ...tile("MCP tool calls", int(t.mcp_calls)),
      ...tile("Model calls", int(t.model_calls)));
    // The view lists the tool that fails most first.
    const worst = r.tools.find((x) => x.errors > 0);
    $("usage-fails").replaceChildren(worst
      ? h("span", {}, "Fails most: ", h("strong", {}, worst.tool), ` (${surfaceWords[worst.surface] || worst.surface}), ` +
        `${int(worst.errors)} of ${int(worst.calls)} calls failed (${pct(worst.error_rate)}).`)
      : h("span", {}, r.tools.length ? "No tool call failed in this period." : "No tool calls in this period."));

    $("usage-people").replaceChildren(r.users.length ? table("People", [
      { label: "Person", cell: (u) => u.user_id },
      { label: "Chat messages", num: true, cell: (u) => int(u.chat_turns) + (u.chat_errors ? ` (${int(u.chat_errors)} failed)` : "") },
      { label: "MCP calls", num: true, cell: (u) => int(u.mcp_calls) + (u.mcp_errors ? ` (${int(u.mcp_errors)} failed)` : "") },
      { label: "Model calls", num: true, cell: (u) => int(u.model_calls) },
      { label: "Tokens", num: true, cell: (u) => int(u.tokens.input_tokens + u.tokens.output_tokens) },
      { label: "Est. cost", num: true, cell: (u) => usd(u.cost_usd) },
      { label: "Last active", cell: (u) => when(u.last_active) },
    ], r.users) : empty("Nobody used the assistant or the MCP server in this period."));

    $("usage-tools").replaceChildren(r.tools.length ? table("Tool calls", [
      { label: "Tool", cell: (x) => x.tool },
      { label: "Where", cell: (x) => surfaceWords[x.surface] || x.surface },
      { label: "Calls", num: true, cell: (x) => int(x.calls) },
      { label: "Failed", num: true, cell: (x) => int(x.errors) },
      { label: "Error rate", num: true, cell: (x) => h("span", { class: x.errors ? "bad" : null }, pct(x.error_rate)) },
      { label: "Median (p50)", num: true, cell: (x) => ms(x.p50_ms) },
      { label: "Slowest 5% (p95)", num: true, cell: (x) => ms(x.p95_ms) },
    ], r.tools) : empty("No tool calls in this period."));

    const unpriced = r.models.some((m) => !m.priced);
    $("usage-models").replaceChildren(...(r.models.length ? [table("Models, tokens and cost", [
      { label: "Model", cell: (m) => [m.model, h("span", { class: "muted" }, " · " + (m.provider || "unknown provider"))] },
      { label: "Calls", num: true, cell: (m) => int(m.calls) },
      { label: "Input tokens", num: true, cell: (m) => int(m.tokens.input_tokens) + (m.tokens.cached_input_tokens ? ` (${int(m.tokens.cached_input_tokens)} cached)` : "") },
      { label: "Output tokens", num: true, cell: (m) => int(m.tokens.output_tokens) },
      { label: "Est. cost", num: true, cell: (m) => (m.priced ? usd(m.cost_usd) : "No price set") },
    ], r.models), unpriced ? h("p", { class: "hint" }, "A model without a price counts its tokens but no cost: the server's -model-prices sets prices.") : ""]
      : [empty("No model calls in this period.")]));

    $("usage-clients").replaceChildren(...(r.clients.length ? [table("MCP clients", [
      { label: "Client", cell: (c) => c.client || "Unnamed client" },
      { label: "Person", cell: (c) => c.user_id },
      { label: "Signed in with", cell: (c) => authWords[c.auth] || c.auth },
      { label: "Calls", num: true, cell: (c) => int(c.calls) },
      { label: "Failed", num: true, cell: (c) => int(c.errors) },
      { label: "Last used", cell: (c) => when(c.last_used) },
    ], r.clients), h("p", { class: "hint" }, "Client names are what each client calls itself; they are not verified.")]
      : [empty("No MCP client called in this period.")]));

    $("usage-connections").replaceChildren(r.connections.length ? table("Remote MCP connections", [
      { label: "Connection", cell: (c) => c.name || c.connection_id },
      { label: "Calls", num: true, cell: (c) => int(c.calls) },
      { label: "Failed", num: true, cell: (c) => int(c.errors) },
      { label: "Median (p50)", num: true, cell: (c) => ms(c.p50_ms) },
      { label: "Slowest 5% (p95)", num: true, cell: (c) => ms(c.p95_ms) },
      { label: "Last used", cell: (c) => when(c.last_used) },
    ], r.connections) : empty("The assistant called no remote MCP connection in this period."));
  }

  // manager reports whether the caller may set budgets: the team's owners
  // and admins (the server checks again).
  get manager() { return this.status.role === "owner" || this.status.role === "admin"; }

  drawBudgets(list) {
    this.budgets = list;
    const who = (b) => (b.user_id ? b.user_id : "Whole team");
    const period = (b) => (b.period === "month" ? "monthly" : "daily");
    $("budget-empty").hidden = list.length > 0;
    $("budget-empty").textContent = this.manager
      ? "No budgets: the assistant may use any number of tokens. Set one below."
      : "No budget applies to you.";
    $("budget-list").replaceChildren(...list.map((b) => {
      const title = `${who(b)}, ${period(b)}`;
      const li = h("li", { class: "budget" + (b.exceeded ? " exceeded" : "") },
        h("div", { class: "budget-head" }, h("h3", {}, title), b.exceeded ? h("span", { class: "badge state-bad" }, "Used up") : null),
        h("p", {}, `${int(b.used)} of ${int(b.tokens)} tokens used (${pct(b.used / b.tokens)}).`),
        // The sentence above says it for everyone; the meter draws it.
        h("meter", { class: "budget-meter", "aria-hidden": "true", min: 0, max: b.tokens, value: Math.min(b.used, b.tokens),
          low: Math.round(b.tokens * 0.8), high: b.tokens - 0.5, optimum: 0 }),
        h("p", { class: "hint" }, `Set by ${b.set_by} on ${day(b.set_at)}. Resets at ${utc(b.resets_at)}.`),
        b.exceeded ? h("p", { class: "hint" }, "New chat messages are refused until then.") : null);
      if (this.manager) {
        const change = h("button", { type: "button", "aria-label": `Change budget: ${title}` }, "Change");
        const remove = h("button", { type: "button", class: "danger", "aria-label": `Remove budget: ${title}` }, "Remove");
        change.addEventListener("click", () => this.edit(b));
        remove.addEventListener("click", () => this.remove(b, remove));
        li.append(h("div", { class: "actions" }, change, remove));
      }
      return li;
    }));
    $("budget-form").hidden = !this.manager;
    $("budget-readonly").hidden = this.manager;
    if (!this.manager) return;
    // Whom a budget can be for: the team, or a member seen in the view.
    const sel = $("budget-user");
    const keep = sel.value;
    const users = [...new Set([...(this.report ? this.report.users.map((u) => u.user_id) : []), ...list.map((b) => b.user_id).filter(Boolean)])].sort();
    sel.replaceChildren(h("option", { value: "" }, "Whole team"), ...users.map((u) => h("option", { value: u }, "Only " + u)));
    sel.value = users.includes(keep) ? keep : "";
  }

  edit(b) {
    $("budget-user").value = b.user_id || "";
    $("budget-period").value = b.period;
    $("budget-tokens").value = String(b.tokens);
    $("budget-tokens").focus();
    $("budget-tokens").select();
  }

  fieldError(text) {
    $("budget-tokens-error").textContent = text;
    if (text) $("budget-tokens").setAttribute("aria-invalid", "true");
    else $("budget-tokens").removeAttribute("aria-invalid");
  }

  async save() {
    const raw = $("budget-tokens").value.trim();
    const tokens = Number(raw);
    if (!raw || !Number.isInteger(tokens) || tokens < 1) {
      this.fieldError("Enter a whole number of tokens, 1 or more.");
      $("budget-tokens").focus();
      return;
    }
    this.fieldError("");
    const body = { user_id: $("budget-user").value, period: $("budget-period").value, tokens };
    let st;
    try {
      st = await usageApi.setBudget(body);
    } catch (err) {
      if (/^tokens:/.test(err.detail || "")) {
        this.fieldError(err.message);
        $("budget-tokens").focus();
      } else $("usage-error").textContent = err.message;
      return;
    }
    $("budget-tokens").value = "";
    await this.load();
    const whom = st.user_id ? st.user_id + "'s" : "The team's";
    this.say(`${whom} ${st.period === "month" ? "monthly" : "daily"} budget is ${int(st.tokens)} tokens` +
      (st.exceeded ? ": it is used up, so new chat messages are refused." : "."));
  }

  async remove(b, button) {
    const whom = b.user_id ? `${b.user_id}'s` : "the team's";
    if (!await confirm(`Remove ${whom} ${b.period === "month" ? "monthly" : "daily"} budget?`,
      "Without it, chat messages are no longer refused for this budget.", "Remove")) {
      button.focus();
      return;
    }
    try {
      await usageApi.removeBudget(b.user_id || "", b.period);
    } catch (err) {
      $("usage-error").textContent = err.message;
      return;
    }
    await this.load();
    this.say(`Removed ${whom} ${b.period === "month" ? "monthly" : "daily"} budget.`);
    $("budgets-title").setAttribute("tabindex", "-1");
    $("budgets-title").focus();
  }
}
