// The chart component on the page (package chartview's chart.js, the
// one the MCP app draws with too): axis titles, readable dates, the
// tooltip on hover, on tap and from the keyboard, the legend, the table
// view, tick text that keeps its size on a phone, and titles from the
// dataset's own name. Each at 1280×800 and 375×740.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// tickPx is the on-screen size of a chart's tick text.
const tickPx = (svg) => svg.locator(".tick").first().evaluate((t) => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getScreenCTM().a);

for (const [viewport, size] of [[desktop, "1280"], [phone, "375"]]) {
  test(`A chart has axis titles, readable dates, a tooltip, a table view and 11 px text at ${size} px.`, async () => {
    const page = await open({ viewport, hasTouch: viewport === phone });
    await signIn(page, "alice");
    await send(page, "show signups by week");
    const result = page.locator(".chart-result").last();
    const svg = result.locator("svg.chart-svg");
    await svg.waitFor();
    assert.deepEqual(await svg.locator(".axis-title").allTextContents(), ["week", "signups"], "axis titles from the field names");
    const ticks = await svg.locator("text.tick[text-anchor=middle], text.tick[text-anchor=end]").allTextContents();
    assert.ok(ticks.some((t) => /^\d{1,2} (Sep|Oct|Nov)$/.test(t)), `dates read as "7 Sep": ${ticks.join(", ")}`);
    assert.ok(!ticks.some((t) => /\d{4}-\d{2}/.test(t)), "no ISO dates on the axis");
    assert.match(await svg.getAttribute("aria-label"), /^Line chart of signups, \d+ points from \d{1,2} [A-Z][a-z]{2} to \d{1,2} [A-Z][a-z]{2}$/);
    const px = await tickPx(svg);
    assert.ok(px >= 11, `tick text is ${px.toFixed(1)} px on screen, want at least 11`);

    // Hover (or tap on a phone) shows the values at a point.
    const hit = svg.locator(".hit").nth(2);
    if (viewport === phone) await hit.tap(); else await hit.hover();
    const tip = result.getByRole("tooltip");
    await tip.waitFor();
    assert.match(await tip.innerText(), /^\d{1,2} [A-Z][a-z]{2}\nsignups: [\d,]+$/);
    await shot(page, `chart-tooltip-${size}`);
    // From the keyboard: the chart takes focus, arrows move the tooltip.
    await svg.focus();
    await page.keyboard.press("ArrowRight");
    assert.match(await tip.innerText(), /^\d{1,2} [A-Z][a-z]{2}\nsignups/);
    await page.keyboard.press("Escape");
    assert.ok(await tip.isHidden(), "Escape hides the tooltip");

    // The table view shows the same points as rows.
    const points = await svg.locator(".dot").count();
    await result.getByRole("button", { name: "Table" }).click();
    assert.equal(await result.getByRole("button", { name: "Table" }).getAttribute("aria-pressed"), "true");
    const table = result.locator(".chart-tabular table");
    assert.equal(await table.locator("tbody tr").count(), points, "one row per point");
    assert.deepEqual(await table.locator("thead th").allInnerTexts(), ["week", "signups"]);
    assert.ok(await svg.isHidden(), "the table replaces the chart");
    await shot(page, `chart-table-${size}`);
    await result.getByRole("button", { name: "Table" }).click();
    assert.ok(await svg.isVisible(), "and the chart comes back");
    await done(page);
  });

  test(`Several series get a legend and one tooltip line each at ${size} px.`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    // The page's own chart module, as it serves it.
    await page.evaluate(async () => {
      const { draw } = await import("/web/js/chart-svg.js");
      const box = document.createElement("section");
      box.id = "two-series";
      box.setAttribute("aria-label", "Two series");
      box.append(draw({ chart_type: "bar", x_field: "month", labels: ["2026-09", "2026-10", "2026-11"],
        series: [{ name: "signups", values: [10, 12, 15] }, { name: "trials", values: [4, null, 7] }] }));
      document.body.prepend(box);
    });
    const box = page.locator("#two-series");
    assert.deepEqual(await box.locator(".legend li").allInnerTexts(), ["signups", "trials"]);
    assert.deepEqual(await box.locator(".axis-title").allTextContents(), ["month"], "no one value axis title for two series");
    assert.equal(await box.locator("rect.bar").count(), 5, "one bar per value, none for the missing one");
    await box.locator(".hit").nth(1).click();
    assert.equal(await box.getByRole("tooltip").innerText(), "Oct 2026\nsignups: 12\ntrials: no value");
    await done(page);
  });
}

test("A preview is titled after the dataset's own name: MRR by month.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show mrr by month");
  assert.match(await page.locator(".chart-result .chart-title").last().innerText(), /^MRR by month\b/);
  await done(page);
});
