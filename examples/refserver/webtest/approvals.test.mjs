// Approvals and what they leave (issue 27): a call refused before it was
// proposed is no step of the work summary. Each test runs at 1280×800
// and 375×740, live and after a reload.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, desktop, phone, assert } from "./lib.mjs";

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
