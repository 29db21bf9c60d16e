// Issue 41, a slow answer: after 10 s of "Working…" with nothing new from
// the server, the chat says the answer is taking longer and offers Stop,
// which stops it. TestBrowser gives this file a model that waits 20 s
// before each word, and the test drives the page's clock (no timed
// assertion: it moves the page's timers on while the server has sent
// nothing yet, and waits on the page's states). At 1280×800 in the light
// theme and 375×740 in the dark one, by keyboard.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, lastTurn, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

for (const [name, viewport, colorScheme] of [["desktop-light", desktop, "light"], ["phone-dark", phone, "dark"]]) {
  test(`A slow answer says it is taking longer and offers Stop (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await page.clock.install(); // from the next load on, the test moves the page's timers on
    await page.reload();
    await signIn(page, "alice");
    const box = page.getByLabel("Message", { exact: true });
    await box.focus();
    await page.keyboard.type("hello");
    await page.keyboard.press("Enter");
    const turn = lastTurn(page);
    await turn.locator(".thinking").waitFor();
    const note = turn.locator(".slow-note");
    assert.equal(await note.count(), 0, "nothing said before its time");
    await page.clock.runFor(9000);
    assert.equal(await note.count(), 0, "not at 9 s");
    await page.clock.runFor(1500);
    await note.waitFor();
    assert.equal(await note.innerText(), "This is taking longer than usual. You can keep waiting, or Stop it.");
    assert.equal(await page.locator("#activity").innerText(), "This is taking longer than usual. You can keep waiting, or stop it.");
    await shot(page, `slow-${name}`);
    // Stop, by keyboard: from the message back to the note's Stop.
    const stop = note.getByRole("button", { name: "Stop" });
    for (let i = 0; i < 20 && !(await stop.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press("Shift+Tab");
    assert.ok(await stop.evaluate((el) => el === document.activeElement), "the keyboard reaches Stop");
    await page.keyboard.press("Enter");
    await turn.locator(".turn-stopped").waitFor();
    assert.equal(await note.count(), 0, "the note goes once it stopped");
    assert.equal(await page.locator("#composer").getAttribute("aria-busy"), "false");
    await done(page);
  });
}
