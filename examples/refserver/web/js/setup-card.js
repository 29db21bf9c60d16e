// The connection setup card: what list_connections found for a question
// whose data is not connected (a typed chat result, not quick replies).
// It says which access is missing, then one row per option, in the
// server's order: a connection Ask can use now, a native source to set
// up ("Set up connection", the host's form in a new tab), a verified MCP
// provider ("Connect PostHog": save and connect, then the provider's
// sign-in), a manual MCP setup (the MCP connection form in a new tab),
// or why not (ask an admin, unsupported). After a setup was opened,
// "I added the connection" sends a normal message so Ask checks again;
// it grants nothing. "Continue request" appears once a connection is
// ready, and only the user chooses it: Ask checks again and continues
// the question the card was shown for. Only the conversation's newest
// card acts: an inert one (the server's "inert", or settled here once a
// newer card came or the request continued) shows its options without
// buttons.

import { sentence } from "./api.js";
import { connections } from "./settings-api.js";
import { h, icon, newTab } from "./dom.js";

const sheet = h("link", { rel: "stylesheet", href: "/web/setup.css" });
document.head.append(sheet);

export function setupOf(result) {
  return result && result.type === "connection_setup" && Array.isArray(result.options) ? result : null;
}

export class SetupCard {
  // setup is the result; deps: conversation() the conversation's ID,
  // say(text) sends a chat message, explained: the answer above already
  // said what is missing (else the card says it).
  constructor(setup, deps) {
    this.setup = setup;
    this.deps = deps;
    this.opened = false;
    this.el = h("section", { class: "setup-card", "aria-label": "Connection setup" });
    this.render();
  }

  // settle makes the card inert: a newer card, or the continued
  // request, took over.
  settle() {
    if (this.setup.inert) return;
    this.setup = { ...this.setup, inert: true };
    this.render();
  }

  render() {
    const s = this.setup;
    const ready = !s.needs_setup;
    this.status = h("p", { class: "setup-status", role: "status" });
    const rows = s.options.map((o) => this.row(o));
    const after = [];
    if (s.inert) {
      after.push(h("p", { class: "setup-inert" }, ready ? "Connected: the request continued with it." : "Checked again: see the newer card."));
    } else if (ready) {
      after.push(h("button", { type: "button", class: "primary", onclick: () => this.deps.say("Continue request") }, "Continue request"));
    } else if (this.opened) {
      after.push(h("button", { type: "button", onclick: () => this.deps.say("I added the connection") }, "I added the connection"));
    }
    this.el.replaceChildren(...[
      h("p", { class: "setup-head" }, icon("connection"), " ",
        h("strong", {}, ready ? "Connection ready" : "Connection needed"),
        s.provider ? h("span", { class: "setup-provider" }, " · " + s.provider) : null),
      !ready && s.missing && !this.deps.explained ? h("p", { class: "setup-missing" }, s.missing) : null,
      h("ul", { class: "setup-options" }, rows),
      after.length ? h("div", { class: "setup-after" }, after) : null,
      this.status].filter(Boolean));
  }

  row(o) {
    const name = o.provider || "this source";
    let action = null;
    let kind = "";
    switch (o.state) {
      case "connected":
        kind = "Connected";
        action = h("span", { class: "badge state-saved" }, o.connection_name || name);
        break;
      case "native_setup":
        kind = "Connects directly, without MCP";
        action = h("button", { type: "button", class: "primary", onclick: () => this.open("/web/entity.html?type=" + encodeURIComponent(o.source_type || "")) },
          "Set up connection");
        break;
      case "mcp_oauth_setup":
        if (o.connection_id) {
          // Connected, with no tool allowed yet: the step left is on the
          // connection's page (the bar below brings the chat back).
          kind = "Connected · no tool allowed yet";
          action = h("a", { class: "button primary", href: "#/connections/" + encodeURIComponent(o.connection_id) }, "Allow a tool");
          break;
        }
        kind = "Official MCP server · sign in with " + name;
        action = h("button", { type: "button", class: "primary", onclick: (ev) => this.connect(o, ev.currentTarget) }, "Connect " + name);
        break;
      case "manual_mcp_setup":
        kind = "No verified setup · MCP server by its URL";
        action = h("button", { type: "button", onclick: () => this.open("/#/connections/new?name=" + encodeURIComponent(o.provider || "")) },
          "Set up connection");
        break;
      case "admin_required":
        kind = "Needs a team owner or admin";
        break;
      default:
        kind = "Not available here";
    }
    return h("li", { class: "setup-option setup-" + o.state },
      h("div", { class: "setup-text" },
        h("span", { class: "setup-name" }, o.connection_name || name),
        h("span", { class: "setup-kind" }, kind),
        h("span", { class: "setup-message" }, o.message),
        o.docs ? h("span", { class: "setup-docs" }, newTab(o.docs, name + " setup guide")) : null),
      this.setup.inert && o.state !== "connected" ? null : action);
  }

  // open shows a setup form in a new tab, so the chat stays here; the
  // card then offers "I added the connection".
  open(href) {
    window.open(href, "_blank", "noopener");
    this.opened = true;
    this.render();
    this.status.textContent = "The setup opened in a new tab. Come back here when it is done.";
  }

  // connect saves the connection (or reuses this conversation's) and
  // starts the provider's sign-in in one request, then goes there. A
  // failed start keeps the saved connection: Try again starts it again.
  async connect(o, button) {
    button.disabled = true;
    this.status.textContent = "Connecting " + o.provider + "…";
    try {
      const conv = this.deps.conversation();
      const doc = await connections.connect({ provider: o.provider, conversation_id: conv });
      if (doc.authorization_url) {
        this.status.textContent = "Opening the " + o.provider + " sign-in…";
        window.location.assign(doc.authorization_url);
        return;
      }
      if (doc.error) {
        this.retry(doc.connection.id, o, sentence(doc.error.code, doc.error.message));
        return;
      }
      // Signed in already: the step left is allowing a tool.
      this.status.replaceChildren(o.provider + " is connected, but Ask may use none of its tools until you allow one. ",
        h("a", { href: "#/connections/" + encodeURIComponent(doc.connection.id) }, "Allow a tool on its page"), ".");
    } catch (err) {
      this.status.textContent = err.message;
    }
    button.disabled = false;
  }

  retry(id, o, message) {
    this.status.replaceChildren(message + " The connection is saved. ",
      h("button", { type: "button", class: "link", onclick: async () => {
        this.status.textContent = "Connecting " + o.provider + "…";
        try {
          const doc = await connections.startOAuth(id, this.deps.conversation());
          window.location.assign(doc.authorization_url);
        } catch (err) {
          this.retry(id, o, err.message);
        }
      } }, "Try again"));
  }
}
