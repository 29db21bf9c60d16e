// The connection form: add a remote MCP connection (name, Streamable
// HTTP URL, authentication: none, a bearer token or OAuth) or edit one.
// With OAuth the main action of a new connection reads "Save and
// connect". A token is sent once and never shown again; the server only
// says whether one is saved (has_token). A problem the server names by
// field ("url: …") is shown by that field.

import { connections as api } from "./settings-api.js";
import { h } from "./dom.js";
import { capitalize } from "./format.js";

export const authLabel = { none: "No authentication", bearer: "Bearer token", oauth: "OAuth" };

const FIELDS = { name: "cf-name", url: "cf-url", token: "cf-token", auth: "cf-auth-none" };

export class ConnectionForm {
  // c is the connection to edit, or null to add one. onSaved(connection,
  // {created, reconnect, start}) runs after a successful save: reconnect
  // says the URL or the credentials changed, so the tools should be
  // listed (or OAuth started) again; start is the answer of a new OAuth
  // connection's save and connect (its authorization_url, or the error
  // that kept the sign-in from starting).
  constructor(c, { onSaved, onCancel }) {
    this.c = c;
    this.onSaved = onSaved;
    const editing = !!c;
    this.name = h("input", { id: "cf-name", maxlength: 64, required: true, autocomplete: "off" });
    this.url = h("input", { id: "cf-url", type: "url", inputmode: "url", maxlength: 2048, required: true, autocomplete: "off",
      spellcheck: "false", placeholder: "https://mcp.example.com/mcp", "aria-describedby": "cf-url-hint" });
    this.token = h("input", { id: "cf-token", type: "password", autocomplete: "off", spellcheck: "false", maxlength: 4096,
      "aria-describedby": "cf-token-hint" });
    this.name.value = editing ? c.name : "";
    this.url.value = editing ? c.url : "";
    const auth = editing ? c.auth : "bearer";
    const radio = (value) => h("label", { class: "radio" },
      h("input", { type: "radio", name: "cf-auth", id: "cf-auth-" + value, value, checked: value === auth }), " ", authLabel[value]);
    this.tokenBox = h("div", { class: "field" }, h("label", { for: "cf-token" }, "Token"), this.token,
      h("p", { id: "cf-token-hint", class: "hint" }, editing && c.has_token
        ? "A token is saved. Leave this empty to keep it; a new one replaces it."
        : "Sent once and sealed on the server; it is never shown again."));
    this.oauthNote = h("p", { class: "hint", id: "cf-oauth-hint" },
      "After saving, you sign in to the server with OAuth; its tools are listed once the sign-in succeeds.");
    this.error = h("p", { class: "error", role: "alert" });
    this.submit = h("button", { type: "submit", class: "primary" });
    const cancel = h("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => onCancel());
    this.el = h("form", { class: "conn-form", novalidate: true, "aria-labelledby": "cf-title" },
      h("h2", { id: "cf-title" }, editing ? "Edit connection" : "Add a connection"),
      h("div", { class: "field" }, h("label", { for: "cf-name" }, "Name"), this.name),
      h("div", { class: "field" }, h("label", { for: "cf-url" }, "Server URL"), this.url,
        h("p", { id: "cf-url-hint", class: "hint" }, "The server's Streamable HTTP endpoint, http or https.")),
      h("fieldset", { class: "field" }, h("legend", {}, "Authentication"),
        h("div", { class: "radios" }, radio("none"), radio("bearer"), radio("oauth"))),
      this.tokenBox, this.oauthNote, this.error,
      h("div", { class: "actions" }, this.submit, cancel));
    this.el.addEventListener("change", (ev) => { if (ev.target.name === "cf-auth") this.sync(); });
    this.el.addEventListener("submit", (ev) => { ev.preventDefault(); this.save(); });
    this.sync();
  }

  auth() { return this.el.querySelector('input[name="cf-auth"]:checked').value; }

  // sync shows the token field for bearer auth and names the main action.
  sync() {
    const auth = this.auth();
    this.tokenBox.hidden = auth !== "bearer";
    this.oauthNote.hidden = auth !== "oauth";
    this.submit.textContent = this.c ? "Save changes" : auth === "oauth" ? "Save and connect" : "Add connection";
  }

  focus() { this.name.focus(); }

  clear() {
    this.error.textContent = "";
    for (const el of this.el.querySelectorAll("[aria-invalid]")) {
      el.removeAttribute("aria-invalid");
      el.setAttribute("aria-describedby", el.getAttribute("aria-describedby").replace(/ ?cf-field-error/, ""));
    }
    const old = this.el.querySelector("#cf-field-error");
    if (old) old.remove();
  }

  // invalid puts text by the field it is about and focuses that field.
  invalid(field, text) {
    const input = this.el.querySelector("#" + FIELDS[field]);
    if (!input) { this.error.textContent = text; return; }
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " cf-field-error").trim());
    input.closest(".field").append(h("p", { id: "cf-field-error", class: "error field-error", role: "alert" }, text));
    input.focus();
  }

  async save() {
    this.clear();
    const auth = this.auth();
    const name = this.name.value.trim();
    const url = this.url.value.trim();
    const token = this.token.value.trim();
    if (!name) return this.invalid("name", "Give the connection a name.");
    if (!url) return this.invalid("url", "Enter the server's URL.");
    if (auth === "bearer" && !token && !(this.c && this.c.has_token)) return this.invalid("token", "Enter the server's bearer token.");
    let body;
    if (this.c) {
      body = {};
      if (name !== this.c.name) body.name = name;
      if (url !== this.c.url) body.url = url;
      if (auth !== this.c.auth) body.auth = auth;
      if (auth === "bearer" && token) body.token = token;
      if (auth !== "bearer" && this.c.has_token) body.token = ""; // only bearer auth keeps a token
    } else {
      body = { name, url, auth };
      if (auth === "bearer") body.token = token;
    }
    this.submit.disabled = true;
    try {
      let connection = this.c;
      let start = null;
      if (!this.c && auth === "oauth") {
        start = await api.connect({ name, url });
        connection = start.connection;
      } else if (!this.c) connection = (await api.create(body)).connection;
      else if (Object.keys(body).length) connection = (await api.update(this.c.id, body)).connection;
      this.token.value = "";
      const reconnect = !this.c || "url" in body || "auth" in body || "token" in body;
      await this.onSaved(connection, { created: !this.c, reconnect, start });
    } catch (err) {
      const m = /^(name|url|token|auth): (.*)$/s.exec(err.detail || "");
      if (m && err.code === "invalid_argument") this.invalid(m[1], capitalize(m[2].trim()).replace(/([^.!?])$/, "$1."));
      else this.error.textContent = err.message;
    } finally {
      this.submit.disabled = false;
    }
  }
}
