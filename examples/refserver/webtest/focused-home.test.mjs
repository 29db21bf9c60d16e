// Seed 000 Test Plan, "Focused Home chat": each item is one test.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const visible = (page, sel) => page.locator(sel).isVisible();

test("The idle Home page keeps its current layout.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await shot(page, "home-idle");
  assert.match(await page.locator("#greeting").innerText(), /, Alice$/);
  for (const sel of ["#idle", "#composer", "#discover", "#suggestions", "#recent-items", "#recent-chats"]) {
    assert.ok(await visible(page, sel), sel + " is shown");
  }
  assert.ok(!await visible(page, "#focus"), "no transcript while idle");
  assert.ok(await page.locator("#recent-items li").count() >= 3, "recent items are listed");
  // The composer: Add context at the bottom left, status and Send at the
  // bottom right, below the input.
  const input = await page.locator("#message").boundingBox();
  const add = await page.getByRole("button", { name: "Add context" }).boundingBox();
  const sendBtn = await page.getByRole("button", { name: "Send" }).boundingBox();
  const box = await page.locator("#composer").boundingBox();
  assert.ok(add.y >= input.y + input.height - 1 && sendBtn.y >= input.y + input.height - 8, "the controls are below the input");
  assert.ok(add.x - box.x < 40, "Add context is at the left");
  assert.ok(box.x + box.width - (sendBtn.x + sendBtn.width) < 40, "Send is at the right");
  assert.ok(await page.getByRole("button", { name: "Send" }).isDisabled(), "an empty message cannot be sent");
  await done(page);
});

test("The first submitted message enters the focused layout before the answer returns.", async () => {
  const page = await open();
  await signIn(page, "alice");
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route("**/ai/conversations/*/messages", async (route) => { await held; await route.continue(); });
  await page.getByLabel("Message", { exact: true }).fill("show signups by week");
  await page.getByLabel("Message", { exact: true }).press("Enter");
  await page.locator("#focus").waitFor({ state: "visible" });
  assert.ok(!await visible(page, "#idle"), "the greeting is gone while the answer is pending");
  assert.equal(await lastTurn(page).locator(".question").innerText(), "show signups by week");
  assert.equal(await page.locator(".chart-result").count(), 0, "no answer yet");
  assert.ok(await page.locator(".thinking").isVisible(), "the pending answer says it is working");
  await shot(page, "focused-pending");
  release();
  await settled(page);
  assert.equal(await page.locator(".chart-result").count(), 1, "the answer arrived");
  await done(page);
});

// One chat, long enough to scroll, for the next three tests.
let chat;

test("The transcript is centered and scrolls independently of the composer.", async () => {
  chat = await open();
  await signIn(chat, "alice");
  for (const q of ["show signups by week", "show signups by country", "show mrr by month"]) await send(chat, q);
  const vw = chat.viewportSize().width;
  const col = await chat.locator("#turns").boundingBox();
  assert.ok(Math.abs(col.x + col.width / 2 - vw / 2) <= 2, `the column is centered (${col.x}, ${col.width})`);
  const t = await chat.evaluate(() => {
    const s = document.getElementById("transcript");
    return { overflow: getComputedStyle(s).overflowY, scroll: s.scrollHeight, client: s.clientHeight, page: document.scrollingElement.scrollHeight, vh: innerHeight };
  });
  assert.equal(t.overflow, "auto");
  assert.ok(t.scroll > t.client, "the transcript overflows, so it scrolls");
  assert.ok(t.page <= t.vh, "the page itself does not scroll");
  const before = await chat.locator("#composer").boundingBox();
  await chat.evaluate(() => { document.getElementById("transcript").scrollTop = 0; });
  const after = await chat.locator("#composer").boundingBox();
  assert.deepEqual(after, before, "scrolling the transcript leaves the composer where it is");
  assert.ok(await chat.locator(".turn").first().isVisible());
  await chat.evaluate(() => { const s = document.getElementById("transcript"); s.scrollTop = s.scrollHeight; });
});

