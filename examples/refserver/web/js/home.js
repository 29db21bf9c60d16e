// Home: the idle page (greeting, suggestions, recent items, recent chats)
// and the focused chat it turns into when a message is sent. Home owns
// the layout; the transcript, composer and components report to it. The
// active conversation is restored after a reload: only its ID is kept, in
// session storage.

import { api, masked, retryable, UNAVAILABLE } from "./api.js";
import { $, h, icon } from "./dom.js";
import { ago, greeting, title } from "./format.js";
import { Composer } from "./composer.js";
import { Picker } from "./picker.js";
import { Transcript } from "./transcript.js";
import { Charts } from "./chart-result.js";
import { Attachments } from "./attachments.js";
import { Watch } from "./watch.js";

// SLOW_MS is how long a turn may go without news from the server before
// the chat says it is taking longer and offers Stop.
const SLOW_MS = 10000;

// SUGGESTIONS are questions the demo model answers, in a newcomer's
// words; a click sends one. None changes anything.
const SUGGESTIONS = ["How are signups trending?", "Which country has the most signups?", "What is our revenue?",
  "Show pageviews from Demo Analytics", "What can you do?"];

export class Home {
  // status is GET /ai/status; label the signed-in user's name, if known.
  constructor(status, label) {
    this.status = status;
    this.label = label;
    this.key = `askbi.active.${status.team_id}.${status.user_id}`;
    this.draftKey = `askbi.draft.${status.team_id}.${status.user_id}`;
    this.conv = sessionStorage.getItem(this.key) || "";
    this.chips = [];
    this.dirty = false;
    this.busy = false;
    this.el = $("home");

    this.composer = new Composer({
      onSubmit: (text) => this.submit(text),
      onAddContext: () => this.picker.open(),
      onRemove: (it) => this.setChips(this.chips.filter((c) => c !== it), true),
      onStop: () => this.stop(),
      max: status.max_message_chars,
    });
    this.files = new Attachments(status.attachments, {
      onChange: () => this.composer.sync(),
      problem: (text) => this.composer.setNotice(text),
    });
    this.picker = new Picker({
      team: () => this.status.team_id,
      selected: () => this.chips,
      onPick: (it) => { this.setChips([...this.chips, it], true); this.composer.focus(); },
    });
    this.charts = new Charts({ conversation: () => this.conv, defaultDashboard: () => this.selectedDashboard() });
    this.transcript = new Transcript($("transcript"), $("turns"), {
      charts: this.charts,
      live: (text) => this.composer.live(text),
      onWaiting: () => this.syncWaiting(),
      onDecide: (tv, verb, tool) => this.decide(tv, verb, tool),
      onRetry: (question) => this.submit(question),
      onContext: (items, notice) => { this.setChips(items, false); this.composer.setNotice(notice); },
      say: (text) => this.submit(text),
      conversation: () => this.conv,
    });
    // While a turn of the open chat runs on the server, the chat polls
    // it until it ends (watch.js).
    this.watch = new Watch({
      load: (id) => api.open(id),
      onView: (view) => this.watched(view),
      onGiveUp: () => this.composer.live("This is taking long. Reload the page later to see how it ended."),
    });
    $("close-answer").addEventListener("click", () => this.close());
    // While an approval waits, the composer offers a way to it: Go to it
    // (one Shift+Tab from the message) or Alt+Shift+A from anywhere.
    $("to-approval").addEventListener("click", () => this.toApproval());
    document.addEventListener("keydown", (ev) => {
      if (ev.altKey && ev.shiftKey && !ev.ctrlKey && !ev.metaKey && ev.code === "KeyA" && !this.el.hidden && this.toApproval()) ev.preventDefault();
    });
    this.composer.block(status.available ? "" : status.reason || "The assistant is not available.");
    // The host's word on the model (a demo model, and how to set a real one).
    $("model-note").textContent = status.model_note || "";
    $("model-note").hidden = !status.model_note;
    if (!this.conv) {
      try { this.setChips(JSON.parse(sessionStorage.getItem(this.draftKey) || "[]"), true); } catch { /* a bad draft is dropped */ }
    }
  }

