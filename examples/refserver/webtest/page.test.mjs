// The page's other flows, as a new user meets them: sign-in, reload, the
// chat list, unavailable context, approvals, read-only users, memory,
// busy and empty sends, errors.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, base, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

test("Sign-in: a demo user or a pasted session token; the token is never shown", async () => {
  const page = await open();
  await shot(page, "sign-in");
  await signIn(page, "alice");
  assert.equal(await page.locator("#who-label").innerText(), "Alice · Owner");
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("askbi.session")).token);
  assert.ok(!(await page.content()).includes(token), "the token is not in the page");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.locator("#signin").waitFor();
  // Paste a token (here bob's, as a host's login would hand it out).
  const res = await fetch(base + "/demo/sign-in", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name: "bob" }) });
  const bob = (await res.json()).session_token;
  await page.getByText("Use a session token").click();
  await page.getByLabel("Session token").fill(bob);
  await page.getByRole("button", { name: "Sign in with token" }).click();
  await page.locator("#home").waitFor();
  assert.equal(await page.locator("#who-label").innerText(), "Signed in · Editor");
  assert.ok(!(await page.content()).includes(bob));
  // A token that no longer works sends the user back, with a sentence.
  await page.evaluate(() => sessionStorage.setItem("askbi.session", JSON.stringify({ token: "askbi_session_AAAAAAAAAAAAAAAAAAAAAAAAAA" })));
  await page.reload();
  await page.locator("#signin").waitFor();
  assert.equal(await page.locator("#signin-error").innerText(), "Your session has ended. Sign in again.");
  await done(page);
});

test("Reload keeps the session, the active chat, its chips and its work; only IDs are stored", async () => {
  const page = await open();
  await signIn(page, "alice");
  await pickContext(page, "Weekly signups", "Weekly signups");
  await send(page, "show signups by week");
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  assert.equal(await page.locator("#conv-title").innerText(), "show signups by week");
  assert.equal(await lastTurn(page).locator(".question p").innerText(), "show signups by week");
  assert.deepEqual(await lastTurn(page).locator(".question-items .sent-label").allInnerTexts(), ["Chart: Weekly signups"], "sent with the chart");
  assert.deepEqual(await page.locator("#chips .chip span").allInnerTexts(), ["Chart: Weekly signups"]);
  assert.equal(await page.locator(".work-completed").count(), 1);
  assert.equal(await page.locator(".chart-result").count(), 1);
  const stored = await page.evaluate(() => Object.entries(sessionStorage).filter(([k]) => k !== "askbi.session"));
  for (const [k, v] of stored) assert.match(v, /^conv_[a-z0-9]+$/, `${k} holds a conversation ID only`);
  // The chips stay across sends until removed.
  await send(page, "hello");
  assert.equal(await page.locator("#chips .chip").count(), 1);
  await page.getByRole("button", { name: "Remove Chart: Weekly signups" }).click();
  assert.equal(await page.locator("#chips .chip").count(), 0);
  await send(page, "hello again");
  await page.reload();
  await page.locator("#focus").waitFor();
  assert.equal(await page.locator("#chips .chip").count(), 0, "a removed chip stays removed");
  await done(page);
});

test("The conversation list opens saved chats by their titles", async () => {
  const page = await open();
  await signIn(page, "carol");
  await send(page, "show tickets by day");
  await page.getByRole("button", { name: "Close answer" }).click();
  await page.getByRole("button", { name: "Chats", exact: true }).click();
  const dialog = page.locator("#chats");
  await dialog.getByRole("button", { name: /^show tickets by day/ }).click();
  await page.locator("#focus").waitFor();
  await settled(page);
  assert.equal(await page.locator("#conv-title").innerText(), "show tickets by day");
  assert.equal(await page.locator(".chart-result").count(), 1);
  await done(page);
});

test("A removed or inaccessible item says it is no longer available", async () => {
  const page = await open();
  await signIn(page, "alice");
  await pickContext(page, "Revenue", "Revenue");
  await send(page, "delete the Revenue dashboard");
  await lastTurn(page).getByRole("button", { name: "Approve" }).click();
  await settled(page);
  await send(page, "hello");
  assert.equal(await page.locator("#notice").innerText(), "This item is no longer available. Select another item.");
  assert.equal(await page.locator("#chips .chip").count(), 0, "the item left the context");
  await done(page);
});

