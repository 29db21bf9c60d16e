// The account MCP settings (seed 000, "OAuth and teams"), with a client
// connected the way a real one connects: dynamic registration and PKCE
// from this script, the consent page in the browser (signed in on
// /signin), the code exchanged for tokens at /oauth/token. And both new
// pages at 375 px, by keyboard, under reduced motion.

import { test, before, after } from "node:test";
import crypto from "node:crypto";
import { launch, close, done, shot, signIn, base, phone, assert } from "./lib.mjs";
import { session, overflow, unlabelled, open } from "./settings-lib.mjs";

before(launch);
after(close);

const REDIRECT = "http://127.0.0.1:9/callback";

// mcpStatus is the HTTP status of a tools/list on /mcp with token.
async function mcpStatus(token) {
  const res = await fetch(base + "/mcp", {
    method: "POST",
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });
  await res.arrayBuffer();
  return res.status;
}

// connectClient registers a public client named name, sends the browser
// through consent as the demo user (signing in first unless the browser
// is signed in), and exchanges the code: it returns the access token.
async function connectClient(page, name, user) {
  const reg = await fetch(base + "/oauth/register", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ client_name: name, redirect_uris: [REDIRECT], token_endpoint_auth_method: "none" }),
  });
  assert.equal(reg.status, 201);
  const { client_id } = await reg.json();
  const verifier = crypto.randomBytes(32).toString("base64url");
  const challenge = crypto.createHash("sha256").update(verifier).digest("base64url");
  const state = crypto.randomBytes(12).toString("base64url");
  const q = new URLSearchParams({ response_type: "code", client_id, redirect_uri: REDIRECT, state, code_challenge: challenge,
    code_challenge_method: "S256", resource: base + "/mcp", scope: "data:read data:refresh charts:preview datasets:write" });
  let callback;
  await page.context().route("http://127.0.0.1:9/**", (route) => {
    callback = new URL(route.request().url());
    return route.fulfill({ status: 200, contentType: "text/plain", body: "back in the client" });
  });
  await page.goto(base + "/oauth/authorize?" + q);
  // A browser signed in to the product (its session cookie) goes straight
  // to consent; any other signs in on the product's sign-in page first.
  if (new URL(page.url()).pathname === "/signin") {
    await page.getByLabel("Session token").fill(await session(user));
    await page.getByRole("button", { name: "Sign in with token" }).click();
  }
  await page.getByRole("button", { name: "Allow" }).waitFor();
  assert.match(await page.locator("body").innerText(), new RegExp(name + "[\\s\\S]*unverified", "i"), "the consent page names the app, unverified");
  await shot(page, "mcp-consent");
  await page.getByRole("button", { name: "Allow" }).click();
  await page.waitForURL(/127\.0\.0\.1:9\/callback/);
  assert.equal(callback.searchParams.get("state"), state);
  const tok = await fetch(base + "/oauth/token", {
    method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code: callback.searchParams.get("code"), redirect_uri: REDIRECT,
      code_verifier: verifier, client_id, resource: base + "/mcp" }),
  });
  assert.equal(tok.status, 200);
  return (await tok.json()).access_token;
}

async function openMcp(page) {
  await page.getByRole("link", { name: "MCP", exact: true }).click();
  await page.locator("#mcp-setup h3").first().waitFor();
}

test("MCP settings: the server URL with a copy button, the setup steps, and an empty state", async () => {
  const page = await open();
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  await signIn(page, "bob");
  await openMcp(page);
  assert.equal(await page.getByLabel("MCP server URL").inputValue(), base + "/mcp");
  const settings = await (await fetch(base + "/account/mcp", { headers: { Authorization: "Bearer " + await session("bob") } })).json();
  assert.deepEqual(await page.locator("#mcp-setup h3").allInnerTexts(), ["Claude", "ChatGPT", "Cursor", "MCP Inspector"]);
  for (const [i, s] of settings.setup.entries()) {
    assert.deepEqual(await page.locator("#mcp-setup section").nth(i).locator("li").allInnerTexts(), s.steps, s.client + "'s steps as the API gives them");
  }
  await page.getByRole("button", { name: "Copy" }).click();
  await page.locator("#mcp-status", { hasText: "The server URL is copied." }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), base + "/mcp");
  assert.ok(await page.locator("#mcp-empty").isVisible(), "no connected clients: an empty state");
  assert.equal(await page.locator("table.clients").count(), 0);
  await shot(page, "mcp-settings-empty");
  await done(page);
});

