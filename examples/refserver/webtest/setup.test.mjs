// Connection setup from the chat (seed 000 "Missing connection", Phase 4
// and its follow-up): the setup card after the answer that explains the
// missing access, Connect through the provider's sign-in back to the
// connection page with the chat closed, the card refreshed when the chat
// opens again, "I added the connection" and "Continue request" as normal
// messages (Ask checks again; Continue request, once connected, answers
// the question), native setup in a new tab, a viewer told to ask an admin.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, base, phone, assert } from "./lib.mjs";
import { overflow, fixture, as } from "./settings-lib.mjs";

before(launch);
after(close);

const card = (page) => lastTurn(page).locator(".setup-card");

test("A missing provider: the answer explains, then the setup card; Connect signs in and returns to the connection page with the chat closed", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show pageviews from Demo Analytics by week");
  const turn = lastTurn(page);
  // Explain missing access before setup cards.
  const order = await turn.locator(".answer > *").evaluateAll((els) => els.map((e) => e.className));
  assert.ok(order.indexOf("text") >= 0 && order.indexOf("text") < order.indexOf("setup-card"), "the text comes before the card: " + order);
  assert.match(await turn.locator(".text").innerText(), /no connection to Demo Analytics data/);
  assert.equal(await card(page).count(), 1, "one setup card, not quick replies");
  assert.equal(await turn.locator(".chart-result").count(), 0, "no chart while setup is needed");
  await turn.locator(".work-completed summary").click();
  assert.match(await turn.locator(".step-label").first().innerText(), /Checked connections/);
  await shot(page, "setup-card");
  const conv = await page.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith("askbi.active."))[1]);
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("askbi.session")).token);
  const messages = async () => (await (await fetch(`${base}/ai/conversations/${conv}`, { headers: { Authorization: "Bearer " + token } })).json()).messages.length;
  const before = await messages();

  // Connect: save and connect, the provider's sign-in (it approves at
  // once), the callback, the connection page.
  await card(page).getByRole("button", { name: "Connect Demo Analytics" }).click();
  await page.waitForURL(/#\/connections\/conn_[a-z0-9]+$/);
  await page.locator("#connections-return .conn-banner").waitFor();
  assert.match(await page.locator("#connections-return .conn-banner").innerText(), /Demo Analytics is connected/);
  assert.equal(await page.evaluate(() => location.search), "", "the return parameters are consumed");
  assert.ok(await page.locator("#home").isHidden(), "the chat stays closed");
  assert.ok(await page.locator("#convbar").isVisible(), "the conversation bar offers the chat");
  assert.match(await page.locator("#convbar-open").innerText(), /show pageviews from Demo Analytics/);
  assert.equal(await messages(), before, "no model request, no message on return");
  assert.equal(await page.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith("askbi.active."))[1]), conv,
    "the conversation is the active one");
  await shot(page, "setup-connection-page");
  // A refresh does not repeat the return.
  await page.reload();
  await page.locator("#tool-rows .tool").first().waitFor();
  assert.equal(await page.locator("#connections-return .conn-banner").count(), 0);
  // A reload of a callback whose first answer was cut off is a replay
  // (conflict), but the sign-in it repeats connected: the page says so.
  const id = new URL(page.url()).hash.split("/").pop();
  await page.goto(`${base}/?oauth=failed&code=conflict&connection=${id}&conversation=${conv}&team=acme#/connections/${id}`);
  await page.locator("#connections-return .conn-banner:not(.failed)").filter({ hasText: "Demo Analytics is connected" }).waitFor();

  // Approve a tool, then open the chat: the card is refreshed, and only
  // the user continues.
  await page.getByRole("switch", { name: "Allow access to pageviews_by_week" }).check();
  await page.locator("#connections-status").filter({ hasText: "pageviews_by_week is allowed" }).waitFor();
  await page.locator("#convbar-open").click();
  await page.locator("#focus").waitFor();
  await settled(page);
  await page.locator(".setup-card").filter({ hasText: "Connection ready" }).waitFor();
  assert.equal(await messages(), before, "opening the chat sends nothing");
  await page.locator(".setup-card").getByRole("button", { name: "Continue request" }).click();
  await settled(page);
  assert.equal(await lastTurn(page).locator(".question").innerText(), "Continue request");
  assert.match(await lastTurn(page).locator(".text").innerText(), /^pageviews_by_week on Demo Analytics returned 8 rows/,
    "the question was continued (connect-flow.test.mjs follows it to the chart)");
  await done(page);
});

test("Native setup opens the host's form in a new tab; I added the connection checks again and grants nothing", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show orders from MySQL");
  const [tab] = await Promise.all([page.context().waitForEvent("page"),
    card(page).getByRole("button", { name: "Set up connection" }).click()]);
  await tab.waitForLoadState();
  assert.match(tab.url(), /\/web\/entity\.html\?type=mysql$/);
  assert.match(await tab.locator("h1").innerText(), /mysql connection setup form/);
  await tab.close();
  assert.ok(await page.locator("#focus").isVisible(), "the chat stays available");
  await card(page).getByRole("button", { name: "I added the connection" }).click();
  await settled(page);
  assert.equal(await lastTurn(page).locator(".question").innerText(), "I added the connection");
  assert.equal(await card(page).count(), 1, "Ask checked again");
  assert.match(await card(page).innerText(), /Connection needed/, "nothing was added, so nothing is ready");
  await done(page);
});

