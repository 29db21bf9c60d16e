// The transcript: one block per turn (the question, then the answer's
// text and result components, then its work summary), built the same way
// from live events and from a reopened conversation.

import { masked, sentence } from "./api.js";
import { h, icon, newTab } from "./dom.js";
import { WorkSummary } from "./work-summary.js";
import { ApprovalCard, decidedCard } from "./approval-card.js";
import { SetupCard, setupOf } from "./setup-card.js";
import { remoteOf, remoteResult } from "./remote-result.js";
import { datasetOf, datasetTable } from "./dataset-table.js";

function chartOf(result) {
  return result && result.chart && result.chart.type === "chart" && result.chart.id ? result : null;
}

export class Transcript {
  // scroller is the element that scrolls; column holds the turns. deps:
  // charts (Charts), live(text) for the status region, onDecide(turn,
  // verb, tool), onRetry(question), onContext(items, notice), say(text)
  // to send a message and conversation() its ID (setup cards).
  constructor(scroller, column, deps) {
    this.scroller = scroller;
    this.column = column;
    Object.assign(this, deps);
    this.turns = new Map();
    this.setupCards = []; // the transcript's setup cards, oldest first
    // Follow the newest content (charts load after they are placed)
    // while the reader is at the bottom; stop when they scroll up.
    // Only a move up lets go (content that grows below is no reason);
    // reaching the bottom again follows again.
    this.stick = true;
    let last = 0;
    scroller.addEventListener("scroll", () => {
      const atBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48;
      if (atBottom) this.stick = true;
      else if (scroller.scrollTop < last - 1) this.stick = false;
      last = scroller.scrollTop;
    });
    new ResizeObserver(() => { if (this.stick) this.toBottom(); }).observe(column);
  }

  toBottom() { this.scroller.scrollTop = this.scroller.scrollHeight; }

  clear() {
    this.column.replaceChildren();
    this.turns.clear();
    this.setupCards = [];
    this.charts.clear();
  }

  // ask shows a question (and the names of its files, and the context
  // items it is sent with) at once, before anything is answered.
  ask(question, files, items) {
    const tv = new TurnView(this, question, true, files, items);
    this.column.append(tv.el);
    this.scroll(true);
    return tv;
  }

  bind(turnID, tv) { if (turnID) this.turns.set(turnID, tv); }

  // addSetup keeps a new setup card: only the newest offers actions, as
  // the server marks the older ones inert when the conversation opens.
  // null settles the older ones for a card not shown.
  addSetup(card) {
    for (const c of this.setupCards) c.settle();
    if (card) this.setupCards.push(card);
  }

  // scroll keeps the newest message in view, unless the reader scrolled
  // up to read earlier ones.
  scroll(force) {
    if (force) this.stick = true;
    if (this.stick) this.toBottom();
  }

  // load shows an opened conversation (ask.View).
  load(view) {
    this.clear();
    const pending = new Map((view.pending_approvals || []).map((p) => [p.approval_id, p]));
    const decided = new Map((view.decided_approvals || []).map((d) => [d.approval_id, d]));
    const stopped = new Set((view.turns || []).filter((t) => t.state === "stopped").map((t) => t.id));
    const running = new Set((view.turns || []).filter((t) => t.state === "running").map((t) => t.id));
    const turns = new Map();
    const entry = (id, at) => {
      if (!turns.has(id)) turns.set(id, { at, question: "", files: [], sent: [], items: [] });
      return turns.get(id);
    };
    for (const m of view.messages || []) {
      if (!m.turn_id) continue;
      const t = entry(m.turn_id, m.created_at);
      if (m.role === "user" && !t.question) {
        t.question = m.text;
        t.files = (m.attachments || []).map((a) => a.name);
        t.sent = m.context || [];
      }
      else if (m.role === "assistant") t.items.push({ at: m.created_at, text: m.text });
    }
    for (const r of view.work_summary || []) {
      if (!r.turn_id) continue; // a direct action: it changed a chart in place
      entry(r.turn_id, r.created_at).items.push({ at: r.created_at, run: r });
    }
    const ordered = [...turns.entries()].sort((a, b) => Date.parse(a[1].at) - Date.parse(b[1].at));
    for (const [id, t] of ordered) {
      const tv = new TurnView(this, t.question, false, t.files, t.sent);
      this.bind(id, tv);
      this.column.append(tv.el);
      t.items.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
      for (const it of t.items) {
        if (it.text !== undefined) { tv.para().textContent = it.text; tv.current = null; continue; }
        tv.restore(it.run, pending.get(it.run.approval_id), decided.get(it.run.approval_id));
      }
      if (stopped.has(id)) tv.stopped();
      else if (running.has(id)) tv.underway();
      else tv.finish(true);
    }
    this.scroll(true);
  }

