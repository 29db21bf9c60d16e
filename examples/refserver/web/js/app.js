// The askbi reference server's page: the product's chat as a thin client
// of the chat API (/ai/), with the demo sign-in (/demo/) standing in for
// a host's login. The session token is kept in session storage and never
// shown.

import { api, setToken, onUnauthenticated } from "./api.js";
import { $, h } from "./dom.js";
import { roleLabel } from "./format.js";
import { Home, renderChats } from "./home.js";
import { MemoryPage } from "./memory.js";
import { ConnectionsPage } from "./connections.js";
import { McpSettingsPage } from "./mcp-settings.js";
import { UsagePage } from "./usage.js";
import { confirm } from "./memory.js";

const SESSION = "askbi.session";

let home = null;
let pages = {}; // the pages beside Home, by the first part of the route

function saved() {
  try { return JSON.parse(sessionStorage.getItem(SESSION) || "null"); } catch { return null; }
}

async function signOut() {
  try { await api.signOut(); } catch { /* the cookie goes with the server; the page signs out regardless */ }
  sessionStorage.clear();
  setToken("");
  history.replaceState(null, "", "/");
  location.reload();
}

onUnauthenticated(() => {
  sessionStorage.clear();
  sessionStorage.setItem("askbi.signin-message", "Your session has ended. Sign in again.");
  location.reload();
});

async function showSignIn() {
  $("signin").hidden = false;
  $("signin-error").textContent = sessionStorage.getItem("askbi.signin-message") || "";
  sessionStorage.removeItem("askbi.signin-message");
  const begin = async (token, label) => {
    setToken(token);
    sessionStorage.setItem(SESSION, JSON.stringify({ token, label }));
    $("signin").hidden = true;
    await start({ token, label });
  };
  try {
    const { principals } = await api.demoUsers();
    const box = $("demo-users");
    box.replaceChildren(...principals.map((p, i) => h("label", { class: "demo-user" },
      h("input", { type: "radio", name: "demo-user", value: p.name, checked: i === 0 }),
      h("span", { class: "demo-text" }, h("span", { class: "demo-name" }, p.label), h("span", { class: "demo-desc" }, p.description)))));
    $("demo-form").hidden = false;
    $("demo-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const name = new FormData(ev.target).get("demo-user");
      try {
        const doc = await api.demoSignIn(name);
        await begin(doc.session_token, doc.principal.label);
      } catch (err) { $("signin-error").textContent = err.message; }
    });
  } catch {
    $("token-details").open = true; // no demo sign-in here: a token is the way in
  }
  $("token-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = $("token-input").value.trim();
    $("token-input").value = "";
    if (!token) return;
    await begin(token, "");
  });
}

async function start(session) {
  setToken(session.token);
  let status;
  try {
    status = await api.status();
  } catch (err) {
    sessionStorage.removeItem(SESSION);
    $("signin").hidden = false;
    $("signin-error").textContent = err.message;
    return;
  }
  $("nav").hidden = $("who").hidden = false;
  $("who-label").textContent = (session.label || "Signed in") + " · " + roleLabel(status.role);
  $("sign-out").addEventListener("click", () => signOut());
  home = new Home(status, session.label);
  pages = { memory: new MemoryPage(), connections: new ConnectionsPage(status, { setActive: (id) => home.setActive(id) }), mcp: new McpSettingsPage(),
    usage: new UsagePage(status) };
  $("open-chats").addEventListener("click", openChats);
  $("new-chat").addEventListener("click", newChat);
  $("convbar-open").addEventListener("click", () => { location.hash = "#/"; });
  $("convbar-close").addEventListener("click", () => { home.setActive(""); $("convbar").hidden = true; });
  window.addEventListener("hashchange", route);
  await route();
  if (where().page === "home") home.composer.focus();
}