  // show displays Home, the active conversation if there is one.
  async show() {
    this.el.hidden = false;
    $("greeting").textContent = greeting() + (this.label ? ", " + this.label : "");
    if (this.conv && !this.focused) return this.open(this.conv, true);
    if (!this.focused) this.idle();
    this.watch.resume();
  }

  // hide leaves the chat for another page: polling waits until it is
  // back.
  hide() {
    this.el.hidden = true;
    this.watch.pause();
  }

  // watched applies a view the watch fetched. While a turn still runs,
  // a card whose call ended settles; once none runs, the chat shows the
  // conversation as a reload would (unless a new answer streams in
  // now). It returns whether to go on polling.
  watched(view) {
    if (this.watch.id !== this.conv) return false;
    if (this.transcript.update(view)) return true;
    if (this.busy) return false;
    const turns = $("turns");
    const focused = turns.contains(document.activeElement);
    this.transcript.load(view);
    this.composer.live("Answer ready.");
    if (focused) this.composer.focus();
    return false;
  }

  // stillRunning checks, after an approve that did not end with the
  // call's outcome (it answered that the call is still running, or the
  // connection was lost), whether the call runs on: then its card says
  // so, with nothing to press, and the chat polls until it ends. false
  // when the approval still waits, or the server cannot be asked.
  async stillRunning(tv, card, tool) {
    let view;
    try {
      view = await api.open(this.conv);
    } catch {
      return false;
    }
    const run = (view.work_summary || []).find((r) => r.approval_id === tool.approval_id);
    if (!run || run.state === "approval_required" || (view.pending_approvals || []).some((p) => p.approval_id === tool.approval_id)) return false;
    card.running();
    tv.work.update(run);
    tv.underway();
    this.watch.start(this.conv);
    return true;
  }

  // syncWaiting shows the composer's note while an approval card of the
  // open chat waits.
  syncWaiting() { $("waiting-note").hidden = !this.transcript.waitingCard(); }

  // toApproval moves the keyboard to the newest waiting approval card
  // (one Tab from its Approve); false when none waits.
  toApproval() {
    const card = this.transcript.waitingCard();
    if (!card) return false;
    card.el.scrollIntoView({ block: "nearest" });
    card.focus();
    return true;
  }

  // watchSlow says, after SLOW_MS with nothing new from the server while
  // a turn runs, that the answer is taking longer, and offers Stop;
  // anything that arrives starts the wait again. It returns poke (call
  // it on each event) and stop.
  watchSlow(tv) {
    let timer = 0;
    const arm = () => {
      clearTimeout(timer);
      tv.slow(null);
      timer = setTimeout(() => {
        if (!this.busy) return;
        tv.slow(() => this.stop());
        this.composer.live("This is taking longer than usual. You can keep waiting, or stop it.");
      }, SLOW_MS);
    };
    arm();
    return { poke: arm, stop: () => { clearTimeout(timer); tv.slow(null); } };
  }

  selectedDashboard() {
    const d = this.chips.filter((c) => c.entity_type === "dashboard");
    return d.length === 1 ? d[0].id : "";
  }

  setChips(items, changed) {
    this.chips = items;
    if (changed) {
      this.dirty = true;
      this.composer.setNotice("");
    }
    if (!this.conv) sessionStorage.setItem(this.draftKey, JSON.stringify(items));
    this.composer.setChips(items);
  }

  setActive(id) {
    this.conv = id;
    if (id) {
      sessionStorage.setItem(this.key, id);
      sessionStorage.removeItem(this.draftKey);
    } else {
      sessionStorage.removeItem(this.key);
    }
  }

  setBusy(b) {
    this.busy = b;
    this.composer.setBusy(b);
  }

