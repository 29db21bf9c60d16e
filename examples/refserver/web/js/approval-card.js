// The approval card: the action in words, its exact target by name, that
// others see the change when it reaches a shared dashboard (the server's
// sentence), its class and whether it can be undone; Approve and Reject;
// then a record of the choice and its result, the receipt, which a
// reopened conversation shows the same. Nothing has run while the card
// waits. When the server says the user's role may not approve the
// call (can_approve false), the card offers no Approve and says "Ask an
// admin"; the server refuses such an approve too. Once a choice is made
// the buttons go; they come back only if the server did not take it.
// An approved call still running on the server (after a reload, or when
// the approve answered before the call finished) shows as running, with
// nothing to press, until the page hears how it ended (running()).

import { h } from "./dom.js";
import { distinctName, humanize } from "./format.js";

const typeWord = { dashboard: "Dashboard", chart: "Chart", dataset: "Dataset", connection: "Connection" };

// PLACEMENTS are the actions that put charts on a dashboard.
const PLACEMENTS = new Set(["add_preview_to_dashboard", "add_previews_to_dashboard"]);

// settings lists the arguments that are plain choices ("Chart type: bar"),
// leaving out the ones that name entities (dashboard_id, a batch's
// chart_ids): the targets show those by name.
function settings(args) {
  const out = [];
  for (const [k, v] of Object.entries(args || {})) {
    if (/_ids?$/.test(k) || v === null || typeof v === "object" && !Array.isArray(v)) continue;
    out.push([humanize(k), Array.isArray(v) ? v.join(", ") : String(v)]);
  }
  return out;
}

// expiry says when an approval expires: "Expires at 14:05, in 5 minutes."
function expiry(at) {
  const t = new Date(at);
  if (isNaN(t)) return "";
  const min = Math.max(0, Math.ceil((t - Date.now()) / 60000));
  const when = t.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit" });
  return `Expires at ${when}, ${min <= 1 ? "in under a minute" : `in ${min} minutes`}.`;
}

// tickEvery is how often an open card says again how long it has left.
const tickEvery = 15000;

export class ApprovalCard {
  // tool is the tool.approval_required event's tool (or a pending approval
  // from the opened conversation); onDecide(verb) runs the decision;
  // onExpire(tool) is told when it expires unanswered;
  // charts (the transcript's Charts) tells apart charts of one name.
  constructor(tool, { onDecide, onExpire, charts }) {
    this.tool = tool;
    this.onDecide = onDecide;
    this.onExpire = onExpire; // the card expired while open
    this.charts = charts;
    this.el = h("section", { class: "approval", "aria-label": "Approval: " + (tool.title || tool.label), tabindex: "-1" });
    this.open = true; // until settled: the turn waits for it
    this.record = h("p", { class: "record", role: "status" });
    this.classId = "approval-class-" + Math.random().toString(36).slice(2, 10);
    this.render(true);
    // While it waits, the card counts down, and once the approval has
    // expired it says so and offers nothing to press: the server would
    // refuse it (approval_invalid).
    if (!isNaN(new Date(tool.expires_at))) this.timer = setInterval(() => this.tick(), tickEvery);
  }

  tick() {
    if (!this.open) return clearInterval(this.timer);
    if (Date.now() < new Date(this.tool.expires_at)) {
      const el = this.el.querySelector(".approval-expiry");
      if (el) el.textContent = expiry(this.tool.expires_at);
      return;
    }
    const focused = this.el.contains(document.activeElement);
    this.settle("expired");
    if (focused) this.focus(); // the buttons are gone: the keyboard stays on the card
    if (this.onExpire) this.onExpire(this.tool);
  }

