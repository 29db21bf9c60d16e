// The composer: selected context as chips, the message, Add context at
// the bottom left, the live status and Send at the bottom right. Enter
// sends, Shift+Enter starts a new line; an empty message or one over the
// server's limit is never sent (a counter warns as the limit nears).
// While a turn runs, Stop (or Esc) takes Send's place.

import { $, h } from "./dom.js";

export const MAX_CONTEXT = 10;

export class Composer {
  // max is the longest message the server takes (GET /ai/status).
  constructor({ onSubmit, onAddContext, onRemove, onStop, max }) {
    this.form = $("composer");
    this.input = $("message");
    this.send = $("send");
    this.add = $("add-context");
    this.chipList = $("chips");
    this.notice = $("notice");
    this.activity = $("activity");
    this.stop = $("stop");
    this.counter = $("counter");
    this.max = max || 4000;
    this.busy = false;
    this.blocked = "";
    this.onRemove = onRemove;
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit(onSubmit);
    });
    this.input.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.submit(onSubmit);
      }
      if (ev.key === "Escape" && this.busy) {
        ev.preventDefault();
        onStop();
      }
    });
    this.stop.addEventListener("click", () => onStop());
    this.input.addEventListener("input", () => this.sync());
    this.add.addEventListener("click", () => onAddContext());
    this.sync();
  }

  submit(onSubmit) {
    const text = this.input.value.trim();
    if (!text || this.busy || this.blocked || this.over()) return;
    this.input.value = "";
    this.sync();
    this.input.focus();
    onSubmit(text);
  }

  // over is how many characters the message has beyond the limit.
  over() { return Math.max(0, [...this.input.value].length - this.max); }

  sync() {
    const n = [...this.input.value].length;
    const left = this.max - n;
    const fmt = (x) => x.toLocaleString("en");
    this.counter.textContent = left < 0 ? `${fmt(-left)} over the ${fmt(this.max)}-character limit`
      : left <= Math.max(100, this.max / 10) ? `${fmt(left)} characters left` : "";
    this.counter.classList.toggle("over", left < 0);
    this.send.disabled = this.busy || !!this.blocked || !this.input.value.trim() || left < 0;
    this.add.disabled = !!this.blocked || this.chips().length >= MAX_CONTEXT;
  }

  setBusy(busy) {
    this.busy = busy;
    this.form.classList.toggle("busy", busy);
    this.form.setAttribute("aria-busy", busy ? "true" : "false");
    const had = document.activeElement === (busy ? this.send : this.stop);
    this.send.hidden = busy;
    this.stop.hidden = !busy;
    if (had) (busy ? this.stop : this.input).focus();
    this.sync();
  }

  // block disables the composer with a reason (the assistant is not
  // available), or enables it again with "".
  block(reason) {
    this.blocked = reason;
    this.input.disabled = !!reason;
    this.input.placeholder = reason || "Ask about your data";
    this.sync();
  }

  live(text) { this.activity.textContent = text; }

  chips() { return [...this.chipList.querySelectorAll(".chip")].map((li) => li.item); }

  // setChips shows the selected context items.
  setChips(items) {
    this.chipList.replaceChildren(...items.map((it) => {
      const remove = h("button", { type: "button", class: "chip-remove", "aria-label": "Remove " + it.label }, "×");
      const li = h("li", { class: "chip" }, h("span", {}, it.label), remove);
      li.item = it;
      remove.addEventListener("click", () => {
        const at = [...this.chipList.children].indexOf(li);
        this.onRemove(it); // shows the chips again
        const left = this.chipList.querySelectorAll(".chip-remove");
        (left[Math.min(at, left.length - 1)] || this.add).focus();
      });
      return li;
    }));
    this.sync();
  }

  setNotice(text) { this.notice.textContent = text || ""; }

  focus() { this.input.focus(); }
}