  // focus switches to the focused chat layout, with a short transition
  // (none under prefers-reduced-motion, in the stylesheet).
  focus() {
    if (this.focused) return;
    this.focused = true;
    this.el.classList.add("focused", "entering");
    $("focus").hidden = false;
    $("idle").hidden = $("discover").hidden = true;
    const done = () => this.el.classList.remove("entering");
    $("focus").addEventListener("animationend", done, { once: true });
    setTimeout(done, 400);
  }

  unfocus() {
    this.focused = false;
    this.el.classList.remove("focused", "entering");
    this.el.classList.add("leaving");
    setTimeout(() => this.el.classList.remove("leaving"), 400);
    $("focus").hidden = true;
    $("idle").hidden = $("discover").hidden = false;
  }

  async submit(text) {
    if (this.busy) return;
    const first = !this.conv;
    this.focus();
    if (first) {
      this.transcript.clear();
      $("conv-title").textContent = title(masked(text));
    }
    const files = this.files.take();
    const tv = this.transcript.ask(text, files.map((f) => f.name), this.chips);
    this.turn = tv;
    this.setBusy(true);
    this.composer.live("Working…");
    this.abort = new AbortController();
    let started = false; // an event arrived: the server has the message
    const slow = this.watchSlow(tv);
    try {
      if (first) this.setActive((await api.create()).conversation.id);
      const body = { message: text };
      if (this.dirty) body.context = this.chips.map((c) => ({ entity_type: c.entity_type, id: c.id }));
      if (files.length) body.attachments = Attachments.body(files);
      await api.message(this.conv, body, (e) => { started = true; slow.poke(); tv.handle(e); }, this.abort.signal);
      this.dirty = false;
    } catch (err) {
      if (err.name === "AbortError") return;
      if (!started) {
        // Not sent (refused before the turn began, or the server could
        // not be reached): the message and its files come back, to send
        // again once fixed, or as they are (Retry) when the failure was
        // the server's or the network's. A refused file is named.
        this.files.put(files);
        if (!this.composer.input.value) this.composer.input.value = text;
        this.composer.sync();
        const message = fileProblem(err, files) || err.message;
        tv.fail(message, retryable(err) ? () => {
          tv.el.remove();
          if (this.composer.input.value === text) this.composer.input.value = "";
          this.submit(text);
        } : null);
        this.composer.live(message);
        return;
      }
      tv.fail(err.message);
      this.composer.live(err.message);
      if (err.message === UNAVAILABLE) this.composer.setNotice(UNAVAILABLE);
    } finally {
      slow.stop();
      this.setBusy(false);
      this.syncWaiting();
    }
  }

  // stop ends the running turn: the request is cancelled, which stops
  // the turn on the server (a client that leaves cancels its turn), and
  // the answer says it was stopped.
  stop() {
    if (!this.busy || !this.abort) return;
    this.abort.abort();
    if (this.turn) this.turn.stopped();
    this.setBusy(false);
    this.composer.live("Stopped.");
    this.composer.focus();
  }

  async decide(tv, verb, tool) {
    if (this.busy) return false;
    const card = tv.cards.get(tool.approval_id);
    this.turn = tv;
    // The card's buttons go: the keyboard goes back to the composer.
    this.composer.focus();
    this.setBusy(true);
    tv.reopen();
    this.abort = new AbortController();
    const slow = this.watchSlow(tv);
    try {
      await api.decide(this.conv, tool.approval_id, verb, { tool: tool.name, arguments: tool.arguments },
        (e) => { slow.poke(); tv.handle(e); }, this.abort.signal);
      return true;
    } catch (err) {
      if (err.name === "AbortError") return true;
      if (card && err.code !== "approval_invalid" && await this.stillRunning(tv, card, tool)) return true;
      tv.finish(true);
      if (card) card.problem(err.code === "approval_invalid" ? "This approval has expired or was already used. Nothing ran." : err.message);
      return err.code === "approval_invalid";
    } finally {
      slow.stop();
      this.setBusy(false);
      this.syncWaiting();
    }
  }

