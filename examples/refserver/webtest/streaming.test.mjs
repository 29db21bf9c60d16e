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

// view is the conversation as the chat API returns it.
const view = (page, id) => page.evaluate(async (id) => {
  const { token } = JSON.parse(sessionStorage.getItem("askbi.session"));
  const res = await fetch("/ai/conversations/" + id, { headers: { Authorization: "Bearer " + token } });
  return res.json();
}, id);
const activeConv = (page) => page.evaluate(() => sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active."))));

for (const [name, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`Stop, by click or Esc, cancels the turn on the server (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const input = page.getByLabel("Message", { exact: true });
    // The demo model's intro (one streamed piece) leads its first answer;
    // the answer's own words follow it.
    const answer = () => lastTurn(page).locator(".text").innerText().then((t) => t.replace(/^You are talking to the built-in demo model[^\n]*\n\n/, ""));
    for (const how of ["click", "Esc"]) {
      await input.fill("hello");
      await input.press("Enter");
      await page.waitForFunction(() => ([...document.querySelectorAll(".turn")].pop().querySelector(".text")?.textContent || "").split("\n\n").pop().split(" ").length > 2);
      assert.ok(await page.locator("#send").isHidden(), "Stop takes Send's place");
      if (how === "click") await page.getByRole("button", { name: "Stop" }).click();
      else await input.press("Escape");
      await settled(page);
      const at = await answer();
      await page.waitForTimeout(300); // several words' time
      assert.equal(await answer(), at, `the answer stops growing (${how})`);
      assert.ok(at.split(" ").length < 12, "it was cut short: " + at);
      assert.equal(await lastTurn(page).locator(".turn-stopped").innerText(), "You stopped this answer.");
      assert.equal(await page.locator("#activity").innerText(), "Stopped.");
      assert.ok(await page.locator("#send").isVisible(), "Send is back");
      assert.equal(await page.evaluate(() => document.activeElement.id), "message");
    }
    await shot(page, "stopped-" + name);
    const id = await activeConv(page);
    let turns;
    for (let i = 0; i < 50; i++) {
      turns = (await view(page, id)).turns.map((t) => t.state);
      if (!turns.includes("running")) break;
      await page.waitForTimeout(50);
    }
    assert.deepEqual(turns, ["stopped", "stopped"], "the server stopped both turns");
    await page.reload();
    await page.locator("#focus").waitFor();
    await settled(page);
    assert.equal(await page.locator(".turn-stopped").count(), 2, "a reload shows them stopped");
    await done(page);
  });
}
