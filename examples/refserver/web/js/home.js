// Home: the idle page (greeting, suggestions, recent items, recent chats)
// and the focused chat it turns into when a message is sent. Home owns
// the layout; the transcript, composer and components report to it. The
// active conversation is restored after a reload: only its ID is kept, in
// session storage.

import { api, masked, UNAVAILABLE } from "./api.js";
import { $, h, icon } from "./dom.js";
import { ago, greeting, title } from "./format.js";
import { Composer } from "./composer.js";
import { Picker } from "./picker.js";
import { Transcript } from "./transcript.js";
import { Charts } from "./chart-result.js";
import { Attachments } from "./attachments.js";
import { Watch } from "./watch.js";

// SUGGESTIONS are questions the demo model answers; a click sends one.
// None changes anything.
const SUGGESTIONS = ["Show signups by week", "Show signups by country", "Show MRR by month",
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
    try {
      if (first) this.setActive((await api.create()).conversation.id);
      const body = { message: text };
      if (this.dirty) body.context = this.chips.map((c) => ({ entity_type: c.entity_type, id: c.id }));
      if (files.length) body.attachments = Attachments.body(files);
      await api.message(this.conv, body, (e) => { started = true; tv.handle(e); }, this.abort.signal);
      this.dirty = false;
    } catch (err) {
      if (err.name === "AbortError") return;
      if (!started) {
        // Not sent (refused before the turn began, or the server could
        // not be reached): the message and its files come back, to send
        // again as they are (Retry) or once fixed.
        this.files.put(files);
        if (!this.composer.input.value) this.composer.input.value = text;
        this.composer.sync();
        tv.fail(err.message, () => {
          tv.el.remove();
          if (this.composer.input.value === text) this.composer.input.value = "";
          this.submit(text);
        });
        this.composer.live(err.message);
        return;
      }
      tv.fail(err.message);
      this.composer.live(err.message);
      if (err.message === UNAVAILABLE) this.composer.setNotice(UNAVAILABLE);
    } finally {
      this.setBusy(false);
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
    try {
      await api.decide(this.conv, tool.approval_id, verb, { tool: tool.name, arguments: tool.arguments },
        (e) => tv.handle(e), this.abort.signal);
      return true;
    } catch (err) {
      if (err.name === "AbortError") return true;
      if (card && err.code !== "approval_invalid" && await this.stillRunning(tv, card, tool)) return true;
      tv.finish(true);
      if (card) card.problem(err.code === "approval_invalid" ? "This approval has expired or was already used. Nothing ran." : err.message);
      return err.code === "approval_invalid";
    } finally {
      this.setBusy(false);
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

// renderChats lists saved chats by title; choosing one opens it. With
// manage ({rename(c, title), remove(c)}, each resolving when done) every
// chat also has Rename (an inline name field: Enter saves, Esc cancels)
// and Delete.
export function renderChats(ul, settled, open, manage) {
  if (settled.status !== "fulfilled") {
    ul.replaceChildren(h("li", { class: "error" }, settled.reason.message));
    return;
  }
  const list = settled.value.conversations.filter((c) => c.title);
  const row = (c) => {
    const li = h("li", { class: "chat-row" });
    const show = () => li.replaceChildren(h("button", { type: "button", class: "row", onclick: () => open(c.id) },
      h("span", { class: "row-text" }, h("span", { class: "row-label" }, c.title), h("span", { class: "row-info" }, ago(c.updated_at)))),
    manage ? h("span", { class: "chat-actions" },
      h("button", { type: "button", class: "link", "aria-label": "Rename chat: " + c.title, onclick: edit }, "Rename"),
      h("button", { type: "button", class: "link danger", "aria-label": "Delete chat: " + c.title, onclick: remove }, "Delete")) : null);
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
  ul.replaceChildren(...(list.length ? list.map(row) : [h("li", { class: "muted" }, "No chats yet.")]));
}
