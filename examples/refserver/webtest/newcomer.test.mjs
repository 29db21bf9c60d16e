// Issue 41, the demo model a newcomer meets first: with nothing
// selected, questions in their own words get a chart and a sentence with
// numbers (never the help line), saying which dataset it chose and why;
// follow-ups change, narrow and place the last chart; a placement on a
// dashboard of another project is refused in words that name the
// dashboards that can take it; a dataset with no numeric field is
// answered with a table; a selected dataset stays selected and the
// answer says which one it used; another language gets an answer that
// says the demo model reads English. The demo shares aggregates with the
// model (the reference server's default), so the numbers are counts,
// ranges and totals. Each test at 1280×800 in the light theme and at
// 375×740 in the dark one, sent and approved by keyboard, ending with
// axe (in done).

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, settled, lastTurn, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const views = [["desktop-light", desktop, "light"], ["phone-dark", phone, "dark"]];
const HELP = /Try "show signups by week"/;

// ask types a question and sends it with Enter, then waits for the turn.
async function ask(page, text) {
  const box = page.getByLabel("Message", { exact: true });
  await box.focus();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await settled(page);
}

// answer is the newest turn's text (without the intro of the first).
async function answer(page) {
  const texts = await lastTurn(page).locator(".answer > .text").allInnerTexts();
  return texts.join("\n").replace(/^You are talking to the built-in demo model[^\n]*\n\n/, "");
}

// pick adds the item called name of group (Datasets, Charts) to the
// context with the picker, by keyboard (a chart may have a dataset's
// name).
async function pick(page, group, name) {
  await page.getByRole("button", { name: "Add context" }).focus();
  await page.keyboard.press("Enter");
  await page.keyboard.type(name);
  await page.locator(`#picker-results[data-query="${name}"]`).waitFor();
  await page.locator("#picker-results .pick-group").filter({ has: page.getByRole("heading", { name: group }) })
    .locator(".pick-row").filter({ has: page.getByText(name, { exact: true }) }).first().focus();
  await page.keyboard.press("Enter");
  await page.locator("#picker").waitFor({ state: "hidden" });
}

// approve answers the newest card by keyboard: it has the focus, and
// Tab reaches Approve.
async function approve(page) {
  await page.waitForFunction(() => document.activeElement && document.activeElement.closest(".approval"));
  for (let i = 0; i < 4 && !(await page.evaluate(() => document.activeElement.textContent === "Approve")); i++) await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.textContent), "Approve", "Tab reaches Approve");
  await page.keyboard.press("Enter");
  await settled(page);
}