test("The composer stays visible at the bottom and does not cover the latest message.", async () => {
  await send(chat, "show signups by week");
  await shot(chat, "focused-chat");
  const vh = chat.viewportSize().height;
  const composer = await chat.locator("#composer").boundingBox();
  assert.ok(composer.y + composer.height <= vh && composer.y + composer.height >= vh - 40, "the composer sits at the bottom");
  const last = await lastTurn(chat).boundingBox();
  const transcript = await chat.locator("#transcript").boundingBox();
  assert.ok(last.y + last.height <= composer.y + 1, `the latest message ends above the composer: ${JSON.stringify({ last, composer })}`);
  assert.ok(last.y + last.height <= transcript.y + transcript.height + 1, "and is scrolled into view");
});

test("Home discovery, onboarding, and activity content do not remain in the focused layout.", async () => {
  for (const sel of ["#idle", "#discover", "#greeting", "#suggestions", "#recent-items", "#recent-chats"]) {
    assert.ok(!await visible(chat, sel), sel + " is hidden while the chat is focused");
  }
  assert.ok(await visible(chat, "#composer"));
});

test("Closing the answer clears the Home chat and restores the normal Home content.", async () => {
  await chat.getByRole("button", { name: "Close answer" }).click();
  for (const sel of ["#idle", "#discover", "#recent-chats"]) assert.ok(await visible(chat, sel), sel + " is back");
  assert.ok(!await visible(chat, "#focus"));
  assert.equal(await chat.locator(".turn").count(), 0, "the chat is cleared");
  assert.equal(await chat.evaluate(() => Object.keys(sessionStorage).filter((k) => k.startsWith("askbi.active")).length), 0,
    "the active conversation reference is gone");
  await chat.reload();
  await chat.locator("#idle").waitFor();
  assert.ok(!await visible(chat, "#focus"), "a reload does not bring it back");
  // It stays in history: Recent chats opens it again.
  await chat.locator("#recent-chats").getByRole("button", { name: /show signups by week/ }).first().click();
  await chat.locator("#focus").waitFor();
  await settled(chat);
  assert.equal(await chat.locator(".turn").count(), 4);
  await done(chat);
});

test("Keyboard focus remains usable through the layout change.", async () => {
  const page = await open();
  const active = () => page.evaluate(() => {
    const a = document.activeElement;
    return a && (a.id || a.getAttribute("aria-label") || (a.labels && a.labels[0] && a.labels[0].textContent.trim()) ||
      a.textContent.trim() || a.tagName);
  });
  const tabTo = async (want, key = "Tab") => {
    for (let i = 0; i < 60; i++) {
      if (String(await active()).match(want)) return;
      await page.keyboard.press(key);
    }
    assert.fail("keyboard focus never reached " + want + "; last: " + await active());
  };
  // Sign in with the keyboard alone.
  await tabTo(/^Alice/);
  await page.keyboard.press("Space");
  await tabTo(/^Sign in$/);
  await page.keyboard.press("Enter");
  await page.locator("#home").waitFor();
  assert.equal(await active(), "message", "the composer has focus after sign-in");
  // Add context from the keyboard: open, search, choose with the arrows.
  await tabTo(/^add-context$/);
  await page.keyboard.press("Enter");
  await page.locator("#picker").waitFor();
  assert.equal(await active(), "picker-query");
  await page.keyboard.type("Growth overview");
  // The rows of this query, not the Recent list still shown while it runs.
  await page.locator('#picker-results[data-query="Growth overview"] .pick-row').first().waitFor();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  await page.locator("#picker").waitFor({ state: "hidden" });
  assert.equal(await page.locator("#chips .chip").count(), 1);
  // Send: the layout changes, focus stays in the composer.
  await tabTo(/^message$/, "Shift+Tab");
  await page.keyboard.type("show signups by week");
  await page.keyboard.press("Enter");
  await page.locator("#focus").waitFor();
  assert.equal(await active(), "message", "focus stayed in the composer through the change");
  await settled(page);
  assert.equal(await active(), "message");
  // Every control of the answer is reachable; focus is visible.
  await tabTo(/^Add to dashboard$|^Dashboard$|^place-/, "Shift+Tab");
  await tabTo(/^close-answer$/, "Shift+Tab");
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, "none", "keyboard focus is visible");
  await page.keyboard.press("Enter");
  await page.locator("#idle").waitFor();
  assert.equal(await active(), "message", "after Close answer, focus is back in the composer");
  // axe measures contrast once the idle page has faded in.
  await page.waitForFunction(() => !document.getElementById("home").classList.contains("leaving"));
  await done(page);
});