test("The approval card says what, on which target, and whether it can be undone", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "delete the Finance dashboard");
  const card = lastTurn(page).locator(".approval");
  await shot(page, "approval");
  const text = await card.innerText();
  for (const want of ["Delete dashboard", "Dashboard “Finance”", "Destructive", "This cannot be undone.", "Nothing has changed yet"]) {
    assert.ok(text.includes(want), `the card says "${want}": ${text}`);
  }
  for (const bad of ["dash_", "{", "approval_id", "apr_"]) assert.ok(!text.includes(bad), `no "${bad}" in the card`);
  await card.getByRole("button", { name: "Reject" }).click();
  await settled(page);
  assert.equal(await card.locator(".record").innerText(), "You rejected it. It did not run.");
  assert.equal(await card.getByRole("button", { name: "Approve" }).count(), 0, "the choice is made");
  await send(page, "delete the Finance dashboard");
  const second = lastTurn(page).locator(".approval");
  await second.getByRole("button", { name: "Approve" }).click();
  await settled(page);
  assert.equal(await second.locator(".record").innerText(), "You approved it. Done.");
  assert.match(await lastTurn(page).locator(".text").last().innerText(), /Deleted the Finance dashboard/);
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  assert.deepEqual(await page.locator(".approval .record").allInnerTexts(), ["You rejected it. It did not run.", "You approved it. Done."]);
  await done(page);
});

test("A read-only user is never offered an approval, and is told why", async () => {
  const page = await open();
  await signIn(page, "vic");
  await send(page, "delete the Growth overview dashboard");
  assert.equal(await page.locator(".approval").count(), 0, "no approval card");
  assert.match(await lastTurn(page).locator(".text").innerText(), /editor role/);
  await lastTurn(page).locator(".work-completed summary").click();
  // The deletion was never proposed: it is no step (approvals.test.mjs).
  assert.doesNotMatch(await lastTurn(page).locator(".work-completed").innerText(), /Deleted dashboard/);
  await shot(page, "read-only-refused");
  await done(page);
});

