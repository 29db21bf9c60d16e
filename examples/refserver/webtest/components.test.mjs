// Seed 000 Test Plan, "Components and activity": each item is one test.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, frames, base, assert } from "./lib.mjs";

before(launch);
after(close);

// chartView reads a chart result from the chat API, as the page's session.
function chartView(page, chart) {
  return page.evaluate(async (chart) => {
    const token = JSON.parse(sessionStorage.getItem("askbi.session")).token;
    const conv = sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active.")));
    const res = await fetch(`/ai/conversations/${conv}/charts/${chart}`, { headers: { Authorization: "Bearer " + token } });
    return (await res.json()).chart;
  }, chart);
}

// chartIDs lists the charts of the transcript's results, in order, from
// the work summary the page was given (the page itself shows no IDs).
function chartIDs(page) {
  return page.evaluate(async () => {
    const token = JSON.parse(sessionStorage.getItem("askbi.session")).token;
    const conv = sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active.")));
    const res = await fetch(`/ai/conversations/${conv}`, { headers: { Authorization: "Bearer " + token } });
    return (await res.json()).work_summary.filter((r) => r.result && r.result.chart).map((r) => r.result.chart.id);
  });
}

const badge = (loc) => loc.locator(".chart-head .badge").innerText();

test("A chart preview shows every dataset and can open each permitted dataset.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show signups by week");
  const result = page.locator(".chart-result").last();
  await shot(page, "chart-preview");
  assert.equal(await badge(result), "Preview");
  assert.equal(await result.locator(".chart-type").innerText(), "Line chart");
  assert.ok(await result.locator("svg.chart-svg .line").count() >= 1, "the chart is drawn");
  const [id] = await chartIDs(page);
  const view = await chartView(page, id);
  const links = result.locator(".datasets a");
  assert.deepEqual(await links.evaluateAll((as) => as.map((a) => a.firstChild.textContent)), view.datasets.map((d) => d.name),
    "every dataset of the chart is listed");
  for (let i = 0; i < view.datasets.length; i++) {
    const a = links.nth(i);
    assert.equal(await a.getAttribute("target"), "_blank");
    assert.equal(await a.getAttribute("href"), view.links.datasets[view.datasets[i].id]);
    const [tab] = await Promise.all([page.context().waitForEvent("page"), a.click()]);
    await tab.locator("#product:not([aria-busy])").waitFor();
    assert.equal(new URL(tab.url()).pathname, "/datasets/" + view.datasets[i].id);
    assert.equal(await tab.locator("h1").innerText(), view.datasets[i].name, "the dataset page opens, signed in");
    await tab.close();
  }
  await done(page);
});

test("The exact selected dashboard is the ComboBox default.", async () => {
  const page = await open();
  await signIn(page, "alice");
  const selected = async () => page.locator(".chart-result").last().locator("select").evaluate((s) => s.options[s.selectedIndex].text);
  // Nothing selected: no guess.
  await send(page, "show signups by week");
  assert.equal(await selected(), "Choose a dashboard");
  assert.ok(await page.getByRole("button", { name: "Add to dashboard" }).last().isDisabled());
  // A selected dashboard of another project is not a place for it: still no guess.
  await pickContext(page, "Revenue", "Revenue");
  await send(page, "show signups by country");
  assert.equal(await selected(), "Choose a dashboard");
  // The exact selected dashboard is the default.
  await page.getByRole("button", { name: "Remove Dashboard: Revenue" }).click();
  await pickContext(page, "Growth overview", "Growth overview");
  await send(page, "show signups by week");
  assert.equal(await selected(), "Growth overview");
  assert.ok(await page.getByRole("button", { name: "Add to dashboard" }).last().isEnabled());
  await done(page);
});