test("Small screens keep all chat actions visible without horizontal scrolling.", async () => {
  const page = await open({ viewport: phone });
  await signIn(page, "alice");
  // Nothing scrolls sideways, and nothing is cut off at the right: every
  // scroll container fits, and every element ends inside the viewport
  // (but what scrolls inside a table's own frame).
  const width = () => page.evaluate(() => {
    let right = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
    for (const el of document.querySelectorAll("body *")) {
      if (el.closest(".table-wrap, .vh, dialog:not([open])") || !el.getClientRects().length) continue;
      right = Math.max(right, el.getBoundingClientRect().right);
      if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible") right = Math.max(right, innerWidth + el.scrollWidth - el.clientWidth);
    }
    return Math.round(right);
  });
  assert.ok(await width() <= phone.width, "no horizontal scrolling while idle: " + await width());
  await shot(page, "phone-idle");
  await pickContext(page, "Growth overview", "Growth overview");
  await send(page, "show signups by week");
  await send(page, "delete the Revenue dashboard");
  await shot(page, "phone-chat");
  assert.ok(await width() <= phone.width, "no horizontal scrolling in the chat: " + await width());
  const inside = async (locator, what) => {
    await locator.scrollIntoViewIfNeeded();
    const b = await locator.boundingBox();
    assert.ok(b && b.x >= 0 && b.x + b.width <= phone.width + 0.5 && b.y >= 0 && b.y + b.height <= phone.height + 0.5,
      `${what} is on screen: ${JSON.stringify(b)}`);
  };
  await inside(page.getByRole("button", { name: "Add context" }), "Add context");
  await inside(page.locator("#send"), "Send");
  await inside(page.getByRole("button", { name: "Close answer" }), "Close answer");
  await inside(page.getByRole("button", { name: /^Remove / }), "the chip's remove button");
  await inside(page.locator(".chart-result").first(), "the chart result");
  await inside(page.getByRole("button", { name: "Add to dashboard" }), "Add to dashboard");
  await inside(page.getByRole("button", { name: "Approve" }), "Approve");
  await inside(page.getByRole("button", { name: "Reject" }), "Reject");
  // The composer keeps clear of the safe-area inset.
  const safe = await page.evaluate(() => [...document.styleSheets].flatMap((s) => [...s.cssRules])
    .some((r) => r.selectorText && r.selectorText.includes(".composer") && r.cssText.includes("safe-area-inset-bottom")));
  assert.ok(safe, "the composer's margin includes env(safe-area-inset-bottom)");
  await done(page);
});

test("Reduced-motion settings do not receive a layout transition animation.", async () => {
  const animations = async (reducedMotion) => {
    const page = await open({ reducedMotion });
    await signIn(page, "alice");
    await page.evaluate(() => {
      window.seen = [];
      const home = document.getElementById("home");
      new MutationObserver(() => {
        for (const [cls, id] of [["entering", "focus"], ["leaving", "idle"]]) {
          if (home.classList.contains(cls)) {
            const s = getComputedStyle(document.getElementById(id));
            window.seen.push(`${cls}:${s.animationName}:${s.animationDuration}`);
          }
        }
      }).observe(home, { attributes: true, attributeFilter: ["class"] });
    });
    await send(page, "hello");
    await page.getByRole("button", { name: "Close answer" }).click();
    const seen = await page.evaluate(() => window.seen);
    // axe measures text as drawn: not half faded in.
    await page.waitForFunction(() => !document.getElementById("home").classList.contains("leaving"));
    await done(page);
    return seen;
  };
  const moving = await animations("no-preference");
  assert.ok(moving.includes("entering:focus-in:0.18s"), "entering the chat fades and moves in: " + moving);
  assert.ok(moving.includes("leaving:fade-in:0.18s"), "leaving it fades: " + moving);
  const still = await animations("reduce");
  assert.ok(still.length >= 2, "the layout changed: " + still);
  for (const s of still) assert.match(s, /:none:/, "no animation under reduced motion: " + s);
});