for (const [name, viewport, colorScheme] of views) {
  test(`A newcomer's own questions get a chart and a sentence with numbers (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, "alice");
    await ask(page, "how are signups trending?");
    let turn = lastTurn(page);
    assert.equal(await turn.locator(".chart-result").count(), 1, "a chart, not the help line");
    assert.match(await turn.locator(".chart-title").innerText(), /^Weekly signups/);
    let said = await answer(page);
    assert.doesNotMatch(said, HELP);
    assert.match(said, /^I used Weekly signups because it matches “signups”\./, "which dataset and why, in one sentence");
    assert.match(said, /Signups (rose|fell) from [\d,]+ to [\d,]+ over 12 weeks \([+-][\d.]+%\), 7 Sep to 23 Nov/, "what the chart shows, in numbers");
    await shot(page, `newcomer-trend-${name}`);

    await ask(page, "which country has the most signups");
    turn = lastTurn(page);
    assert.match(await turn.locator(".chart-title").innerText(), /^Signups by country/);
    assert.equal(await turn.locator(".chart-type").innerText(), "Bar chart");
    said = await answer(page);
    assert.match(said, /^I used Signups by country because it matches “country” and “signups”\./, "the unscoped dataset, not EU signups by country");
    assert.match(said, /Across 5 countries, signups run from [\d,]+ to [\d,]+ each, [\d,]+ in all\./);
    assert.match(said, /not which country has which/, "what the sharing level keeps from the model, said");

    await ask(page, "what is our revenue");
    said = await answer(page);
    assert.match(said, /^I used MRR because it matches “revenue” \(tracked as MRR here\)\./, "a synonym");
    assert.match(said, /MRR ran from 43,850 to 62,350 a month over 11 months/);

    await ask(page, "how many sigups did we get each week");
    assert.match(await answer(page), /I used Weekly signups because it matches “sigups” \(read as “signups”\) and “week”\./, "a typo");

    await ask(page, "top pages last month");
    said = await answer(page);
    assert.match(said, /^I used Top pages because it matches “top” and “pages”\./);
    assert.match(said, /Across 5 pages, visitors run from [\d,]+ to [\d,]+ each/);
    assert.match(said, /Top pages has no date field, so I could not narrow it to the last month/);

    await ask(page, "how many support tickets did we close");
    said = await answer(page);
    assert.match(said, /^I found no dataset about “support tickets close”\. The datasets I can see are .+\. Ask about one of them/, "nothing matches");
    for (const ds of ["Weekly signups", "Signups by country", "MRR", "Top pages"]) assert.ok(said.includes(ds), "it names the datasets it can see: " + ds);
    assert.equal(await lastTurn(page).locator(".chart-result").count(), 0);

    await ask(page, "¿Cuántos registros tuvimos por semana?");
    said = await answer(page);
    assert.match(said, /^I am the demo model and read English only, but I looked for your words in the workspace anyway\./);
    assert.match(said, /The datasets I can see are/);
    await shot(page, `newcomer-language-${name}`);
    await done(page);
  });

  test(`Follow-ups change, narrow and place the last answer's chart; another project's dashboard is refused in words (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, "alice");
    await ask(page, "how are signups trending?");
    const first = lastTurn(page).locator(".chart-result");
    assert.equal(await first.locator(".chart-type").innerText(), "Line chart");

    await ask(page, "change this to a bar chart");
    const card = lastTurn(page).locator(".approval");
    assert.match(await card.innerText(), /Update chart/);
    assert.match(await card.innerText(), /Chart “Weekly signups”/, "the last answer's chart, not \"Which chart?\"");
    await approve(page);
    await page.waitForFunction(() => document.querySelector(".turn .chart-result .chart-type").textContent === "Bar chart");
    assert.match(await answer(page), /Done: Weekly signups is now a bar chart\./);

    await ask(page, "only the last 4 weeks");
    let turn = lastTurn(page);
    assert.match(await turn.locator(".chart-title").innerText(), /^Weekly signups, last 4 weeks/);
    assert.match(await answer(page), /^I narrowed Weekly signups to the last 4 weeks\. Signups ran from [\d,]+ to [\d,]+ a week over 4 weeks \(2 Nov to 23 Nov\)/);

    await ask(page, "by country");
    turn = lastTurn(page);
    assert.match(await turn.locator(".chart-title").innerText(), /^Signups by country/);
    assert.match(await answer(page), /^The data of Weekly signups has no country field, so I used Signups by country because it matches/);

    await ask(page, "put it on the Finance dashboard");
    assert.equal(await lastTurn(page).locator(".approval").count(), 0, "not proposed");
    const said = await answer(page);
    assert.match(said, /^Signups by country cannot go on Finance: that dashboard belongs to another project than the chart's data, and a chart can only go on a dashboard of its own project\. It can go on Growth overview/);
    assert.doesNotMatch(said, /dashboard_id|Not proposed|That did not work/, "said for people");
    await shot(page, `newcomer-other-project-${name}`);

    await ask(page, "put it on the Growth dashboard");
    assert.match(await lastTurn(page).locator(".approval").innerText(), /Growth overview/);
    await approve(page);
    await page.waitForFunction(() => [...document.querySelectorAll(".turn:last-child .chart-result .badge, .chart-result .badge")].some((b) => b.textContent === "Saved"));
    assert.match(await answer(page), /Added Signups by country to Growth overview\./);
    await done(page);
  });

  test(`A dataset with no numeric field is a table; a selection stays and the answer says which dataset it used (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, "alice");
    await ask(page, "show the signup countries");
    const turn = lastTurn(page);
    const table = turn.locator(".dataset-result");
    await table.locator("table").waitFor({ timeout: 5000 }).catch(async (err) => { throw new Error(err.message + "\n" + await turn.innerText()); });
    assert.match(await table.locator(".chart-title").innerText(), /Signup countries/);
    assert.equal(await table.locator("tbody tr").count(), 5, "its rows, as a table");
    assert.match(await table.locator("tbody tr").first().innerText(), /^BR\s+7 Sep 2026$/, "dates as people read them");
    const said = await answer(page);
    assert.match(said, /Signup countries has no numeric field to chart, so here it is as a table: 5 rows of country and first_signup/);
    assert.doesNotMatch(said, /does not have a field to chart/);
    // The table scrolls in a region the keyboard reaches.
    assert.equal(await table.locator(".table-wrap").getAttribute("tabindex"), "0");
    await shot(page, `newcomer-table-${name}`);

    await pick(page, "Datasets", "Weekly signups");
    await ask(page, "what is our MRR");
    assert.match(await answer(page), /^Your question names MRR, but I used Weekly signups, the dataset you selected; to use MRR, select it instead\./);
    assert.match(await lastTurn(page).locator(".chart-title").innerText(), /^Weekly signups/);
    assert.deepEqual(await page.locator("#chips .chip > span").allInnerTexts(), ["Dataset: Weekly signups"], "the selection stays selected");
    await done(page);
  });
}