// where reads the route: "#/connections/conn_x?…" is page "connections",
// rest "conn_x".
function where() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("?")[0].split("/");
  return { page: pages[name] ? name : "home", rest: rest.map(decodeURIComponent).join("/") };
}

// route shows the page the address names: Home, Memory, Connections,
// MCP or Usage.
async function route() {
  const { page, rest } = where();
  for (const name of ["home", ...Object.keys(pages)]) {
    $("nav-" + name).toggleAttribute("aria-current", false);
    if (name !== page && pages[name]) pages[name].hide();
  }
  $("nav-" + page).setAttribute("aria-current", "page");
  if (page === "home") {
    $("convbar").hidden = true;
    await home.show();
  } else {
    home.hide();
    await pages[page].show(rest);
    await conversationBar();
  }
}

// conversationBar offers the active conversation while it is not on
// screen.
async function conversationBar() {
  const bar = $("convbar");
  bar.hidden = true;
  if (!home.conv) return;
  try {
    const view = await api.open(home.conv);
    $("convbar-open").textContent = "Continue: " + (view.conversation.title || "your chat");
    bar.hidden = false;
  } catch {
    home.setActive("");
  }
}

// openChats lists the saved chats: search them by title, open, rename
// or delete one (deleting asks first). The close button sits at the top;
// Esc or a tap outside closes the list too.
async function openChats() {
  const d = $("chats");
  const ul = $("chats-list");
  ul.replaceChildren(h("li", { class: "muted" }, "Loading…"));
  if (!d.open) {
    $("chats-query").value = "";
    d.showModal();
  }
  const [settled] = await Promise.allSettled([api.conversations(50)]);
  shownChats = settled;
  showChats();
}

// shownChats is the list the Chats dialog shows, searched as typed.
let shownChats = null;

function showChats() {
  const d = $("chats");
  const ul = $("chats-list");
  renderChats(ul, shownChats, async (id) => {
    d.close();
    if (where().page !== "home") location.hash = "#/";
    await home.open(id);
    home.composer.focus();
  }, {
    rename: async (c, title) => {
      const { conversation } = await api.rename(c.id, title);
      home.renamed(conversation);
      await openChats();
      $("chats-status").textContent = `Renamed to “${conversation.title}”.`;
      ul.querySelector(`[aria-label^="Rename chat: ${CSS.escape(conversation.title)}"]`)?.focus();
    },
    remove: async (c) => {
      if (!await confirm("Delete this chat?", `“${c.title}” and its history are deleted. Charts it saved stay where they are.`, "Delete")) return;
      await api.remove(c.id);
      home.removed(c.id);
      await openChats();
      $("chats-status").textContent = `Deleted “${c.title}”.`;
      (ul.querySelector("button") || $("chats-query")).focus();
    },
  }, $("chats-query").value);
}

$("chats-query").addEventListener("input", () => { if (shownChats) showChats(); });
$("chats-close").addEventListener("click", () => $("chats").close());
// A tap on the backdrop (outside the dialog's box) closes it.
$("chats").addEventListener("click", (ev) => {
  const d = $("chats");
  if (ev.target !== d) return;
  const r = d.getBoundingClientRect();
  if (ev.clientX < r.left || ev.clientX > r.right || ev.clientY < r.top || ev.clientY > r.bottom) d.close();
});

// newChat starts an empty chat on Home, from any page.
async function newChat() {
  if (where().page !== "home") location.hash = "#/";
  home.close();
}

// The skip link moves the keyboard past the top bar: to the composer on
// Home, to the heading of another page, to the sign-in form. It is a
// link for its role and look; the hash stays the route's.
$("skip-link").addEventListener("click", (ev) => {
  ev.preventDefault();
  const main = document.querySelector("main:not([hidden])");
  if (!main) return;
  let target = main.id === "home" ? $("message") : main.querySelector("input:not([type=hidden]), h1");
  if (target.tagName === "H1" && !target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
  target.focus();
});

const s = saved();
if (s && s.token) start(s); else showSignIn();