  // waitingCard is the newest approval card of the chat that still
  // waits for a choice, or null.
  waitingCard() {
    let card = null;
    for (const tv of this.column.children) if (tv.turnView) card = tv.turnView.waiting() || card;
    return card;
  }

  // running says whether a turn shown still runs on the server.
  running() { return [...new Set(this.turns.values())].some((tv) => tv.onServer); }

  // update applies a newer view of the conversation while turns run on
  // the server: an approved call that ended settles its card and its
  // step, and the status says how it ended. It returns whether a turn
  // still runs.
  update(view) {
    const runs = new Map((view.work_summary || []).filter((r) => r.approval_id).map((r) => [r.approval_id, r]));
    for (const tv of new Set(this.turns.values())) {
      for (const [id, card] of tv.cards) {
        const r = runs.get(id);
        if (!card.runningNow || !r || r.state === "running") continue;
        card.settle(r.state, r.error_message);
        tv.work.update(r);
        this.live(card.record.textContent);
      }
    }
    return (view.turns || []).some((t) => t.state === "running");
  }
}

const typeWord = { dashboard: "Dashboard", chart: "Chart", dataset: "Dataset", connection: "Connection" };

// sentItem is one context item a question was sent with: a link to its
// page in a new tab; its name alone for a type without a page (a
// connection); and, once it was deleted or can no longer be opened,
// its name saying so, without a link.
function sentItem(it) {
  const label = it.label || `${typeWord[it.entity_type] || "Item"}: ${it.name}`;
  if (it.available === false) {
    return h("li", { class: "sent-item gone" }, icon(it.entity_type), h("span", { class: "sent-label" }, label), h("span", { class: "sent-gone" }, " · no longer available"));
  }
  const name = h("span", { class: "sent-label" }, label);
  if (it.url) return h("li", { class: "sent-item" }, newTab(it.url, icon(it.entity_type), name));
  return h("li", { class: "sent-item" }, icon(it.entity_type), name);
}

class TurnView {
  constructor(t, question, live, files, items) {
    this.t = t;
    this.question = question;
    this.cards = new Map();
    this.setups = []; // setup results, shown after the answer's text
    this.tables = []; // dataset runs: the first is shown as a table when the answer charts nothing
    this.current = null;
    this.work = new WorkSummary({ onRetry: () => t.onRetry(question) });
    this.answer = h("div", { class: "answer" });
    this.thinking = live ? h("p", { class: "thinking" }, "Working…") : null;
    this.answer.append(...[this.thinking, this.work.el].filter(Boolean));
    const names = (files || []).length
      ? h("ul", { class: "question-files", "aria-label": "Attached files" }, files.map((n) => h("li", {}, masked(n))))
      : null;
    // The items the question was sent with, above it: a record of that
    // turn's context, which stays when they leave the context later.
    this.sent = h("ul", { class: "question-items", "aria-label": "Sent with" });
    this.setSent(items);
    this.el = h("article", { class: "turn" },
      h("div", { class: "question" }, this.sent, h("p", {}, masked(question)), names), this.answer);
    this.el.turnView = this;
  }

  // setSent shows the items the question was sent with: those selected
  // when it was sent, then the server's, as the turn began with them.
  setSent(items) {
    this.sent.replaceChildren(...(items || []).map(sentItem));
    this.sent.hidden = !(items || []).length;
  }

  insert(node) {
    if (this.thinking) { this.thinking.remove(); this.thinking = null; }
    this.answer.insertBefore(node, this.work.el);
    this.t.scroll();
  }

  para() {
    if (!this.current) {
      this.current = h("div", { class: "text" });
      this.insert(this.current);
    }
    return this.current;
  }

  reopen() {
    if (this.actions) { this.actions.remove(); this.actions = null; }
    this.work.reopen();
    this.thinking = h("p", { class: "thinking" }, "Working…");
    this.answer.insertBefore(this.thinking, this.work.el);
    this.t.scroll();
  }

