// Issue 35, seed 002: a receipt that is still running polls until it
// finishes, with the approve controls hidden meanwhile. The action here
// (hold_export, which TestBrowser adds) runs until the test releases it
// (POST to ASKBI_HOLD_URL). After a reload during the call, or when the
// approve answers that the call is still running, the card shows it
// running with nothing to press, the status says so, and the page polls
// the conversation (its clock driven by the test) until the call ends;
// leaving the chat stops the polling. At 1280×800 and 375×740, by
// keyboard.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, a11y, desktop, phone, base, assert } from "./lib.mjs";

before(launch);
// A failed test can leave its call running: let every one finish, so
// that nothing keeps this process waiting.
after(async () => {
  for (let i = 0; i < 4; i++) await release();
  await close();
});

// limit bounds a test: a call left running by a failed one would hold
// the next one's release.
const limit = 90000;
const release = async () => assert.equal((await fetch(process.env.ASKBI_HOLD_URL, { method: "POST" })).status, 204);
const ask = 'use the hold_export tool with {"days": 7}';
const RUNNING = "You approved it. It is still running; this updates when it finishes.";

// session is the page's token and open conversation.
const session = (page) => page.evaluate(() => ({
  token: JSON.parse(sessionStorage.getItem("askbi.session")).token,
  conv: sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active."))),
}));

// view opens the conversation as the page would.
async function view(page) {
  const { token, conv } = await session(page);
  return (await fetch(`${base}/ai/conversations/${conv}`, { headers: { Authorization: "Bearer " + token } })).json();
}

// runState waits until the server's view shows the approval's run in
// state.
async function runState(page, approval, state) {
  for (;;) {
    const run = ((await view(page)).work_summary || []).find((r) => r.approval_id === approval);
    if (run && run.state === state) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// approveByKeyboard focuses the newest card, Tabs to Approve and presses
// it.
async function approveByKeyboard(page) {
  await page.waitForFunction(() => document.activeElement && document.activeElement.closest(".approval"));
  for (let i = 0; i < 3 && !(await page.evaluate(() => document.activeElement.textContent === "Approve")); i++) await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Approve", "Tab reaches Approve");
  await page.keyboard.press("Enter");
}

// isView is a request of the page for its conversation's view.
const isView = (conv) => (r) => r.method() === "GET" && new URL(r.url()).pathname === `/ai/conversations/${conv}`;

// viewReads counts the page's reads of its conversation's view.
function viewReads(page, conv) {
  const seen = { n: 0 };
  page.on("request", (r) => { if (isView(conv)(r)) seen.n++; });
  return seen;
}

// issued returns once every request the page started so far has been
// seen: it sends one more and waits for it.
async function issued(page) {
  const marker = page.waitForRequest((r) => r.url().endsWith("/favicon.ico?marker"));
  await page.evaluate(() => fetch("/favicon.ico?marker").catch(() => {}));
  await marker;
}

// until moves the page's clock on, by the longest wait between polls at
// a time, until locator shows.
async function until(page, locator) {
  for (let i = 0; i < 20 && !(await locator.count()); i++) {
    await page.clock.runFor(8000);
    await locator.first().waitFor({ timeout: 1000 }).catch(() => {});
  }
  await locator.first().waitFor();
}

async function checkRunning(page, when) {
  const card = lastTurn(page).locator(".approval");
  await card.locator(".record", { hasText: RUNNING }).waitFor();
  assert.equal(await card.getByRole("button").count(), 0, "nothing to press " + when);
  assert.equal(await card.locator(".record").getAttribute("role"), "status", "the card's record is a status");
  assert.match(await page.locator("#activity").innerText(), /^Still running: Schedule an export\. This chat updates when it finishes\.$/, "the status region says so " + when);
  assert.equal(await page.locator("#activity").getAttribute("aria-live"), "polite");
  assert.deepEqual(await lastTurn(page).locator(".work .step-state").allTextContents(), ["Working"], "its step works " + when);
  assert.equal(await lastTurn(page).locator(".work-completed").count(), 0, "the turn is not shown finished " + when);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), "no horizontal scroll " + when);
}

