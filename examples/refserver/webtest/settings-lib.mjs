// Helpers of the connection page's and the MCP settings' browser tests:
// the remote MCP servers TestBrowser passes in, the chat API as a demo
// user (to set up state the test is not about), and the layout checks.

import { base, assert, open as openPage } from "./lib.mjs";

// The demo's analytics MCP server (the credentials file's analytics_mcp)
// and the fixture servers of webfixture_test.go.
export const analytics = { url: process.env.ASKBI_ANALYTICS_MCP_URL, token: process.env.ASKBI_ANALYTICS_MCP_TOKEN };
export const fixture = { base: process.env.ASKBI_FIXTURE_MCP, token: process.env.ASKBI_FIXTURE_MCP_TOKEN };
if (!analytics.url || !fixture.base) throw new Error("run these through TestBrowser: it passes the MCP servers' URLs");

// open is lib's, with a shorter wait: a broken rule fails in seconds.
export async function open(options) {
  const page = await openPage(options);
  page.setDefaultTimeout(8000);
  return page;
}

// session returns a demo user's session token.
export async function session(name) {
  const res = await fetch(base + "/demo/sign-in", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name }) });
  return (await res.json()).session_token;
}

// as calls the chat API as a demo user; it fails the test on an error.
export async function as(name, method, path, body) {
  const res = await fetch(base + path, {
    method, headers: { Authorization: "Bearer " + await session(name), "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return res.status === 204 ? {} : res.json();
}

// connection creates and discovers a connection as alice.
export async function connection(name, url, token) {
  const { connection: c } = await as("alice", "POST", "/ai/connections", { name, url, token });
  await as("alice", "POST", `/ai/connections/${c.id}/discover`);
  return c;
}

// overflow is how far right the page reaches: every scroll container and
// element must end inside the viewport (hidden and visually hidden ones
// aside, the text inside a text field, which scrolls in its field, and
// a title shortened with an ellipsis).
export function overflow(page) {
  return page.evaluate(() => {
    let right = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
    for (const el of document.querySelectorAll("body *")) {
      if (el.closest(".vh, dialog:not([open]), .switch-input") || !el.getClientRects().length) continue;
      if (getComputedStyle(el).clipPath === "inset(50%)") continue; // visually hidden, for screen readers
      right = Math.max(right, el.getBoundingClientRect().right);
      const cut = getComputedStyle(el).textOverflow === "ellipsis"; // shortened on purpose, with "…"
      if (!cut && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible" && !el.matches("input, textarea")) right = Math.max(right, innerWidth + el.scrollWidth - el.clientWidth);
    }
    return Math.round(right);
  });
}

// unlabelled lists the visible controls of the open page that have no
// accessible name (a label, aria-label or aria-labelledby, or text).
export function unlabelled(page) {
  return page.evaluate(() => [...document.querySelectorAll("main:not([hidden]) :is(input, select, textarea, button, a[href])")]
    .filter((el) => el.type !== "hidden" && (el.getClientRects().length || el.classList.contains("switch-input")))
    .filter((el) => !((el.labels && el.labels.length && [...el.labels].some((l) => l.textContent.trim())) ||
      el.getAttribute("aria-label") || el.getAttribute("aria-labelledby") || (el.tagName !== "INPUT" && el.textContent.trim())))
    .map((el) => el.outerHTML.slice(0, 80)));
}