test("A permitted user can add a preview. A read-only user cannot.", async () => {
  const bob = await open();
  await signIn(bob, "bob");
  await send(bob, "show signups by week");
  const result = bob.locator(".chart-result").last();
  await result.getByLabel("Dashboard").selectOption({ label: "Growth overview" });
  await result.getByRole("button", { name: "Add to dashboard" }).click();
  await bob.waitForFunction(() => document.querySelector(".chart-result .badge").textContent === "Saved");
  assert.match(await result.locator(".saved-at").innerText(), /Saved in Growth overview/);
  await done(bob);

  const vic = await open();
  await signIn(vic, "vic");
  await send(vic, "show signups by week");
  const mine = vic.locator(".chart-result").last();
  assert.equal(await badge(mine), "Preview");
  assert.ok(await mine.locator("svg.chart-svg").count(), "the viewer sees the chart");
  assert.equal(await mine.locator(".place, select").count(), 0, "but no placement");
  assert.equal(await vic.getByRole("button", { name: "Add to dashboard" }).count(), 0);
  await shot(vic, "chart-read-only");
  await done(vic);
});

// One chat for the next three tests: a preview shown twice, updated, then
// placed.
let chat;

test("An updated chart reloads in the active chat without a page refresh.", async () => {
  chat = await open();
  await signIn(chat, "alice");
  await send(chat, "show signups by week");
  await chat.evaluate(() => { window.notReloaded = true; });
  // Earlier tests made previews of the same name: the Recent group's
  // first is this chat's.
  await pickContext(chat, "", "Chart: Signups by week");
  await send(chat, "change this to a weekly bar chart");
  const card = lastTurn(chat).locator(".approval");
  assert.match(await card.innerText(), /Update chart/);
  assert.match(await card.innerText(), /Chart “Signups by week”/);
  assert.match(await card.innerText(), /Chart type\s*bar/);
  await card.getByRole("button", { name: "Approve" }).click();
  await settled(chat);
  const results = chat.locator(".chart-result");
  assert.equal(await results.count(), 2, "the first answer's chart and the updated one");
  for (let i = 0; i < 2; i++) {
    assert.equal(await results.nth(i).locator(".chart-type").innerText(), "Bar chart", `copy ${i} shows the new type`);
    assert.ok(await results.nth(i).locator("svg rect.bar").count() > 0, `copy ${i} is drawn as bars`);
  }
  assert.equal(await chat.evaluate(() => window.notReloaded), true, "the page was not reloaded");
});

test("Placement changes Preview to Saved and preserves the dashboard selection after reload.", async () => {
  const results = chat.locator(".chart-result");
  await results.first().getByLabel("Dashboard").selectOption({ label: "Growth overview" });
  await results.first().getByRole("button", { name: "Add to dashboard" }).click();
  await chat.waitForFunction(() => [...document.querySelectorAll(".chart-result .badge")].every((b) => b.textContent === "Saved"));
  const check = async (when) => {
    for (let i = 0; i < 2; i++) {
      assert.equal(await badge(results.nth(i)), "Saved", `copy ${i} is saved ${when}`);
      assert.match(await results.nth(i).locator(".saved-at").innerText(), /Saved in Growth overview/, `copy ${i} keeps the dashboard ${when}`);
      assert.equal(await results.nth(i).locator("select").count(), 0, `copy ${i} offers no placement ${when}`);
    }
  };
  await check("at once");
  await shot(chat, "chart-saved");
  await chat.reload();
  await chat.locator("#focus").waitFor();
  await settled(chat);
  await check("after reload");
});

