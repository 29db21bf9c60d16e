// The work summary of one turn: while Ask works, its steps with their
// state; after the answer, one collapsed "Work completed" section with the
// same stable labels and final states. Built only from the saved tool
// calls the server reports: labels, states and safe error messages, never
// arguments, queries or data.

import { h, icon } from "./dom.js";
import { sentence } from "./api.js";

const stateText = {
  running: "Working",
  completed: "Done",
  failed: "Failed",
  approval_required: "Waiting for your approval",
  rejected: "Rejected, did not run",
  unavailable: "Not available",
  expired: "Approval expired, did not run",
};
const stateIcon = { completed: "check", failed: "alert", unavailable: "alert", rejected: "cross", expired: "cross", approval_required: "clock", running: "clock" };

export class WorkSummary {
  constructor({ onRetry }) {
    this.onRetry = onRetry;
    this.steps = new Map(); // call_id → {label, state, error, retry}
    this.done = false;
    this.el = h("div", { class: "work" });
  }

  // update records a tool event's call (or a saved run). title is the
  // action in the present ("Delete dashboard"), known for a gated call:
  // a step that has not (yet) happened reads so ("Delete dashboard ·
  // Waiting for your approval"); a completed one reads as done
  // ("Deleted dashboard · Done").
  update(call, title) {
    const prev = this.steps.get(call.call_id) || {};
    this.steps.set(call.call_id, {
      label: call.label || prev.label,
      title: title || call.title || prev.title || "",
      state: call.state,
      // The server's safe message, as a sentence for people (no field
      // path, no code).
      error: stepError(call),
      retry: !!call.retry,
    });
    this.render();
  }

  get size() { return this.steps.size; }

  // finish folds the steps into the Work completed section, or, while an
  // approval waits, an open "Waiting for your approval" one.
  finish(waiting) { this.done = true; this.waiting = !!waiting; this.render(); }
  reopen() { this.done = false; this.waiting = false; this.render(); }

  render() {
    if (!this.steps.size) { this.el.replaceChildren(); return; }
    const items = [...this.steps.values()].map((s) => h("li", { class: "step step-" + s.state, "data-state": s.state },
      icon(stateIcon[s.state] || "clock"),
      h("span", { class: "step-label" }, s.state !== "completed" && s.title ? s.title : s.label),
      h("span", { class: "step-state" }, stateText[s.state] || s.state),
      s.error ? h("span", { class: "step-error" }, s.error) : null,
      s.retry && s.state === "failed" && this.onRetry
        ? h("button", { type: "button", class: "link", onclick: () => this.onRetry() }, "Retry") : null));
    if (!this.done) {
      this.el.replaceChildren(h("ol", { class: "steps live" }, items));
      return;
    }
    const failed = [...this.steps.values()].filter((s) => s.state === "failed" || s.state === "unavailable").length;
    const n = this.steps.size;
    const summary = h("summary", {}, this.waiting ? "Waiting for your approval" : "Work completed",
      h("span", { class: "work-count" }, ` · ${n} ${n === 1 ? "step" : "steps"}` + (failed ? `, ${failed} failed` : "")));
    this.el.replaceChildren(h("details", { class: this.waiting ? "work-waiting" : "work-completed", open: this.waiting }, summary,
      h("ol", { class: "steps" }, items)));
  }
}

// stepError is a failed step's reason as a sentence, "" for none.
function stepError(call) {
  const message = call.error_message || (call.error && call.error.message) || "";
  return message ? sentence(call.error_code || (call.error && call.error.code), message) : "";
}
