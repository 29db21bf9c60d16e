// Memory settings: the user's explicit memories in this team, with their
// text and last update; add, edit, delete and delete all. Deleting asks
// first.

import { api } from "./api.js";
import { $, h, icon } from "./dom.js";
import { ago } from "./format.js";

// confirm asks a yes/no question in the confirmation dialog; it resolves
// true when the person confirms.
export function confirm(titleText, text, action) {
  const d = $("confirm");
  $("confirm-title").textContent = titleText;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = action;
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

export class MemoryPage {
  constructor() {
    this.el = $("memory-page");
    this.list = $("memory-list");
    this.error = $("memory-error");
    this.status = $("memory-status");
    $("memory-add").addEventListener("submit", (ev) => { ev.preventDefault(); this.add(); });
    $("memory-clear").addEventListener("click", () => this.clear());
  }

  async show() {
    this.el.hidden = false;
    await this.load();
  }

  hide() { this.el.hidden = true; }

  say(text) { this.status.textContent = text; }

  async load() {
    this.error.textContent = "";
    let items;
    try {
      items = (await api.memories()).items;
    } catch (err) {
      this.error.textContent = err.message;
      return;
    }
    $("memory-empty").hidden = items.length > 0;
    $("memory-clear").hidden = items.length === 0;
    this.list.replaceChildren(...items.map((m) => this.item(m)));
  }

  item(m) {
    const text = h("p", { class: "memory-text" }, m.text);
    const when = h("time", { datetime: m.updated_at, class: "muted" }, "Updated " + ago(m.updated_at));
    const edit = h("button", { type: "button", class: "icon-button edit", "aria-label": "Edit memory: " + m.text }, icon("edit"));
    const del = h("button", { type: "button", class: "icon-button delete", "aria-label": "Delete memory: " + m.text }, icon("trash"));
    const li = h("li", { class: "memory-item" }, h("div", { class: "memory-body" }, text, when), h("div", { class: "memory-actions" }, edit, del));
    edit.addEventListener("click", () => this.edit(li, m));
    del.addEventListener("click", async () => {
      if (!await confirm("Delete this memory?", `“${m.text}” will be removed. Ask stops using it from your next message. This cannot be undone.`, "Delete")) {
        del.focus();
        return;
      }
      try {
        await api.deleteMemory(m.id);
        this.say("Memory deleted.");
        await this.load();
        $("memory-new").focus();
      } catch (err) { this.error.textContent = err.message; }
    });
    return li;
  }

  edit(li, m) {
    const id = "memory-edit-" + m.id;
    const area = h("textarea", { id, rows: 2, maxlength: 500 });
    area.value = m.text;
    const save = h("button", { type: "submit", class: "primary" }, "Save");
    const cancel = h("button", { type: "button" }, "Cancel");
    const form = h("form", { class: "memory-edit" }, h("label", { for: id }, "Edit memory"), area, h("div", { class: "actions" }, save, cancel));
    cancel.addEventListener("click", () => { li.replaceWith(this.item(m)); });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const text = area.value.trim();
      if (!text) { this.error.textContent = "A memory needs some text."; area.focus(); return; }
      try {
        await api.editMemory(m.id, text);
        this.say("Memory saved.");
        await this.load();
      } catch (err) { this.error.textContent = err.message; }
    });
    li.replaceChildren(form);
    area.focus();
  }

  async add() {
    const input = $("memory-new");
    const text = input.value.trim();
    this.error.textContent = "";
    if (!text) { this.error.textContent = "Write what Ask should remember first."; input.focus(); return; }
    try {
      await api.addMemory(text);
      input.value = "";
      this.say("Saved to memory.");
      await this.load();
    } catch (err) { this.error.textContent = err.message; }
  }

  async clear() {
    if (!await confirm("Delete all memories?", "Every memory you saved in this team will be removed. This cannot be undone.", "Delete all")) {
      $("memory-clear").focus();
      return;
    }
    try {
      await api.deleteAllMemory();
      this.say("All memories deleted.");
      await this.load();
      $("memory-new").focus();
    } catch (err) { this.error.textContent = err.message; }
  }
}
