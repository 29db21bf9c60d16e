// The connect flow ends in an answer (seed 000 "Missing connection":
// "Continue request checks fresh data before continuing"): as a user,
// ask about a provider the team has not connected, Connect, the
// provider's sign-in, allow its tool on the connection page, back to the
// conversation through the conversation bar, Continue request, and the
// chart of the provider's data in the chat; the older cards offer no
// actions; the answer is titled after the question and shown once (issue
// 41). At 1280×800, at 375×740 in the dark theme, and once by keyboard
// only.

import { test, before, after } from "node:test";
import { launch, close, done, shot, signIn, send, settled, lastTurn, phone, assert } from "./lib.mjs";
import { open, overflow, as } from "./settings-lib.mjs";

before(launch);
after(close);

const QUESTION = "show pageviews from Demo Analytics by week";

// disconnect leaves Acme without the Demo Analytics connection the test
// made, so the next test connects it afresh.
async function disconnect() {
  for (const c of (await as("alice", "GET", "/ai/connections")).connections) {
    if (c.name === "Demo Analytics") await as("alice", "DELETE", "/ai/connections/" + c.id);
  }
}

// answered checks the continued request's turn: the provider's tool ran
// after the fresh check, its rows drawn as a chart, the answer says what
// came back, and no card offers an action any more.
async function answered(page, name) {
  const turn = lastTurn(page);
  assert.equal(await turn.locator(".question").innerText(), "Continue request");
  const chart = turn.locator(".remote-result[data-kind=chart]");
  await chart.waitFor();
  // Titled after the question it answers, the tool named beside it.
  assert.equal((await chart.locator(".chart-title").innerText()).trim(), "Pageviews from Demo Analytics by week");
  assert.match(await chart.locator(".chart-type").innerText(), /pageviews_by_week from Demo Analytics/);
  // Shown once: no second "Connection ready" card repeats the answer.
  assert.equal(await turn.locator(".setup-card").count(), 0, "the answer's turn shows no second card");
  assert.match(await chart.locator("svg.chart-svg").getAttribute("aria-label"), /^Line chart of pageviews, 8 points from 7 Sep to 26 Oct$/);
  assert.equal(await chart.locator("svg.chart-svg circle").count(), 8, "one point per week of the provider's data");
  // The demo shares no rows with the model: it says what it was shown.
  assert.match(await turn.locator(".text").innerText(), /^pageviews_by_week on Demo Analytics returned 8 rows/);
  assert.doesNotMatch(await turn.innerText(), /its answer is above/);
  await turn.locator(".work-completed summary").click();
  assert.deepEqual(await turn.locator(".step-label").allInnerTexts(), ["Checked connections", "Used Demo Analytics: pageviews_by_week"]);
  for (const card of await page.locator(".setup-card").all()) {
    assert.equal(await card.getByRole("button").count(), 0, "an older card still offers: " + await card.innerText());
  }
  // Every control of the chat has a name (unlabelled's rule, on the
  // transcript: the composer's hidden file input is no control).
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll("#turns :is(button, a[href], input, select, summary)")]
    .filter((el) => el.getClientRects().length && !(el.getAttribute("aria-label") || el.textContent.trim()))
    .map((el) => el.outerHTML.slice(0, 80))), [], "every control of the chat has a name");
  await chart.scrollIntoViewIfNeeded();
  await shot(page, name);
}

// flow runs the whole flow by mouse on a page of the given size.
async function flow(page, name) {
  await signIn(page, "alice");
  await send(page, QUESTION);
  const card = lastTurn(page).locator(".setup-card");
  assert.match(await card.innerText(), /Connection needed/);
  await card.getByRole("button", { name: "Connect Demo Analytics" }).click();
  await page.waitForURL(/#\/connections\/conn_[a-z0-9]+$/);
  await page.locator("#connections-return .conn-banner").filter({ hasText: "Your chat is waiting in the bar below" }).waitFor();
  await page.getByRole("switch", { name: "Allow access to pageviews_by_week" }).check();
  await page.locator("#connections-status").filter({ hasText: "pageviews_by_week is allowed" }).waitFor();
  // The way back to the question: the conversation bar.
  await page.locator("#convbar-open").click();
  await page.locator("#focus").waitFor();
  await settled(page);
  const ready = page.locator(".setup-card").filter({ hasText: "Connection ready" });
  await ready.getByRole("button", { name: "Continue request" }).click();
  await settled(page);
  await answered(page, name);
  assert.ok(await overflow(page) <= page.viewportSize().width, "nothing sideways: " + await overflow(page));
  // Reopened, the conversation shows the same: the chart, and no card
  // that acts.
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  await answered(page, name + "-reopened");
}

test("At 1280×800: ask, Connect, sign in, allow the tool, back to the chat, Continue request: the chart of the provider's data", async () => {
  const page = await open();
  try { await flow(page, "connect-flow"); } finally { await disconnect(); }
  await done(page);
});

test("At 375×740 the whole flow fits, in the dark theme", async () => {
  const page = await open({ viewport: phone, reducedMotion: "reduce", colorScheme: "dark" });
  try { await flow(page, "phone-connect-flow"); } finally { await disconnect(); }
  await done(page);
});

// tabTo presses key (Tab, or Shift+Tab) until target has the focus.
async function tabTo(page, target, key = "Tab") {
  await target.waitFor({ state: "attached" });
  for (let i = 0; i < 80; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press(key);
  }
  assert.fail("the keyboard never reached " + target);
}

test("By keyboard only: Tab and Enter (Space for the switch) from the question to the chart", async () => {
  const page = await open();
  try { await byKeyboard(page); } finally { await disconnect(); }
  await done(page);
});

async function byKeyboard(page) {
  await page.getByRole("radio", { name: /^alice/i }).focus();
  await page.keyboard.press("Space");
  await tabTo(page, page.getByRole("button", { name: "Sign in", exact: true }));
  await page.keyboard.press("Enter");
  await page.locator("#home:not([hidden])").waitFor();
  await tabTo(page, page.getByLabel("Message", { exact: true }));
  await page.keyboard.type(QUESTION);
  await page.keyboard.press("Enter");
  await settled(page);
  const connect = lastTurn(page).locator(".setup-card").getByRole("button", { name: "Connect Demo Analytics" });
  await tabTo(page, connect, "Shift+Tab");
  await page.keyboard.press("Enter");
  await page.locator("#connections-return .conn-banner").filter({ hasText: "Demo Analytics is connected" }).waitFor();
  const allow = page.getByRole("switch", { name: "Allow access to pageviews_by_week" });
  await allow.waitFor({ state: "attached" });
  await tabTo(page, allow);
  await page.keyboard.press("Space");
  await page.locator("#connections-status").filter({ hasText: "pageviews_by_week is allowed" }).waitFor();
  await tabTo(page, page.locator("#convbar-open"));
  await page.keyboard.press("Enter");
  await page.locator("#focus").waitFor();
  await settled(page);
  const cont = page.locator(".setup-card").getByRole("button", { name: "Continue request" });
  await tabTo(page, cont, "Shift+Tab");
  assert.ok(await cont.evaluate((el) => getComputedStyle(el).outlineStyle !== "none"), "with a visible focus ring");
  await page.keyboard.press("Enter");
  await settled(page);
  await answered(page, "keyboard-connect-flow");
}
