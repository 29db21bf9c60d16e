// The demo model's text streams over time, as a model's does, and Stop
// ends a running turn on the server. This file's server runs the mock
// model with a pause per word (TestBrowser sets -mock-delay).

import { test, before, after } from "node:test";
import { launch, close, open, done, signIn, settled, lastTurn, shot, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// watchText records each text the newest answer shows, as the page
// draws it.
async function watchText(page) {
  await page.evaluate(() => {
    window.seen = [];
    new MutationObserver(() => {
      const t = [...document.querySelectorAll(".turn")].pop()?.querySelector(".text");
      if (t && t.textContent && window.seen[window.seen.length - 1] !== t.textContent) window.seen.push(t.textContent);
    }).observe(document.getElementById("turns"), { childList: true, subtree: true, characterData: true });
  });
}

for (const [name, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`The demo model's answer arrives word by word (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    await watchText(page);
    const input = page.getByLabel("Message", { exact: true });
    await input.fill("hello");
    await input.press("Enter");
    await settled(page);
    const seen = await page.evaluate(() => window.seen);
    const final = await lastTurn(page).locator(".text").innerText();
    assert.ok(final.split(" ").length > 8, "a long enough answer: " + final);
    assert.ok(seen.length >= 8, `the answer grew in steps, not at once: ${JSON.stringify(seen)}`);
    assert.ok(seen.slice(0, -1).every((s) => final.startsWith(s.trim())), "each step is a start of the answer");
    await shot(page, "streaming-" + name);
    await done(page);
  });
}
