// Approvals and what they leave (issue 27): a card says so when the
// change reaches a shared dashboard; a call refused before it was
// proposed is no step of the work summary; a receipt keeps its target's
// name and the settings after a reload, also once the target is gone;
// two previews of one name are told apart by scope or date range. Each test runs at 1280×800
// and 375×740, live and after a reload, the cards by keyboard.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const views = [["desktop", desktop], ["phone", phone]];

// reload opens the page again on the same chat.
async function reload(page) {
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
}

// steps are the work summary's step labels of the newest turn.
const steps = (page) => lastTurn(page).locator(".work .step-label").allTextContents();

// decide answers the newest card by keyboard: the new card has the
// focus, and Tab reaches Approve, then Reject.
async function decide(page, verb) {
  await page.waitForFunction(() => document.activeElement && document.activeElement.closest(".approval"));
  for (let i = 0; i < 3 && !(await page.evaluate((v) => document.activeElement.textContent === v, verb)); i++) await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), verb, `Tab reaches ${verb}`);
  await page.keyboard.press("Enter");
  await settled(page);
}

const sharedNote = (page) => lastTurn(page).locator(".approval .approval-shared");

for (const [name, viewport] of views) {
  test(`An approval says so when the change reaches a shared dashboard, naming it, and not for a preview (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    await send(page, "show signups by week");
    await send(page, "put it on the Growth overview dashboard");
    assert.equal(await sharedNote(page).innerText(), "Growth overview is a shared dashboard: everyone who can open it sees this change.");
    assert.ok(await sharedNote(page).isVisible(), "visibly");
    await decide(page, "Reject");

    // A change to the preview itself: no dashboard shows it.
    await pickContext(page, "Signups by week", "Signups by week");
    await send(page, "change this to a weekly bar chart");
    assert.match(await lastTurn(page).locator(".approval").innerText(), /Update chart/);
    assert.equal(await sharedNote(page).count(), 0, "no note for a preview");
    await decide(page, "Reject");

    await send(page, "delete the Revenue dashboard");
    const check = async (when) => {
      assert.equal(await sharedNote(page).innerText(), "Revenue is a shared dashboard: everyone who can open it sees this change.", when);
      assert.match(await lastTurn(page).locator(".approval").innerText(), /Expires at \d{1,2}:\d{2}, in (5|4) minutes\./, "the expiry stays " + when);
    };
    await check("live");
    await shot(page, "approval-shared-" + name);
    await reload(page);
    await check("after a reload");
    await lastTurn(page).locator(".approval").focus();
    await decide(page, "Reject");
    assert.equal(await sharedNote(page).count(), 0, "a settled card is a record: the note is gone with the question");
    await done(page);
  });
}

for (const [name, viewport] of views) {
  test(`A deletion a viewer's role cannot make is never proposed and no step of the work summary, live and after a reload (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "vic");
    await send(page, "delete the Growth overview dashboard");
    const check = async (when) => {
      assert.equal(await page.locator(".approval").count(), 0, "no approval card " + when);
      assert.match(await lastTurn(page).locator(".text").innerText(), /editor role/, "the answer says why " + when);
      assert.deepEqual(await steps(page), ["Searched the workspace"], "only the search is a step " + when);
      assert.match(await lastTurn(page).locator(".work summary").innerText(), /^Work completed · 1 step$/);
    };
    await check("live");
    await reload(page);
    await check("after a reload");
    await shot(page, "refused-no-step-" + name);
    await done(page);
  });
}