  render(open) {
    const t = this.tool;
    const destructive = t.class !== "mutating";
    // A chart is told apart from the others of its name, on the card or
    // in the transcript, by its scope.
    const charts = (t.targets || []).filter((r) => r.type === "chart").concat(this.charts ? this.charts.refs() : []);
    const name = (r) => r.type === "chart" ? distinctName(r, charts) : r.name;
    // Once a placement ran, its charts are saved on the dashboard: the
    // receipt says so rather than the "Preview" they were proposed as.
    const placed = this.state === "completed" && PLACEMENTS.has(t.name || t.tool);
    const dash = (t.targets || []).find((r) => r.type === "dashboard");
    const targets = (t.targets || []).map((r) => h("li", {}, `${typeWord[r.type] || "Item"} “${name(r)}”`,
      placed && r.type === "chart" ? [" ", h("span", { class: "badge state-saved" }, "Saved"), dash ? h("span", { class: "info" }, " on " + dash.name) : null]
        : r.info ? h("span", { class: "info" }, " · " + r.info) : null));
    const rows = settings(t.arguments);
    const may = t.can_approve !== false;
    // A choice being sent offers nothing to press a second time.
    const choose = open && !this.deciding;
    // A destructive action's Approve looks destructive.
    this.approve = may ? h("button", { type: "button", class: destructive ? "primary destructive" : "primary",
      "aria-describedby": destructive ? this.classId : null, onclick: () => this.decide("approve") }, "Approve") : null;
    this.reject = h("button", { type: "button", onclick: () => this.decide("reject") }, "Reject");
    this.el.replaceChildren(...[
      h("p", { class: "approval-ask" }, open ? "Ask wants to: " : "Approval: ", h("strong", {}, t.title || t.label)),
      targets.length ? h("ul", { class: "targets" }, targets) : null,
      open && t.shared ? h("p", { class: "approval-shared" }, t.shared) : null,
      rows.length ? h("dl", { class: "settings" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null,
      t.class ? h("p", { class: "approval-class", id: this.classId },
        h("span", { class: "badge " + (destructive ? "destructive" : "mutating") }, destructive ? "Destructive" : "Changes your workspace"),
        " ", destructive ? "This cannot be undone." : "You can change it again later.") : null,
      open && may ? h("p", { class: "approval-wait" }, "Nothing has changed yet. It runs only if you approve.",
        t.expires_at ? [" ", h("span", { class: "approval-expiry" }, expiry(t.expires_at))] : null) : null,
      open && !may ? h("p", { class: "approval-wait" }, "Nothing has changed. Your role cannot approve this. ", h("strong", {}, "Ask an admin"), ".") : null,
      choose ? h("div", { class: "actions" }, this.approve, this.reject) : null,
      this.record].filter(Boolean));
  }

  async decide(verb) {
    this.deciding = verb;
    this.render(true);
    this.record.textContent = verb === "approve" ? "You approved it. Running…" : "You rejected it.";
    const ok = await this.onDecide(verb, this.tool);
    this.deciding = null;
    // Not taken (the server kept the approval pending): choose again.
    if (!ok && this.open && !this.runningNow) this.render(true);
  }

  // running shows an approved call that is still running on the
  // server: no buttons, and a record that says so (role status).
  running() {
    this.open = false;
    this.runningNow = true;
    clearInterval(this.timer);
    this.render(false);
    this.record.textContent = "You approved it. It is still running; this updates when it finishes.";
  }

  // settle shows the final record: completed, failed (with why),
  // rejected, or expired.
  settle(state, message) {
    this.open = false;
    this.runningNow = false;
    this.state = state;
    clearInterval(this.timer);
    this.render(false);
    this.record.textContent = outcome(state, message);
  }

  problem(message) { this.record.textContent = message; }

  // focus moves the keyboard to the card (not to Approve, so a stray
  // Enter approves nothing); Tab reaches its buttons next.
  focus() { this.el.focus(); }
}

// outcome is a settled card's record of how it ended, "" for none.
function outcome(state, message) {
  return {
    completed: "You approved it. Done.",
    failed: "You approved it, but it failed: " + (message || "the action did not complete."),
    rejected: "You rejected it. It did not run.",
    expired: "This approval expired. Nothing ran.",
  }[state] || "";
}

// decidedCard is the receipt of an earlier approval as a reopened
// conversation shows it: the card as it was proposed (approval, the
// view's decided approval: its action, targets by name and settings),
// settled with its run's outcome, or running while its call runs. null
// for a run in no state a receipt shows.
export function decidedCard(run, approval, charts) {
  if (run.state !== "running" && !outcome(run.state)) return null;
  const card = new ApprovalCard(approval || { title: run.label }, { charts });
  if (run.state === "running") card.running();
  else card.settle(run.state, run.error_message);
  return card;
}
