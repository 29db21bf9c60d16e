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

for (const [name, viewport] of views) {
  test(`A failed send keeps the typed text and offers Retry; a counter warns before the limit (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const input = page.getByLabel("Message", { exact: true });
    await page.route("**/ai/conversations/*/messages", (route) => route.abort());
    await input.fill("show signups by week");
    await input.press("Enter");
    await settled(page);
    const error = lastTurn(page).locator(".turn-error");
    assert.equal(await error.innerText(), "The server cannot be reached. Check that it is running, then try again. Retry");
    assert.equal(await input.inputValue(), "show signups by week", "the typed text is back in the composer");
    assert.equal(await status(page), "The server cannot be reached. Check that it is running, then try again.");
    await shot(page, "send-failed-" + name);
    // The one failed load is the browser's note of the cut request.
    assert.equal(page.problems.splice(0).join(), "console: Failed to load resource: net::ERR_FAILED");
    await page.unroute("**/ai/conversations/*/messages");
    await error.getByRole("button", { name: "Retry" }).click();
    await settled(page);
    assert.equal(await page.locator(".turn").count(), 1, "Retry sends the same message once");
    assert.equal(await lastTurn(page).locator(".question").innerText(), "show signups by week");
    // The demo model's first answer says what it is, then answers.
    assert.match(await lastTurn(page).locator(".text").innerText(),
      /^You are talking to the built-in demo model[^\n]*\n\nI used Weekly signups because it matches “signups” and “week”\. Signups ran from [\d,]+ to [\d,]+ a week over 12 weeks/);
    assert.equal(await input.inputValue(), "", "the composer is empty once it was sent");

    // The counter: quiet, then a warning near the limit, then over it
    // (Send off, Enter sends nothing).
    const counter = page.locator("#counter");
    await input.fill("x".repeat(3000));
    assert.equal(await counter.innerText(), "");
    await input.fill("x".repeat(3950));
    assert.equal(await counter.innerText(), "50 characters left");
    await input.fill("x".repeat(4012));
    assert.equal(await counter.innerText(), "12 over the 4,000-character limit");
    assert.ok(await page.locator("#send").isDisabled(), "Send is off over the limit");
    await input.press("Enter");
    assert.equal(await page.locator(".turn").count(), 1, "nothing was sent");
    assert.equal(await input.inputValue(), "x".repeat(4012), "and nothing was lost");
    await shot(page, "counter-" + name);
    await done(page);
  });
}

for (const [name, viewport] of views) {
  test(`New chat; rename and delete chats; copy an answer and ask again (${name})`, async () => {
    const page = await open({ viewport });
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(page.url()).origin });
    await signIn(page, "bob"); // the other tests' chats are alice's
    await send(page, "show signups by week");
    const answer = await lastTurn(page).locator(".text").innerText();
    assert.match(answer, /\n\nI used Weekly signups because it matches “signups” and “week”\./, "the demo model's first answer, after its intro");
    await lastTurn(page).getByRole("button", { name: "Copy answer" }).click();
    await page.waitForFunction(() => document.getElementById("activity").textContent === "Answer copied.");
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), answer);
    await lastTurn(page).getByRole("button", { name: "Ask again" }).click();
    await settled(page);
    assert.deepEqual(await page.locator(".turn .question").allInnerTexts(), ["show signups by week", "show signups by week"], "asked once more");
    assert.match(await lastTurn(page).locator(".text").innerText(), /Weekly signups/);

    // New chat, from Home and from another page.
    await page.getByRole("button", { name: "New chat" }).click();
    await page.locator("#idle").waitFor();
    assert.ok(await page.locator("#focus").isHidden(), "the chat is put away");
    assert.equal(await focused(page), "message");
    await send(page, "show signups by country");
    await page.getByRole("link", { name: "Memory" }).click();
    await page.getByRole("button", { name: "New chat" }).click();
    await page.locator("#idle").waitFor();
    assert.equal(await page.locator(".turn").count(), 0);

    // Rename by keyboard: Esc cancels, Enter saves.
    const chats = page.locator("#chats");
    const titles = () => chats.locator(".row-label").allInnerTexts();
    await page.getByRole("button", { name: "Chats", exact: true }).click();
    await chats.locator(".row-label").first().waitFor();
    assert.deepEqual(await titles(), ["show signups by country", "show signups by week"]);
    await chats.getByRole("button", { name: "Rename chat: show signups by week" }).click();
    const field = chats.getByLabel("Chat name");
    assert.equal(await focused(page), "Chat name");
    await field.press("Escape");
    assert.ok(await chats.isVisible(), "Esc leaves the name field, not the dialog");
    assert.equal(await focused(page), "Rename chat: show signups by week");
    await page.keyboard.press("Enter");
    await page.keyboard.type("  ");
    await page.keyboard.press("Enter");
    assert.equal(await chats.getByRole("alert").innerText(), "Title must be 1 to 100 characters.", "a blank name is refused in words");
    await field.fill("Weekly signups");
    await field.press("Enter");
    await chats.locator(".row-label", { hasText: "Weekly signups" }).waitFor();
    assert.deepEqual(await titles(), ["Weekly signups", "show signups by country"]);
    assert.equal(await chats.locator("#chats-status").innerText(), "Renamed to “Weekly signups”.");
    await shot(page, "chats-" + name);

    // Delete asks first; deleting the open chat puts it away.
    await chats.locator(".row", { hasText: "Weekly signups" }).click();
    await page.locator("#focus").waitFor();
    assert.equal(await page.locator("#conv-title").innerText(), "Weekly signups");
    await page.getByRole("button", { name: "Chats", exact: true }).click();
    await chats.getByRole("button", { name: "Delete chat: Weekly signups" }).click();
    assert.equal(await page.locator("#confirm-title").innerText(), "Delete this chat?");
    await page.locator("#confirm").getByRole("button", { name: "Cancel" }).click();
    assert.deepEqual(await titles(), ["Weekly signups", "show signups by country"]);
    await chats.getByRole("button", { name: "Delete chat: Weekly signups" }).click();
    await page.locator("#confirm").getByRole("button", { name: "Delete" }).click();
    await page.waitForFunction(() => document.getElementById("chats-status").textContent === "Deleted “Weekly signups”.");
    assert.deepEqual(await titles(), ["show signups by country"]);
    assert.ok(await page.locator("#focus").isHidden(), "the deleted chat is no longer open");
    await chats.getByRole("button", { name: "Delete chat: show signups by country" }).click();
    await page.locator("#confirm").getByRole("button", { name: "Delete" }).click();
    await chats.getByText("No chats yet.").waitFor();
    await chats.getByRole("button", { name: "Close" }).click();
    await page.reload();
    await page.locator("#idle").waitFor();
    await page.getByRole("button", { name: "Chats", exact: true }).click();
    await chats.getByText("No chats yet.").waitFor();
    await done(page);
  });
}

for (const [name, viewport] of views) {
  test(`A suggestion sends when clicked, and none is destructive (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "carol"); // her own chats
    const suggestions = await page.locator("#suggestions button").allInnerTexts();
    assert.ok(suggestions.length >= 3, "suggestions: " + suggestions);
    for (const s of suggestions) assert.doesNotMatch(s, /delete|remove|drop|clear|\/remember/i, "a suggestion that changes nothing");
    await page.locator("#suggestions").getByRole("button", { name: "What can you do?" }).click();
    await page.locator("#focus").waitFor();
    await settled(page);
    assert.equal(await lastTurn(page).locator(".question").innerText(), "What can you do?");
    assert.match(await lastTurn(page).locator(".text").innerText(), /\S/, "answered");
    assert.equal(await page.getByLabel("Message", { exact: true }).inputValue(), "", "nothing left to send");
    assert.equal(await focused(page), "message");
    await done(page);
  });
}