  // open shows a saved conversation in the focused layout.
  async open(id, restoring) {
    let view;
    try {
      view = await api.open(id);
    } catch (err) {
      if (restoring && err.status === 404) {
        this.setActive("");
        return this.idle();
      }
      this.focus();
      this.transcript.clear();
      $("turns").append(h("p", { class: "error", role: "alert" }, err.message));
      return;
    }
    if (this.abort) this.abort.abort();
    this.watch.stop();
    this.setActive(id);
    this.focus();
    $("conv-title").textContent = view.conversation.title || "Chat";
    this.composer.live(""); // the transcript says when an approval waits
    this.transcript.load(view);
    this.syncWaiting();
    if (this.transcript.running()) this.watch.start(id);
    this.setChips(view.context || [], false);
    this.dirty = false;
    this.composer.setNotice(view.notice || "");
  }

  // renamed shows a chat's new title where it is open.
  renamed(c) { if (c.id === this.conv) $("conv-title").textContent = c.title; }

  // removed lets go of a deleted chat: it was open, Home goes idle.
  removed(id) {
    if (id !== this.conv) return;
    this.watch.stop();
    if (this.focused) this.close(); else this.setActive("");
  }

  // close clears the Home chat (the conversation stays in Chats) and
  // restores the idle page.
  close() {
    if (this.abort) this.abort.abort();
    this.watch.stop();
    this.setBusy(false);
    this.setActive("");
    this.transcript.clear();
    this.setChips([], false);
    this.dirty = false;
    this.composer.setNotice("");
    this.composer.live("");
    this.syncWaiting();
    this.unfocus();
    this.idle();
    this.composer.focus();
  }

  // idle fills the idle page: suggestions, recent items, recent chats.
  async idle() {
    const sugg = $("suggestions");
    sugg.replaceChildren(...SUGGESTIONS.map((s) => h("li", {}, h("button", {
      type: "button", class: "suggestion", onclick: () => { this.composer.focus(); this.submit(s); },
    }, s))));
    const [items, chats] = await Promise.allSettled([api.search(this.status.team_id, "", 20), api.conversations(5)]);
    const recent = $("recent-items");
    if (items.status === "fulfilled") {
      const list = items.value.groups.find((g) => g.name === "Recent").items;
      recent.replaceChildren(...(list.length ? list.map((it) => h("li", {}, h("button", {
        type: "button", class: "row", onclick: () => { if (!this.chips.some((c) => c.entity_type === it.entity_type && c.id === it.id)) this.setChips([...this.chips, it], true); this.composer.focus(); },
      }, icon(it.entity_type), h("span", { class: "row-text" }, h("span", { class: "row-label" }, it.label),
        h("span", { class: "row-info" }, (it.metadata && it.metadata.info) || "")),
      h("span", { class: "row-action" }, "Add to context")))) : [h("li", { class: "muted" }, "Nothing here yet.")]));
    } else {
      recent.replaceChildren(h("li", { class: "error" }, items.reason.message));
    }
    renderChats($("recent-chats"), chats, (id) => this.open(id));
  }
}

// fileProblem is the sentence for a message refused for one of its
// files ("attachments[1]: …"), naming the file; "" for another refusal.
function fileProblem(err, files) {
  const m = /^attachments\[(\d+)\]: (.*)$/s.exec(err.detail || "");
  const f = m && files[+m[1]];
  if (!f) return "";
  let why = m[2].trim().replace(/\.$/, "");
  if (/^(the data is )?not /.test(why)) why = "it is " + why.replace(/^the data is /, "");
  return `The file “${f.name}” was not sent: ${why}. Remove it, or attach another file, then send again.`;
}