// approveAsPage posts an approve of the conversation's pending approval
// with the page's session, as a client that ignores the card would.
function approveAsPage(page) {
  return page.evaluate(async () => {
    const token = JSON.parse(sessionStorage.getItem("askbi.session")).token;
    const conv = sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active.")));
    const auth = { Authorization: "Bearer " + token };
    const view = await (await fetch(`/ai/conversations/${conv}`, { headers: auth })).json();
    const p = view.pending_approvals[0];
    const res = await fetch(`/ai/conversations/${conv}/approvals/${p.approval_id}/approve`, {
      method: "POST", headers: { ...auth, "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ tool: p.tool, arguments: p.arguments }) });
    return { status: res.status, code: (await res.json()).error?.code, pending: p.can_approve };
  });
}

for (const viewport of [desktop, phone]) {
  const size = `${viewport.width}x${viewport.height}`;
  test(`A viewer's card for a change by a remote tool says Ask an admin and offers no Approve (${size})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "vic");
    // create_annotation of the demo's Acme analytics connection: allowed,
    // and mutating, so an editor or above may approve it.
    await send(page, 'use the create_annotation tool with {"text": "launch"}');
    const card = lastTurn(page).locator(".approval");
    const check = async (when) => {
      await card.waitFor();
      assert.match(await card.innerText(), /Ask an admin/, "the card says to ask an admin " + when);
      assert.ok(await card.getByText("Ask an admin").isVisible(), "visibly " + when);
      assert.equal(await card.getByRole("button", { name: "Approve" }).count(), 0, "no Approve " + when);
      assert.ok(await card.getByRole("button", { name: "Reject" }).isVisible(), "Reject stays " + when);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), "no horizontal scroll " + when);
    };
    await check("live");
    await shot(page, "approval-ask-admin-" + size);
    // The server refuses the approve too, and keeps the approval.
    assert.deepEqual(await approveAsPage(page), { status: 403, code: "forbidden", pending: false });
    await page.reload();
    await page.locator("#focus").waitFor();
    await settled(page);
    await check("after reload");
    assert.deepEqual(await approveAsPage(page), { status: 403, code: "forbidden", pending: false }, "still pending, still refused");
    await card.getByRole("button", { name: "Reject" }).click();
    await settled(page);
    assert.equal(await card.locator(".record").innerText(), "You rejected it. It did not run.");
    await done(page);
  });
}

test("Memory settings: list, add, edit, delete and delete all, with confirmations; /remember saves", async () => {
  const page = await open();
  await signIn(page, "bob");
  await page.getByRole("link", { name: "Memory" }).click();
  await page.locator("#memory-page").waitFor();
  // The list loads after the page shows: wait for its empty state.
  await assert.doesNotReject(page.locator("#memory-empty").waitFor(), "an empty state");
  assert.ok(!await page.getByRole("button", { name: "Delete all" }).isVisible());
  await page.getByLabel("New memory").fill("I report in EUR");
  await page.getByRole("button", { name: "Add memory" }).click();
  const item = page.locator(".memory-item");
  await item.first().waitFor();
  assert.equal(await item.locator(".memory-text").innerText(), "I report in EUR");
  assert.match(await item.locator("time").innerText(), /Updated just now/);
  await page.getByRole("button", { name: "Edit memory: I report in EUR" }).click();
  await page.getByLabel("Edit memory").fill("I report in USD");
  await page.getByRole("button", { name: "Save" }).click();
  await page.locator(".memory-text", { hasText: "I report in USD" }).waitFor();
  // Deleting asks first; Cancel keeps it.
  await page.getByRole("button", { name: "Delete memory: I report in USD" }).click();
  assert.ok(await page.locator("#confirm").isVisible());
  assert.equal(await page.locator("#confirm-title").innerText(), "Delete this memory?");
  await page.locator("#confirm").getByRole("button", { name: "Cancel" }).click();
  assert.equal(await item.count(), 1);
  await page.getByRole("button", { name: "Delete memory: I report in USD" }).click();
  await page.locator("#confirm").getByRole("button", { name: "Delete" }).click();
  await page.locator("#memory-empty").waitFor();
  // /remember in the composer.
  await page.getByRole("link", { name: "Home" }).click();
  await send(page, "/remember Fiscal year starts in April");
  assert.equal(await lastTurn(page).locator(".text").innerText(), "Saved to memory.");
  await page.getByRole("link", { name: "Memory" }).click();
  await page.locator(".memory-text", { hasText: "Fiscal year starts in April" }).waitFor();
  // The active chat is one click away.
  await page.locator("#convbar-open", { hasText: "Continue: /remember Fiscal year starts in April" }).click();
  await page.locator("#focus").waitFor();
  assert.equal(await lastTurn(page).locator(".text").innerText(), "Saved to memory.");
  await page.getByRole("link", { name: "Memory" }).click();
  await page.getByLabel("New memory").fill("Weeks start on Monday");
  await page.getByRole("button", { name: "Add memory" }).click();
  await page.locator(".memory-text", { hasText: "Weeks start on Monday" }).waitFor();
  await shot(page, "memory");
  await page.getByRole("button", { name: "Delete all" }).click();
  assert.equal(await page.locator("#confirm-title").innerText(), "Delete all memories?");
  await page.locator("#confirm").getByRole("button", { name: "Delete all" }).click();
  await page.locator("#memory-empty").waitFor();
  assert.equal(await item.count(), 0);
  await done(page);
});

test("Send is disabled while a turn runs, and empty messages are not sent", async () => {
  const page = await open();
  await signIn(page, "alice");
  let posts = 0;
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route("**/ai/conversations/*/messages", async (route) => { posts++; await held; await route.continue(); });
  const input = page.getByLabel("Message", { exact: true });
  await input.fill("   ");
  await input.press("Enter");
  assert.equal(posts, 0, "a blank message is not sent");
  assert.ok(await page.locator("#send").isDisabled());
  await input.fill("show signups by week");
  await input.press("Enter");
  await page.waitForFunction(() => document.getElementById("composer").getAttribute("aria-busy") === "true");
  await input.fill("show signups by country");
  assert.ok(await page.locator("#send").isDisabled(), "Send is disabled while the turn runs");
  await input.press("Enter");
  await page.waitForTimeout(100);
  assert.equal(posts, 1, "a second message waits for the first answer");
  release();
  await settled(page);
  assert.ok(await page.locator("#send").isEnabled(), "Send works again once the answer is in");
  await done(page);
});

test("Errors are readable sentences, and every route answers JSON errors", async () => {
  for (const [method, path, status] of [["GET", "/nope", 404], ["POST", "/", 405], ["GET", "/web/missing.js", 404], ["GET", "/ai/nope", 401], ["GET", "/demo/nope", 404]]) {
    const res = await fetch(base + path, { method });
    assert.equal(res.status, status, `${method} ${path}`);
    const doc = await res.json();
    assert.ok(doc.error && doc.error.code && doc.error.message, `${method} ${path} answers a JSON error`);
  }
  const page = await open();
  await signIn(page, "alice");
  // The server's own refusal, as the page words it (the composer does not
  // send a message over the limit: chat.test.mjs).
  assert.equal(await page.evaluate(async () => (await import("/web/js/api.js")).sentence("too_large", "message: at most 4000 characters")),
    "Message can have at most 4,000 characters.");
  // A chat that is gone, restored after a reload, is let go quietly.
  await page.evaluate(() => sessionStorage.setItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active.")), "conv_gone"));
  await page.reload();
  await page.locator("#idle").waitFor();
  assert.ok(!await page.locator("#focus").isVisible());
  await done(page);
});