test("Manual setup opens the MCP connection form in a new tab, its name filled in", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show visitors from Plausible");
  const [tab] = await Promise.all([page.context().waitForEvent("page"),
    card(page).getByRole("button", { name: "Set up connection" }).click()]);
  await tab.waitForLoadState();
  assert.match(tab.url(), /\/#\/connections\/new\?name=Plausible$/);
  // A tab opened without its opener starts signed out: after the sign-in
  // the address still leads to the form.
  await tab.getByRole("radio", { name: /^alice/i }).check();
  await tab.getByRole("button", { name: "Sign in", exact: true }).click();
  await tab.locator(".conn-form").waitFor();
  assert.equal(await tab.getByLabel("Name", { exact: true }).inputValue(), "Plausible");
  assert.ok(await tab.getByRole("textbox", { name: "Server URL", exact: true }).evaluate((el) => el === document.activeElement), "the URL is next");
  await tab.close();
  assert.ok(await card(page).getByRole("button", { name: "I added the connection" }).isVisible());
  await done(page);
});

test("A viewer is told to ask an admin, with no setup action", async () => {
  const page = await open();
  await signIn(page, "vic");
  await send(page, "show pageviews from PostHog");
  assert.match(await card(page).innerText(), /Needs a team owner or admin/);
  assert.equal(await card(page).getByRole("button").count(), 0);
  await done(page);
});

test("A failed sign-in returns to the connection page with why, and nothing active", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show pageviews from Demo Analytics");
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("askbi.session")).token);
  const conv = await page.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith("askbi.active."))[1]);
  // Acme's Demo Analytics is signed in by the tests above, and Connect
  // would give it back as it is: a second account is saved by its URL.
  // Start that one's sign-in, then come back with the provider's refusal.
  const url = (await as("alice", "GET", "/ai/connections")).connections.find((c) => c.name === "Demo Analytics").url;
  const doc = await (await fetch(base + "/ai/connections/connect", { method: "POST", headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: JSON.stringify({ name: "Demo Analytics, second account", url, conversation_id: conv }) })).json();
  const state = new URL(doc.authorization_url).searchParams.get("state");
  await page.goto(`${base}/ai/connections/oauth/callback?error=access_denied&state=${encodeURIComponent(state)}`);
  await page.locator("#connections-return .conn-banner.failed").waitFor();
  assert.match(await page.locator(".conn-banner").innerText(), /Nothing was connected\. Reconnect tries again\.$/);
  assert.ok(await page.getByRole("button", { name: "Reconnect" }).isVisible());
  assert.match(await page.locator(".facts").innerText(), /Sign-in needed/);
  assert.equal(await page.evaluate(() => location.search), "");
  await done(page);
});

test("A sign-in that cannot start keeps the saved connection; Try again starts it", async () => {
  const control = (what) => fetch(fixture.base + "/control/sign-in-" + what, { method: "POST" });
  await control("down");
  const page = await open();
  await signIn(page, "carol"); // Globex: not connected by the tests above
  await send(page, "show pageviews from Demo Analytics");
  await card(page).getByRole("button", { name: "Connect Demo Analytics" }).click();
  const retry = card(page).getByRole("button", { name: "Try again" });
  await retry.waitFor();
  assert.match(await card(page).locator(".setup-status").innerText(), /larger than askbi accepts.*The connection is saved\./s);
  assert.equal(new URL(page.url()).pathname, "/", "the chat stays");
  const saved = (await as("carol", "GET", "/ai/connections")).connections.filter((c) => c.name === "Demo Analytics");
  assert.equal(saved.length, 1, "one saved connection");
  assert.ok(!saved[0].active, "and it is not active");
  await shot(page, "setup-start-failed");
  await control("up");
  await retry.click();
  await page.locator("#connections-return .conn-banner").filter({ hasText: "Demo Analytics is connected" }).waitFor();
  assert.equal((await as("carol", "GET", "/ai/connections")).connections.filter((c) => c.name === "Demo Analytics").length, 1,
    "Try again used the saved connection");
  await as("carol", "DELETE", "/ai/connections/" + saved[0].id); // the next test connects Globex afresh
  await done(page);
});

test("At 375 px, by keyboard, under reduced motion: the card fits, and Connect is reached and pressed with the keyboard", async () => {
  const page = await open({ viewport: phone, reducedMotion: "reduce" });
  await signIn(page, "carol"); // Globex: not connected by the tests above
  await send(page, "show pageviews from Demo Analytics");
  await card(page).waitFor();
  assert.ok(await overflow(page) <= phone.width, "nothing sideways: " + await overflow(page));
  await shot(page, "phone-setup-card");
  const connect = card(page).getByRole("button", { name: "Connect Demo Analytics" });
  await page.locator("#message").focus();
  let reached = false;
  for (let i = 0; i < 60 && !reached; i++) {
    await page.keyboard.press("Shift+Tab");
    reached = await connect.evaluate((el) => el === document.activeElement);
  }
  assert.ok(reached, "keyboard focus reaches Connect");
  assert.ok(await connect.evaluate((el) => getComputedStyle(el).outlineStyle !== "none"), "with a visible focus ring");
  await page.keyboard.press("Enter");
  await page.locator("#connections-return .conn-banner").filter({ hasText: "Demo Analytics is connected" }).waitFor();
  assert.ok(await overflow(page) <= phone.width, "the connection page fits too: " + await overflow(page));
  await done(page);
});