// renderChats lists saved chats by title; choosing one opens it. With
// manage ({rename(c, title), remove(c)}, each resolving when done) every
// chat also has Rename (an inline name field: Enter saves, Esc cancels)
// and Delete.
//
// query, when set, keeps the chats whose title holds it (any case).
// Chats of the same title are told apart by when they started ("30 Nov,
// 14:05"), also in their buttons' names.
export function renderChats(ul, settled, open, manage, query) {
  if (settled.status !== "fulfilled") {
    ul.replaceChildren(h("li", { class: "error" }, settled.reason.message));
    return;
  }
  const all = settled.value.conversations.filter((c) => c.title);
  const q = (query || "").trim().toLowerCase();
  const list = q ? all.filter((c) => c.title.toLowerCase().includes(q)) : all;
  const started = startedLabels(all);
  const row = (c) => {
    const li = h("li", { class: "chat-row" });
    const name = c.title + (started.has(c.id) ? ` (${started.get(c.id)})` : "");
    const info = (started.has(c.id) ? `Started ${started.get(c.id)} · ` : "") + ago(c.updated_at);
    // replaceChildren writes a null as the text "null": only nodes here.
    const show = () => li.replaceChildren(...[h("button", { type: "button", class: "row", onclick: () => open(c.id) },
      h("span", { class: "row-text" }, h("span", { class: "row-label" }, c.title), h("span", { class: "row-info" }, info))),
    manage ? h("span", { class: "chat-actions" },
      h("button", { type: "button", class: "link", "aria-label": "Rename chat: " + name, onclick: edit }, "Rename"),
      h("button", { type: "button", class: "link danger", "aria-label": "Delete chat: " + name, onclick: remove }, "Delete")) : null].filter(Boolean));
    const edit = () => {
      const input = h("input", { type: "text", value: c.title, maxlength: "100", "aria-label": "Chat name", required: true });
      const error = h("p", { class: "error", role: "alert" });
      const form = h("form", { class: "chat-rename" }, input,
        h("button", { type: "submit", class: "primary" }, "Save"),
        h("button", { type: "button", onclick: () => { show(); li.querySelector("[aria-label^='Rename']").focus(); } }, "Cancel"), error);
      form.addEventListener("submit", async (ev) => {
        ev.preventDefault();
        try {
          await manage.rename(c, input.value);
        } catch (err) { error.textContent = err.message; }
      });
      input.addEventListener("keydown", (ev) => {
        if (ev.key === "Escape") { ev.preventDefault(); ev.stopPropagation(); show(); li.querySelector("[aria-label^='Rename']").focus(); }
      });
      li.replaceChildren(form);
      input.select();
    };
    const remove = async () => {
      try { await manage.remove(c); } catch (err) { li.append(h("p", { class: "error", role: "alert" }, err.message)); }
    };
    show();
    return li;
  };
  ul.replaceChildren(...(list.length ? list.map(row) : [h("li", { class: "muted" }, q ? `No chat title has “${query.trim()}”.` : "No chats yet.")]));
}

// startedLabels names when each chat whose title another chat shares
// started: "30 Nov, 14:05", with the seconds when that is not enough.
function startedLabels(chats) {
  const fmt = (c, seconds) => new Date(c.created_at).toLocaleString("en-GB", { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit",
    second: seconds ? "2-digit" : undefined });
  const byTitle = new Map();
  for (const c of chats) byTitle.set(c.title, [...(byTitle.get(c.title) || []), c]);
  const out = new Map();
  for (const twins of byTitle.values()) {
    if (twins.length < 2) continue;
    const minutes = twins.map((c) => fmt(c, false));
    const seconds = new Set(minutes).size < minutes.length;
    const labels = twins.map((c) => fmt(c, seconds));
    // Started in the same second: numbered, oldest first.
    const order = [...twins].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
    twins.forEach((c, i) => {
      const same = twins.filter((_, j) => labels[j] === labels[i]);
      out.set(c.id, same.length > 1 ? `${labels[i]}, ${order.filter((x) => same.includes(x)).indexOf(c) + 1} of ${same.length}` : labels[i]);
    });
  }
  return out;
}
