// The chat as a person meets it: a waiting approval reads as waiting,
// the keyboard reaches it and comes back to the composer, a skip link;
// failed sends keep the text; chats are new, renamed, deleted; answers
// are copied and asked again.

import { test, before, after } from "node:test";
import { launch, close, open, done, signIn, send, settled, lastTurn, shot, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// Each viewport's test deletes its own dashboard: the server is shared.
const views = [["desktop", desktop, "Revenue"], ["phone", phone, "Finance"]];
const focused = (page) => page.evaluate(() => {
  const a = document.activeElement;
  return a.id || a.getAttribute("aria-label") || a.textContent.trim();
});
const status = (page) => page.locator("#activity").innerText();
const summary = (page) => lastTurn(page).locator(".work summary").innerText();

for (const [name, viewport, dashboard] of views) {
  test(`A waiting approval never reads as finished; the keyboard reaches it and returns to the composer (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const input = page.getByLabel("Message", { exact: true });
    await input.fill(`delete the ${dashboard} dashboard`);
    await input.press("Enter");
    await settled(page);
    const check = async (when) => {
      assert.equal(await status(page), "Waiting for your approval", "the status " + when);
      assert.match(await summary(page), /^Waiting for your approval · 2 steps$/, "the work summary " + when);
      assert.ok(!/Answer ready|Work completed/.test(await page.locator("#home").innerText()), "nothing reads as finished " + when);
    };
    await check("at once");
    assert.equal(await focused(page), "Approval: Delete dashboard", "the new card has the focus");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "Approve", "one Tab reaches Approve");
    await shot(page, "approval-waiting-" + name);
    await page.reload();
    await page.locator("#focus").waitFor();
    await settled(page);
    await check("after a reload");
    await lastTurn(page).getByRole("button", { name: "Approve" }).focus();
    await page.keyboard.press("Enter");
    assert.equal(await focused(page), "message", "the composer has the focus once Approve is pressed");
    await settled(page);
    assert.equal(await focused(page), "message", "and after the answer");
    assert.equal(await status(page), "Answer ready.");
    assert.match(await summary(page), /^Work completed · 2 steps$/);
    await send(page, "delete the Growth overview dashboard");
    assert.equal(await focused(page), "Approval: Delete dashboard");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assert.equal(await focused(page), "Reject");
    await page.keyboard.press("Enter");
    await settled(page);
    assert.equal(await focused(page), "message", "the composer has the focus after Reject");
    assert.equal(await lastTurn(page).locator(".approval .record").innerText(), "You rejected it. It did not run.");
    await done(page);
  });

  test(`The skip link leads past the top bar to the chat or the page (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const skip = async () => {
      // The keyboard starts from the top of the page, as after a load.
      await page.evaluate(() => { const b = document.body; b.tabIndex = -1; b.focus(); b.removeAttribute("tabindex"); });
      await page.keyboard.press("Tab");
      assert.equal(await focused(page), "skip-link", "the first Tab reaches the skip link");
      assert.ok(await page.locator("#skip-link").isVisible(), "it shows while focused");
      await page.keyboard.press("Enter");
      return focused(page);
    };
    assert.equal(await skip(), "message");
    await page.getByRole("link", { name: "Memory" }).click();
    await page.locator("#memory-page").waitFor();
    assert.equal(await skip(), "memory-title");
    assert.match(page.url(), /#\/memory$/, "the route stays");
    await done(page);
  });
}