for (const [name, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`An approved action still running after a reload shows as running, with nothing to press, until it ends (${name})`, { timeout: limit }, async () => {
    const page = await open({ viewport });
    await page.clock.install(); // from the next load on, the test moves the page's timers on
    await page.reload();
    await signIn(page, "alice");
    await send(page, ask);
    await approveByKeyboard(page);
    const card = lastTurn(page).locator(".approval");
    await card.locator(".record", { hasText: "You approved it. Running…" }).waitFor();
    assert.equal(await card.getByRole("button").count(), 0, "the buttons go once approved");
    await lastTurn(page).locator(".step-running").waitFor(); // the call runs on the server

    const { conv } = await session(page);
    await page.reload();
    await page.locator("#focus").waitFor();
    const reads = viewReads(page, conv);
    await checkRunning(page, "after a reload");
    await shot(page, "running-reloaded-" + name);
    await a11y(page, "a running approved action");

    // Polled: still running, still so.
    const polled = page.waitForRequest(isView(conv));
    await page.clock.runFor(1000);
    await polled;
    await checkRunning(page, "while polled");

    await release();
    await until(page, card.locator(".record", { hasText: "You approved it. Done." }));
    assert.equal(await card.getByRole("button").count(), 0);
    assert.deepEqual(await lastTurn(page).locator(".work .step-state").allTextContents(), ["Done"]);
    await page.locator("#activity", { hasText: "Answer ready." }).waitFor();
    await issued(page);
    const after = reads.n;
    await page.clock.runFor(60000);
    await issued(page);
    assert.equal(reads.n, after, "the polling stopped once the call ended");
    await shot(page, "running-done-" + name);
    await done(page);
  });
}

test("Leaving the chat stops the polling; coming back to it goes on", { timeout: limit }, async () => {
  const page = await open();
  await page.clock.install();
  await page.reload();
  await signIn(page, "alice");
  await send(page, ask);
  await approveByKeyboard(page);
  await lastTurn(page).locator(".step-running").waitFor();
  const { conv } = await session(page);
  await page.reload();
  await page.locator("#focus").waitFor();
  const reads = viewReads(page, conv);
  await checkRunning(page, "after a reload");

  // Another page: the polling waits.
  await page.getByRole("link", { name: "Memory" }).click();
  await page.locator("#memory-page:not([hidden])").waitFor();
  await page.locator("#convbar:not([hidden])").waitFor(); // it read the chat once, for the Continue bar
  await issued(page);
  const away = reads.n;
  await page.clock.runFor(60000);
  await issued(page);
  assert.equal(reads.n, away, "no polling while another page shows");
  const again = page.waitForRequest(isView(conv));
  await page.getByRole("link", { name: "Home" }).click();
  await page.clock.runFor(8000);
  await again;
  await checkRunning(page, "back on the chat, polling again");

  // Closed: it stops for good.
  await page.getByRole("button", { name: "Close answer" }).click();
  await page.locator("#idle:not([hidden])").waitFor();
  await issued(page);
  const closed = reads.n;
  await page.clock.runFor(120000);
  await issued(page);
  assert.equal(reads.n, closed, "no polling once the chat is closed");
  await release();
  await done(page);
});

test("An approve answered while the call still runs hides the buttons and polls until it ends", { timeout: limit }, async () => {
  const page = await open();
  await page.clock.install();
  await page.reload();
  await signIn(page, "alice");
  await send(page, ask);
  const pending = (await view(page)).pending_approvals[0];
  const { token, conv } = await session(page);
  // Another tab approved first: its call runs on the server.
  const other = fetch(`${base}/ai/conversations/${conv}/approvals/${pending.approval_id}/approve`, { method: "POST",
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: JSON.stringify({ tool: pending.tool, arguments: pending.arguments }) });
  await runState(page, pending.approval_id, "running");
  // This tab's approve gets what a duplicate gets after its 30 s wait.
  await page.route(`**/approvals/${pending.approval_id}/approve`, (route) => route.fulfill({ status: 503, contentType: "application/json",
    body: JSON.stringify({ error: { code: "unavailable", message: "the approved action is still running; try again in 2 s" } }) }));
  await approveByKeyboard(page);
  await checkRunning(page, "after the approve's answer");
  await settled(page);
  assert.equal(await page.evaluate(() => document.activeElement.id), "message", "the keyboard is back in the composer");

  await release();
  assert.equal((await other).status, 200);
  const card = lastTurn(page).locator(".approval");
  await until(page, card.locator(".record", { hasText: "You approved it. Done." }));
  await until(page, lastTurn(page).locator(".work-completed"));
  assert.match(await lastTurn(page).locator(".text").last().innerText(), /hold_export/, "the answer that followed the call shows");
  await shot(page, "running-answered-" + "desktop");
  await done(page);
});
