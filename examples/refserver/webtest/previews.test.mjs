// Seed 000 "Chart result": several previews, one placement offer, one
// approved placement that shows every result component as Saved. The mock
// model drives the chat, as on the demo page without a key.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, assert } from "./lib.mjs";

before(launch);
after(close);

// replies is the assistant's text of the newest turn, without the result
// components (whose picker says "Dashboard").
const replies = (page) => lastTurn(page).locator(".answer > .text").allInnerTexts().then((t) => t.join("\n"));
const badges = (page) => page.locator(".chart-result .chart-head .badge").allInnerTexts();

test("After several previews Ask asks once to place them all, then places them in one approved step and every result shows Saved.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show signups by week");
  assert.doesNotMatch(await replies(page), /dashboard/i, "no placement offer for a single preview");
  await send(page, "show signups by country");
  assert.doesNotMatch(await replies(page), /dashboard/i, "two previews: no offer yet");
  // The scoped dataset, asked with its scope: the third distinct preview.
  await pickContext(page, "EU signups", "EU signups by country");
  await send(page, "show signups by country for DE and FR");
  assert.match(await replies(page), /3 previews in this conversation\. Should I add all of them to a dashboard\?/);
  assert.deepEqual(await badges(page), ["Preview", "Preview", "Preview"]);

  await send(page, "yes, add them to Growth overview");
  const card = lastTurn(page).locator(".approval");
  assert.match(await card.innerText(), /Add charts to dashboard/);
  assert.match(await card.innerText(), /Growth overview/);
  // The charts by name, never by ID; and when the card expires.
  assert.doesNotMatch(await card.innerText(), /chart_[a-z0-9]/, "the card shows no chart IDs");
  for (const name of ["Signups by week", "Signups by country"]) assert.match(await card.innerText(), new RegExp(`Chart “${name}”`));
  assert.match(await card.innerText(), /Expires at \d{1,2}:\d{2}, in 5 minutes\./);
  await card.getByRole("button", { name: "Approve" }).click();
  await settled(page);
  await page.waitForFunction(() => [...document.querySelectorAll(".chart-result .chart-head .badge")].every((b) => b.textContent === "Saved"));
  await shot(page, "batch-placement");
  assert.deepEqual(await badges(page), ["Saved", "Saved", "Saved"]);
  assert.equal(await page.locator(".chart-result .place").count(), 0, "no placement control is left");
  assert.match(await replies(page), /Added 3 charts to Growth overview/);

  // Reopened, the conversation still shows them saved, on that dashboard.
  await page.reload();
  await page.locator(".chart-result").first().waitFor();
  await settled(page);
  assert.deepEqual(await badges(page), ["Saved", "Saved", "Saved"]);
  assert.equal(await page.locator(".chart-result .saved-at", { hasText: "Growth overview" }).count(), 3);
  await done(page);
});
