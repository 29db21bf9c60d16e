// Seed 000 Test Plan item 24: the preview page behind chat and MCP links
// (item 25, saved chart and dashboard links, is in components.test.mjs
// with the other chart result items). ASKBI_MCP_PREVIEW_URL is the link of a preview alice made
// through MCP (create_chart_preview), which TestBrowser passes in.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, base, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const mcpPreview = process.env.ASKBI_MCP_PREVIEW_URL;

// sessionOf is a demo user's session token, as a host's login hands it out.
async function sessionOf(name) {
  const res = await fetch(base + "/demo/sign-in", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ name }) });
  return (await res.json()).session_token;
}

// focusName names the element that has keyboard focus.
function focusName(page) {
  return page.evaluate(() => {
    const a = document.activeElement;
    return a && ((a.labels && a.labels[0] && a.labels[0].textContent.trim()) || a.getAttribute("aria-label") || a.textContent.trim() || a.tagName);
  });
}

async function tabTo(page, want) {
  for (let i = 0; i < 30; i++) {
    if (String(await focusName(page)).match(want)) return;
    await page.keyboard.press("Tab");
  }
  assert.fail("keyboard focus never reached " + want + "; last: " + await focusName(page));
}

// noSideScroll checks that nothing on the page scrolls sideways.
async function noSideScroll(page) {
  const right = await page.evaluate(() => {
    let r = document.documentElement.scrollWidth;
    for (const el of document.querySelectorAll("body *")) {
      if (el.closest(".table-wrap, .vh") || !el.getClientRects().length) continue;
      r = Math.max(r, el.getBoundingClientRect().right);
    }
    return Math.round(r);
  });
  assert.ok(right <= phone.width, "no horizontal scrolling: " + right);
}

test("MCP and chat preview links open /previews/:chartId using the browser session. Sign-in returns to this page.", async () => {
  assert.ok(mcpPreview, "TestBrowser passes ASKBI_MCP_PREVIEW_URL");
  const id = new URL(mcpPreview).pathname.split("/")[2];
  assert.equal(new URL(mcpPreview).pathname, "/previews/" + id, "the MCP link is the preview page");

  // An MCP link opened on a phone with no session: sign in, and back.
  const page = await open({ viewport: phone });
  await page.goto(mcpPreview);
  assert.equal(new URL(page.url()).pathname, "/signin");
  await page.getByLabel("Session token").fill(await sessionOf("alice"));
  await page.getByRole("button", { name: "Sign in with token" }).click();
  await page.waitForURL(mcpPreview);
  await page.locator("#product:not([aria-busy])").waitFor();
  await page.locator(".chart-body:not(.loading)").waitFor();
  assert.equal(await page.locator("h1").innerText(), "Signups from MCP");
  assert.equal(await page.locator(".chart-head .badge").innerText(), "Preview");
  assert.ok(await page.locator("svg.chart-svg").count(), "the interactive chart is drawn");
  await noSideScroll(page);
  await shot(page, "preview-page-phone");

  // Place it with the keyboard alone: the dashboard selector, then Add.
  await tabTo(page, /^Dashboard/);
  await page.keyboard.press("ArrowDown"); // Growth overview, the one dashboard of its project
  assert.equal(await page.getByLabel("Dashboard").evaluate((s) => s.options[s.selectedIndex].text), "Growth overview");
  await tabTo(page, /^Add to dashboard$/);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.querySelector(".chart-head .badge").textContent === "Saved");
  assert.match(await page.locator(".saved-at").innerText(), /Saved in Growth overview/);

  // The link stays valid after placement: it opens the saved chart.
  await page.reload();
  await page.locator("#product:not([aria-busy])").waitFor();
  assert.equal(await page.locator(".chart-head .badge").innerText(), "Saved");
  assert.equal(await page.getByRole("button", { name: "Add to dashboard" }).count(), 0);
  await done(page);

  // A preview made in the chat links to its page in a new tab, signed in
  // by the same session.
  const chat = await open();
  await signIn(chat, "alice");
  await send(chat, "show signups by week");
  const link = chat.locator(".chart-result").last().locator(".chart-title a");
  const href = await link.getAttribute("href");
  assert.match(href, new RegExp("^" + base + "/previews/chart_[a-z0-9]+$"));
  assert.equal(await link.getAttribute("target"), "_blank");
  const [tab] = await Promise.all([chat.context().waitForEvent("page"), link.click()]);
  await tab.locator("#product:not([aria-busy])").waitFor();
  assert.equal(tab.url(), href);
  assert.equal(await tab.locator("h1").innerText(), "Signups by week");
  assert.ok(await tab.locator("svg.chart-svg").count(), "the chart is drawn");
  assert.equal(await tab.getByLabel("Dashboard").count(), 1, "with the dashboard selector");
  await tab.close();
  await done(chat);
});

test("The preview page checks team, dataset and owner access, and a read-only user gets no placement control.", async () => {
  const chat = await open();
  await signIn(chat, "bob");
  await send(chat, "show signups by week");
  const href = await chat.locator(".chart-result").last().locator(".chart-title a").getAttribute("href");
  await done(chat);

  // carol (another team) and vic (bob's team, but the preview is bob's
  // until he places it): not found, nothing of the chart shown.
  for (const who of ["carol", "vic"]) {
    const other = await open();
    await signIn(other, who);
    await other.goto(href);
    await other.locator("#product:not([aria-busy])").waitFor();
    assert.equal(await other.locator("h1").innerText(), "Not found", `${who} on bob's preview`);
    assert.ok(!(await other.content()).includes("Signups by week"));
    assert.equal(await other.locator("svg.chart-svg").count(), 0);
    await done(other);
  }

  // vic (viewer) on her own preview: the chart, no placement.
  const vic = await open();
  await signIn(vic, "vic");
  await send(vic, "show signups by week");
  const own = await vic.locator(".chart-result").last().locator(".chart-title a").getAttribute("href");
  await vic.goto(own);
  await vic.locator("#product:not([aria-busy])").waitFor();
  await vic.locator(".chart-body:not(.loading)").waitFor();
  assert.equal(await vic.locator("h1").innerText(), "Signups by week");
  assert.ok(await vic.locator("svg.chart-svg").count(), "the viewer sees the chart");
  assert.equal(await vic.locator(".place, select").count(), 0, "but no placement control");
  await done(vic);
});