// Each viewport deletes its own dashboard: the server is shared.
for (const [name, viewport, dashboard] of [["desktop", desktop, "Revenue"], ["phone", phone, "Finance"]]) {
  test(`Receipts keep their target's name and the settings after a reload, also of a deleted dashboard (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    await send(page, "show signups by week");
    await pickContext(page, "Signups by week", "Signups by week");
    await send(page, "change this to a weekly bar chart");
    await decide(page, "Approve");
    await send(page, `delete the ${dashboard} dashboard`);
    await decide(page, "Approve");
    await send(page, "delete the Growth overview dashboard");
    await decide(page, "Reject");
    const receipts = () => page.locator(".approval").allInnerTexts();
    const live = await receipts();
    const want = [
      [/^Approval: Update chart/, /Chart “Signups by week”/, /Chart type\s+bar/, /You approved it\. Done\.$/],
      [/^Approval: Delete dashboard/, new RegExp(`Dashboard “${dashboard}”`), /You approved it\. Done\.$/],
      [/^Approval: Delete dashboard/, /Dashboard “Growth overview”/, /You rejected it\. It did not run\.$/],
    ];
    assert.equal(live.length, want.length, "one receipt a decision");
    want.forEach((res, i) => { for (const re of res) assert.match(live[i], re, `receipt ${i + 1}`); });
    for (const r of live) assert.doesNotMatch(r, /chart_[a-z0-9]|dash_|Expires at|shared dashboard/, "no IDs, and nothing of the question left");
    await reload(page);
    assert.deepEqual(await receipts(), live, "after a reload the receipts read as they did");
    await shot(page, "receipts-reloaded-" + name);
    await done(page);
  });
}

for (const [name, viewport] of views) {
  test(`Two previews of one name are told apart by scope or date range, on their cards and the batch placement card; a unique name stays (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const titles = async () => (await page.locator(".chart-result .chart-title").allInnerTexts())
      .map((t) => t.replace(/\s*\(opens in a new tab\)$/, ""));
    await send(page, "show signups by week");
    await send(page, 'use the create_chart_preview tool with {"dataset_id": "ds_weekly_signups", "chart_type": "line", "x_field": "week", ' +
      '"y_fields": ["signups"], "name": "Signups by week", "filters": [{"field": "week", "op": "gte", "value": "2026-10-05"}]}');
    await pickContext(page, "EU signups", "EU signups by country");
    await send(page, "show signups by country for DE and FR");
    assert.deepEqual(await titles(), ["Signups by week", "Signups by week (week ≥ 2026-10-05)", "Signups by country"],
      "a date range tells the second apart; a unique name stays as it is");
    // Another "Signups by country", on all countries: the scoped one,
    // shown above, now says its scope.
    await page.getByRole("button", { name: "Remove Dataset: EU signups by country" }).click();
    await send(page, "show signups by country");
    const want = ["Signups by week", "Signups by week (week ≥ 2026-10-05)", "Signups by country (country in (DE, FR))", "Signups by country"];
    assert.deepEqual(await titles(), want);
    assert.deepEqual(await page.locator(".chart-result").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label"))),
      want.map((t) => "Chart: " + t), "the cards' names say it too");

    await send(page, "yes, add them to Growth overview");
    const batch = ["Chart “Signups by week”", "Chart “Signups by week (week ≥ 2026-10-05)”", "Chart “Signups by country (country in (DE, FR))”"];
    const named = async (when) => {
      const text = await lastTurn(page).locator(".approval").innerText();
      for (const b of batch) assert.ok(text.includes(b), `the batch card names ${b} ${when}: ${text}`);
    };
    await named("live");
    await shot(page, "same-name-batch-" + name);
    await decide(page, "Approve");
    await named("as its receipt");
    await reload(page);
    assert.deepEqual(await titles(), want, "after a reload");
    await named("after a reload");
    await done(page);
  });
}

for (const [name, viewport] of views) {
  test(`An open card counts down to its expiry, then says it expired and offers nothing to press (${name})`, async () => {
    const page = await open({ viewport });
    // The page's clock is the test's from its next load on; it flows on
    // its own, and runFor moves it on.
    await page.clock.install();
    await page.reload();
    await signIn(page, "alice");
    await send(page, "show signups by week"); // a test before deleted the Revenue dashboard
    await send(page, "put it on the Growth overview dashboard");
    const card = lastTurn(page).locator(".approval");
    assert.match(await card.locator(".approval-expiry").innerText(), /, in 5 minutes\.$/);
    await page.clock.runFor("03:00");
    assert.match(await card.locator(".approval-expiry").innerText(), /, in 2 minutes\.$/, "three minutes later");
    await page.clock.runFor("01:30");
    assert.match(await card.locator(".approval-expiry").innerText(), /, in under a minute\.$/);
    await page.waitForFunction(() => document.activeElement && document.activeElement.closest(".approval"));
    await page.clock.runFor("01:00");
    assert.equal(await card.locator(".record").innerText(), "This approval expired. Nothing ran.");
    assert.equal(await card.getByRole("button", { name: "Approve" }).count(), 0, "no Approve once expired");
    assert.equal(await card.getByRole("button", { name: "Reject" }).count(), 0);
    assert.ok(await page.evaluate(() => document.activeElement.closest(".approval") !== null), "the keyboard stays on the card");
    // The turn waits no more: its step says the call did not run. (After
    // a reload the server says the same, RunExpired: TestReceiptsKeepTheirCards.)
    assert.deepEqual(await lastTurn(page).locator(".work .step-state").allTextContents(), ["Done", "Approval expired, did not run"]);
    assert.match(await lastTurn(page).locator(".work").innerText(), /Work completed/);
    assert.equal(await page.locator("#activity").innerText(), "The approval expired. Nothing ran.", "the status says so");
    await shot(page, `approval-expired-${name}`);
    await done(page);
  });
}