  // restore shows one saved run of a reopened conversation: a pending
  // approval as its card, a decided one as its receipt.
  restore(run, pending, decided) {
    this.work.update(run, (pending || decided || {}).title);
    const chart = chartOf(run.result);
    if (run.approval_id) {
      if (pending) {
        const card = new ApprovalCard({ ...pending, name: pending.tool, call_id: pending.call_id },
          { onDecide: (verb, tool) => this.t.onDecide(this, verb, tool), onExpire: (tool) => this.expired(tool), charts: this.t.charts });
        this.cards.set(run.approval_id, card);
        this.insert(card.el);
      } else {
        const card = decidedCard(run, decided, this.t.charts);
        if (card) {
          this.cards.set(run.approval_id, card);
          this.insert(card.el);
        }
      }
    }
    if (chart) this.insert(this.t.charts.add(chart));
    const remote = remoteOf(run.result);
    if (remote) this.insert(remoteResult(remote));
    const setup = setupOf(run.result);
    if (setup) this.setups.push(setup);
    const table = datasetOf(run.result);
    if (table) this.tables.push(table);
  }

  // handle applies one live event of this turn.
  handle(e) {
    this.t.bind(e.turn_id, this);
    const tool = e.tool;
    switch (e.type) {
      case "context.updated":
        this.t.onContext(e.context || [], e.notice || "");
        this.setSent(e.context || []);
        break;
      case "message.delta":
        this.para().textContent += e.delta;
        this.t.scroll();
        break;
      case "message.completed":
        this.para().textContent = e.text;
        this.current = null;
        this.t.scroll();
        break;
      case "tool.running":
        this.work.update(tool);
        this.t.live(tool.label + "…");
        break;
      case "tool.completed": {
        this.work.update(tool);
        this.t.live(tool.label);
        const card = this.cards.get(tool.approval_id);
        if (card) card.settle("completed");
        // An approved action may have changed or deleted charts shown
        // above: show them as they are now.
        if (tool.approval_id) this.t.charts.reloadAll();
        const chart = chartOf(tool.result);
        if (chart) this.insert(this.t.charts.add(chart));
        const remote = remoteOf(tool.result);
        if (remote) this.insert(remoteResult(remote));
        const setup = setupOf(tool.result);
        if (setup) this.setups.push(setup);
        const table = datasetOf(tool.result);
        if (table) this.tables.push(table);
        break;
      }
      case "tool.failed": {
        this.work.update({ ...tool, error: e.error });
        this.t.live(tool.label + ": " + (tool.state === "unavailable" ? "not available" : "failed"));
        const card = this.cards.get(tool.approval_id);
        if (card) card.settle("failed", e.error && e.error.message);
        break;
      }
      case "tool.approval_required": {
        this.work.update(tool);
        const card = new ApprovalCard(tool, { onDecide: (verb, t) => this.t.onDecide(this, verb, t), onExpire: (t) => this.expired(t), charts: this.t.charts });
        this.cards.set(tool.approval_id, card);
        this.insert(card.el);
        this.t.live(tool.can_approve === false ? "Waiting for approval: ask an admin" : "Waiting for your approval");
        break;
      }
      case "tool.rejected": {
        this.work.update(tool);
        const card = this.cards.get(tool.approval_id);
        if (card) card.settle("rejected");
        break;
      }
      case "request.completed":
        this.finish(false, e.state === "awaiting_approval");
        break;
      case "request.failed":
        this.fail(sentence(e.error && e.error.code, e.error && e.error.message));
        break;
    }
  }

  // answerActions offers Copy and Ask again under a finished answer that
  // has text: Copy puts the answer's text on the clipboard, Ask again
  // sends the question once more.
  answerActions(waiting) {
    if (this.actions) { this.actions.remove(); this.actions = null; }
    const text = () => [...this.answer.querySelectorAll(".text")].map((p) => p.textContent.trim()).filter(Boolean).join("\n\n");
    if (waiting || !text()) return;
    const copy = h("button", { type: "button", class: "link", "aria-label": "Copy answer", onclick: async () => {
      try {
        await navigator.clipboard.writeText(text());
        this.t.live("Answer copied.");
      } catch {
        this.t.live("The answer could not be copied. Select the text and copy it instead.");
      }
    } }, "Copy");
    const again = h("button", { type: "button", class: "link", onclick: () => this.t.onRetry(this.question) }, "Ask again");
    this.actions = h("p", { class: "answer-actions" }, copy, again);
    this.insert(this.actions);
  }

