// Issue 27, the demo model: it says on the page and in its first answer
// that it is the built-in demo model and how to configure a real one;
// with a dataset selected any question about it charts it, "last 8
// weeks" included; with a chart selected it reads the chart, shows it
// and says what it draws, and a period it does not draw makes a preview; "Put it on the X dashboard" after a preview proposes
// the placement, approved here by keyboard. At 1280×800 and 375×740.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// pick adds the item called name of group (Datasets, Charts) to the
// context with the picker (a chart may have a dataset's name).
async function pick(page, group, name) {
  await page.getByRole("button", { name: "Add context" }).click();
  await page.getByLabel("Search dashboards, charts, datasets and connections").fill(name);
  await page.locator(`#picker-results[data-query="${name}"]`).waitFor();
  await page.locator("#picker-results .pick-group").filter({ has: page.getByRole("heading", { name: group }) })
    .locator(".pick-row").filter({ has: page.getByText(name, { exact: true }) }).first().click();
  await page.locator("#picker").waitFor({ state: "hidden" });
}

for (const [size, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`${size}: the demo model says what it is, charts the selected dataset for the last 8 weeks, and proposes placing the preview`, async () => {
    const page = await open({ viewport });
    await signIn(page, viewport === phone ? "bob" : "alice");
    const note = page.locator("#model-note");
    assert.ok(await note.isVisible(), "the page names the model");
    assert.match(await note.innerText(), /built-in demo model.*-provider openai or -provider anthropic and -model NAME/s);

    await send(page, "hello");
    assert.match(await lastTurn(page).locator(".text").first().innerText(), /^You are talking to the built-in demo model.*-model NAME/s,
      "the first answer says it too");
    await send(page, "hello again");
    assert.doesNotMatch(await lastTurn(page).locator(".text").first().innerText(), /built-in demo model/, "once");

    await pick(page, "Datasets", "Weekly signups");
    await send(page, "weekly signups last 8 weeks");
    const chart = lastTurn(page).locator(".chart-result");
    assert.equal(await chart.count(), 1, "the question about the selected dataset is charted, not answered with the help text");
    assert.match(await chart.locator(".chart-title").innerText(), /^Weekly signups, last 8 weeks\b/);
    assert.ok(await chart.locator("svg.chart-svg").count(), "and drawn");
    await shot(page, `demo-model-chart-${size}`);

    await send(page, "Put it on the Growth overview dashboard");
    const card = lastTurn(page).locator(".approval");
    assert.match(await card.innerText(), /Growth overview/);
    assert.match(await card.innerText(), /Weekly signups, last 8 weeks/, "the card names the chart");
    assert.match(await card.innerText(), /Expires at \d{1,2}:\d{2}, in 5 minutes\./, "and says when it expires");
    // The new card has the focus: Tab to Approve, Enter.
    await page.waitForFunction(() => document.activeElement && document.activeElement.closest(".approval"));
    for (let i = 0; i < 4 && !(await page.evaluate(() => document.activeElement.textContent === "Approve")); i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await settled(page);
    await page.waitForFunction(() => [...document.querySelectorAll(".chart-result .chart-head .badge")].some((b) => b.textContent === "Saved"));
    assert.match(await lastTurn(page).locator(".answer > .text").last().innerText(), /Added Weekly signups, last 8 weeks to Growth overview\./);
    await shot(page, `demo-model-placed-${size}`);
    await done(page);
  });
}

for (const [size, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`${size}: with a chart selected, a question about it shows the chart and says what it draws`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    await pick(page, "Charts", "Weekly signups");
    await send(page, "How is this doing?");
    const turn = lastTurn(page);
    const chart = turn.locator(".chart-result");
    assert.equal(await chart.count(), 1, "the selected chart is shown");
    assert.match(await chart.locator(".chart-title").innerText(), /^Weekly signups\b/);
    assert.equal(await chart.locator(".chart-head .badge").innerText(), "Saved", "the saved chart itself, not a preview");
    assert.ok(await chart.locator("svg.chart-svg").count(), "and drawn");
    assert.match(await turn.locator(".answer > .text").last().innerText(),
      /Weekly signups is a line chart of signups by week with 12 points\. Signups ran from [\d,]+ to [\d,]+ a week over 12 weeks \(7 Sep to 23 Nov\), [\d,]+ in all\./,
      "the answer says what it draws, from the aggregates the demo shares");
    await shot(page, `demo-model-selected-chart-${size}`);

    await send(page, "And the last 4 weeks?");
    const preview = lastTurn(page).locator(".chart-result").last(); // after the chart it read again
    assert.match(await preview.locator(".chart-title").innerText(), /^Weekly signups, last 4 weeks\b/, "a period the chart does not draw makes a preview");
    assert.equal(await preview.locator(".chart-head .badge").innerText(), "Preview");
    await done(page);
  });
}