test("A client connected by OAuth consent is listed; removing its access asks first and revokes its token at once", async () => {
  const page = await open();
  await signIn(page, "alice");
  await openMcp(page);
  assert.ok(await page.locator("#mcp-empty").isVisible());
  // The client's side, in a second tab: the sign-in and consent pages are
  // the authorization server's, not this page.
  const tab = await page.context().newPage();
  const token = await connectClient(tab, "Inspector test", "alice");
  await tab.close();
  assert.equal(await mcpStatus(token), 200, "the client's token works on /mcp");
  await page.reload();
  await page.locator("table.clients tbody tr").first().waitFor();
  const rowEl = page.locator("table.clients tbody tr");
  assert.equal(await rowEl.count(), 1);
  const cells = await rowEl.locator("th, td").allInnerTexts();
  assert.match(cells[0], /^Inspector test\s+Unverified$/);
  assert.equal(cells[1], "127.0.0.1:9");
  assert.equal(cells[2], "Acme");
  assert.deepEqual(cells[3].split("\n"), ["Read data", "Refresh data"], "write permissions start unticked on the consent page");
  assert.match(cells[4], /\d{4}/, "connected since a date");
  assert.match(await page.locator("#mcp-clients .note").innerText(), /not verified/);
  assert.ok(!await page.locator("#mcp-empty").isVisible());
  await shot(page, "mcp-settings-client");

  const remove = page.getByRole("button", { name: "Remove access for Inspector test (Acme)" });
  await remove.click();
  assert.equal(await page.locator("#confirm-title").innerText(), "Remove access for Inspector test?");
  assert.match(await page.locator("#confirm-text").innerText(), /its tokens no longer work/);
  await page.locator("#confirm").getByRole("button", { name: "Cancel" }).click();
  assert.equal(await rowEl.count(), 1, "Cancel keeps it");
  assert.equal(await mcpStatus(token), 200, "and its token still works");
  await remove.click();
  await page.locator("#confirm").getByRole("button", { name: "Remove access" }).click();
  await page.locator("#mcp-status", { hasText: "Access removed for Inspector test." }).waitFor();
  assert.equal(await rowEl.count(), 0);
  assert.ok(await page.locator("#mcp-empty").isVisible());
  assert.equal(await mcpStatus(token), 401, "the removed client's token stops working on /mcp at once");
  await page.reload();
  await page.locator("#mcp-setup h3").first().waitFor();
  assert.ok(await page.locator("#mcp-empty").isVisible(), "and stays removed");
  await done(page);
});

test("Both pages at 375 px, by keyboard alone, under reduced motion: reachable from the header, focus visible, labelled, nothing sideways", async () => {
  const page = await open({ viewport: phone, reducedMotion: "reduce" });
  const active = () => page.evaluate(() => {
    const a = document.activeElement;
    return a && (a.getAttribute("aria-label") || (a.labels && a.labels[0] && a.labels[0].textContent.trim()) || a.textContent.trim() || a.id || a.tagName);
  });
  const tabTo = async (want) => {
    for (let i = 0; i < 80; i++) {
      if (String(await active()).match(want)) return;
      await page.keyboard.press("Tab");
    }
    assert.fail("keyboard focus never reached " + want + "; last: " + await active());
  };
  // visibleFocus: the focused element draws a focus ring (or, for a
  // switch, the track beside it does).
  const visibleFocus = (track = false) => page.evaluate((track) => {
    const a = track ? document.activeElement.nextElementSibling : document.activeElement;
    return getComputedStyle(a).outlineStyle !== "none" && getComputedStyle(a).outlineWidth !== "0px";
  }, track);
  await signIn(page, "alice");
  await page.locator("body").focus();
  await tabTo(/^Connections$/);
  assert.ok(await visibleFocus(), "the header link shows focus");
  await page.keyboard.press("Enter");
  await page.locator(".conn-card").first().waitFor();
  assert.ok(await overflow(page) <= phone.width, "no horizontal scrolling on the list: " + await overflow(page));
  await tabTo(/^Acme analytics$/);
  await page.keyboard.press("Enter");
  await page.locator("#tool-rows .tool").first().waitFor();
  assert.ok(await overflow(page) <= phone.width, "nor on a connection: " + await overflow(page));
  assert.deepEqual(await unlabelled(page), [], "every control has a name");
  await tabTo(/^Allow access to create_annotation$/);
  assert.ok(await visibleFocus(true), "a switch shows focus on its track");
  const track = await page.evaluate(() => getComputedStyle(document.activeElement.nextElementSibling).transitionDuration);
  assert.match(track, /^0s/, "no switch motion under reduced motion: " + track);
  await page.keyboard.press("Space");
  await page.locator("#connections-status", { hasText: "create_annotation is off" }).waitFor();
  assert.equal(await active(), "Allow access to create_annotation", "focus stays on the switch");
  await page.keyboard.press("Space");
  await page.locator("#connections-status", { hasText: "create_annotation is allowed" }).waitFor();
  await shot(page, "phone-connection");
  await tabTo(/^Edit$/);
  await page.keyboard.press("Enter");
  assert.equal(await active(), "Name", "the form opens on its first field");
  assert.ok(await overflow(page) <= phone.width, "nor in the form: " + await overflow(page));
  assert.deepEqual(await unlabelled(page), []);
  await shot(page, "phone-connection-form");
  await tabTo(/^Cancel$/);
  await page.keyboard.press("Enter");

  await tabTo(/^MCP$/);
  await page.keyboard.press("Enter");
  await page.locator("#mcp-setup h3").first().waitFor();
  await connectClientQuietly(page);
  assert.ok(await overflow(page) <= phone.width, "nor on MCP settings: " + await overflow(page));
  assert.deepEqual(await unlabelled(page), []);
  await page.locator("body").focus();
  await tabTo(/^Remove access for/);
  assert.ok(await visibleFocus());
  await shot(page, "phone-mcp-settings");
  await done(page);
});

// connectClientQuietly gives alice a connected client without leaving the
// page: the consent runs in a second tab.
async function connectClientQuietly(page) {
  const tab = await page.context().newPage();
  await connectClient(tab, "Phone client", "alice");
  await tab.close();
  await page.reload();
  await page.locator("table.clients tbody tr").first().waitFor();
}