  // fail shows why the turn could not finish, with Retry when retry is
  // given (the message was not sent).
  fail(message, retry) {
    this.insert(h("p", { class: "error turn-error" }, message,
      retry ? [" ", h("button", { type: "button", class: "link", onclick: retry }, "Retry")] : null));
    this.finish();
  }

  // slow shows, with stop (a function), that the answer is taking
  // longer than usual, with a Stop button; null takes the note away.
  slow(stop) {
    if (this.slowNote) { this.slowNote.remove(); this.slowNote = null; }
    if (!stop) return;
    this.slowNote = h("p", { class: "slow-note" }, "This is taking longer than usual. You can keep waiting, or ",
      h("button", { type: "button", class: "link", onclick: stop }, "Stop"), " it.");
    this.answer.insertBefore(this.slowNote, this.work.el);
    this.t.scroll();
  }

  // stopped ends the turn the user stopped: what arrived stays.
  stopped() {
    this.insert(h("p", { class: "muted turn-stopped" }, "You stopped this answer."));
    this.finish(true);
  }

  // expired records that the approval of tool's call expired unanswered:
  // its step did not run, and the turn waits no more (unless on another
  // card).
  expired(tool) {
    this.work.update({ ...tool, state: "expired" });
    this.finish(true);
    if (this.t.onWaiting) this.t.onWaiting();
    if (!this.waiting()) this.t.live("The approval expired. Nothing ran.");
  }

  // underway shows a turn that still runs on the server, opened from a
  // view: its steps as they stand, not folded as if finished; an
  // approved call that runs says so on its card (running), the status
  // too, for screen readers.
  underway() {
    this.onServer = true;
    const card = [...this.cards.values()].find((c) => c.runningNow);
    if (!card && !this.thinking) {
      this.thinking = h("p", { class: "thinking" }, "Still working…");
      this.answer.insertBefore(this.thinking, this.work.el);
    }
    const what = card ? card.tool.title || card.tool.label : "";
    this.t.live(what ? `Still running: ${what}. This chat updates when it finishes.` : "Still working. This chat updates when it finishes.");
  }

  // waiting is the newest open approval card of this turn, if any.
  waiting() { return [...this.cards.values()].filter((c) => c.open).pop() || null; }

  // finish ends the turn's live view. A turn whose approval card still
  // waits never reads as finished: the status and the work summary say
  // that it waits, and the card takes the focus unless the user is
  // typing.
  finish(quiet, awaiting) {
    this.onServer = false;
    if (this.thinking) { this.thinking.remove(); this.thinking = null; }
    // The answer explains the missing access first; the setup cards
    // follow it.
    const explained = [...this.answer.querySelectorAll(".text")].some((p) => p.textContent.trim() !== "");
    // A dataset read that no chart or other result shows (a dataset
    // with no numeric field) is shown as its table, after the answer.
    const tables = this.tables.splice(0);
    if (tables.length && !this.answer.querySelector(".chart-result")) this.insert(datasetTable(tables[0]));
    // A continued request's fresh check finds the connection ready: when
    // the answer shows what came back, a second "Connection ready" card
    // would only repeat the first one (which it settles).
    const answered = !!this.answer.querySelector(".chart-result");
    for (const s of this.setups.splice(0)) {
      if (!s.needs_setup && answered) {
        this.t.addSetup(null);
        continue;
      }
      const card = new SetupCard(s, { say: (text) => this.t.say(text), conversation: () => this.t.conversation(), explained });
      this.t.addSetup(card);
      this.insert(card.el);
    }
    const card = this.waiting();
    if (this.t.onWaiting) this.t.onWaiting();
    this.work.finish(!!card || !!awaiting);
    this.answerActions(!!card || !!awaiting);
    if (card) {
      this.t.live(card.tool.can_approve === false ? "Waiting for approval: ask an admin" : "Waiting for your approval");
      const a = document.activeElement;
      if (!quiet && (!a || a === document.body || a.id === "message" && !a.value)) card.focus();
    } else if (!quiet) {
      this.t.live("Answer ready.");
    }
    this.t.scroll();
  }
}