test("Saved chart and dashboard links open the correct routes in a new tab.", async () => {
  const result = chat.locator(".chart-result").first();
  const [id] = await chartIDs(chat);
  const title = result.locator(".chart-title a");
  const name = await title.evaluate((a) => a.firstChild.textContent);
  const dash = result.getByRole("link", { name: /Open dashboard/ });
  for (const [link, path, heading] of [[title, "/charts/" + id, name], [dash, "/dashboards/dash_growth", "Growth overview"]]) {
    // The server's links, under its public URL, open the product's pages
    // signed in by the browser session.
    assert.equal(await link.getAttribute("href"), base + path);
    assert.equal(await link.getAttribute("target"), "_blank");
    assert.match(await link.getAttribute("rel"), /noopener/);
    const [tab] = await Promise.all([chat.context().waitForEvent("page"), link.click()]);
    await tab.locator("#product:not([aria-busy])").waitFor();
    assert.equal(new URL(tab.url()).pathname, path);
    assert.equal(await tab.locator("h1").innerText(), heading);
    if (path.startsWith("/charts/")) {
      // The saved chart, drawn, read-only.
      await tab.locator(".chart-body:not(.loading)").waitFor();
      assert.equal(await tab.locator(".chart-head .badge").innerText(), "Saved");
      assert.ok(await tab.locator("svg.chart-svg").count(), "the chart is drawn");
      assert.equal(await tab.locator(".place, select").count(), 0);
    } else {
      assert.match(await tab.locator("#product-info").innerText(), /^Dashboard · \d+ charts?$/);
    }
    await tab.close();
  }
  await done(chat);
});

test("A deleted preview or saved chart shows Unavailable instead of a loading state.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show mrr by month");
  const result = page.locator(".chart-result").first();
  await result.getByLabel("Dashboard").selectOption({ label: "Revenue" });
  await result.getByRole("button", { name: "Add to dashboard" }).click();
  await page.waitForFunction(() => document.querySelector(".chart-result .badge").textContent === "Saved");
  // Deleting the dashboard deletes its charts.
  await send(page, "delete the Revenue dashboard");
  await lastTurn(page).getByRole("button", { name: "Approve" }).click();
  await settled(page);
  const check = async (when) => {
    assert.equal(await badge(result), "Unavailable", when);
    assert.equal(await result.locator(".loading, [aria-busy=true]").count(), 0, "not loading " + when);
    assert.equal(await result.locator("select, .place, .saved-at, .chart-title a").count(), 0, "no chart or dashboard actions " + when);
    assert.deepEqual(await result.locator(".datasets a").evaluateAll((as) => as.map((a) => a.firstChild.textContent)), ["MRR"],
      "the dataset, which still exists, is still linked " + when);
  };
  await check("at once");
  await shot(page, "chart-unavailable");
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  await check("after reload");
  await done(page);
});

test("Live activity uses an accessible status region.", async () => {
  const page = await open();
  await signIn(page, "alice");
  const region = page.locator("#activity");
  assert.equal(await region.getAttribute("role"), "status");
  assert.equal(await region.getAttribute("aria-live"), "polite");
  assert.equal(await page.locator("#composer #activity").count(), 1, "it is the composer's status, at the bottom right");
  await page.evaluate(() => {
    window.announced = [];
    const r = document.getElementById("activity");
    // Each text the region is given, however fast they follow each other.
    new MutationObserver((records) => {
      for (const rec of records) for (const n of rec.addedNodes) window.announced.push(n.textContent);
    }).observe(r, { childList: true });
  });
  await send(page, "show signups by week");
  const announced = await page.evaluate(() => window.announced);
  for (const label of ["Searched the workspace", "Previewed data", "Created chart preview", "Answer ready."]) {
    assert.ok(announced.includes(label), `"${label}" was announced: ${JSON.stringify(announced)}`);
  }
  await done(page);
});

