// The composer: selected context as chips, the message, Add context at
// the bottom left, the live status and Send at the bottom right. Enter
// sends, Shift+Enter starts a new line; an empty message is never sent,
// and Send is disabled while a turn runs.

import { $, h } from "./dom.js";

export const MAX_CONTEXT = 10;

export class Composer {
  constructor({ onSubmit, onAddContext, onRemove }) {
    this.form = $("composer");
    this.input = $("message");
    this.send = $("send");
    this.add = $("add-context");
    this.chipList = $("chips");
    this.notice = $("notice");
    this.activity = $("activity");
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
    });
    this.input.addEventListener("input", () => this.sync());
    this.add.addEventListener("click", () => onAddContext());
    this.sync();
  }

  submit(onSubmit) {
    const text = this.input.value.trim();
    if (!text || this.busy || this.blocked) return;
    this.input.value = "";
    this.sync();
    this.input.focus();
    onSubmit(text);
  }

  sync() {
    this.send.disabled = this.busy || !!this.blocked || !this.input.value.trim();
    this.add.disabled = !!this.blocked || this.chips().length >= MAX_CONTEXT;
  }

  setBusy(busy) {
    this.busy = busy;
    this.form.classList.toggle("busy", busy);
    this.form.setAttribute("aria-busy", busy ? "true" : "false");
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