test("Completed and failed work stays visible after reload.", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show signups by week");
  await send(page, "show churn by plan"); // its dataset's connection is inactive
  const steps = async () => page.locator(".work-completed").evaluateAll((ds) => ds.map((d) => [...d.querySelectorAll(".step")]
    .map((s) => s.querySelector(".step-label").textContent + ": " + s.querySelector(".step-state").textContent)));
  const want = [
    ["Searched the workspace: Done", "Previewed data: Done", "Created chart preview: Done"],
    ["Searched the workspace: Done", "Previewed data: Failed"],
  ];
  assert.deepEqual(await steps(), want);
  const failed = lastTurn(page).locator(".work-completed");
  assert.equal(await failed.evaluate((d) => d.open), false, "the section is collapsed");
  await failed.locator("summary").click();
  assert.match(await failed.locator(".step-failed .step-error").innerText(), /\S/, "the failure says why");
  assert.equal(await failed.getByRole("button", { name: "Retry" }).count(), 1, "a read-only step can be retried");
  await shot(page, "work-failed");
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  assert.deepEqual(await steps(), want, "the same after reload");
  await lastTurn(page).locator(".work-completed summary").click();
  assert.equal(await lastTurn(page).getByRole("button", { name: "Retry" }).count(), 1, "Retry is still offered");
  await lastTurn(page).getByRole("button", { name: "Retry" }).click();
  await settled(page);
  assert.equal(await page.locator(".turn").count(), 3, "Retry asks the failed question again");
  await done(page);
});

// reasoning starts the demo model's private reasoning, which it returns
// with every reply (mock.ReasoningMarker): the server must drop it.
const reasoning = "MOCK-PRIVATE-REASONING";

test("No private reasoning, raw tool arguments, or secrets appear.", async () => {
  const page = await open();
  // The turns' event streams, as the page received them.
  const streams = [];
  page.on("response", (res) => {
    if (/\/ai\/conversations\/[^/]+\/(messages|approvals\/)/.test(new URL(res.url()).pathname)) streams.push(res.text());
  });
  await signIn(page, "alice");
  const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("askbi.session")).token);
  await pickContext(page, "Weekly signups", "Weekly signups");
  await send(page, "my token is " + token + ", show signups by week");
  await send(page, "delete the Finance dashboard");
  assert.equal(await lastTurn(page).locator(".approval").count(), 1, "an approval card is on screen");
  await send(page, "show churn by plan");
  await page.locator(".work-completed summary").evaluateAll((ss) => ss.forEach((s) => s.click()));
  await frames(page);
  const check = async (when) => {
    const seen = await page.evaluate(() => document.body.innerText + "\n" +
      [...document.querySelectorAll("[aria-label], [title], option")].map((e) => (e.getAttribute("aria-label") || "") + " " + (e.getAttribute("title") || "") + " " + e.textContent).join("\n"));
    const secret = token.replace(/^askbi_session_/, "");
    assert.ok(!seen.includes(secret), "the session token is not shown " + when);
    for (const bad of ["{\"", "dashboard_id", "dataset_id", "chart_id", "ds_", "dash_", "conv_", "apr_", "call_", "SELECT", "reasoning", reasoning, "<tool_output", "untrusted"]) {
      assert.ok(!seen.includes(bad), `"${bad}" does not appear ${when}`);
    }
    // Nor in what the server sent: the events and the saved history.
    const sent = await page.evaluate(async () => {
      const token = JSON.parse(sessionStorage.getItem("askbi.session")).token;
      const conv = sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active.")));
      return (await fetch(`/ai/conversations/${conv}`, { headers: { Authorization: "Bearer " + token } })).text();
    });
    assert.ok(!sent.includes(reasoning), "the saved history holds no reasoning " + when);
    assert.doesNotMatch(seen, /\bnull\b|\bundefined\b|\[object Object\]|NaN/, "no raw values leak into the text " + when);
  };
  await check("live");
  const events = await Promise.all(streams);
  assert.ok(events.length >= 3 && events.every((b) => b.includes("event: request.")), "the turns' events were read whole");
  for (const b of events) assert.ok(!b.includes(reasoning), "the events hold no reasoning");
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
  await page.locator(".work-completed summary").evaluateAll((ss) => ss.forEach((s) => s.click()));
  await check("after reload");
  await done(page);
});
