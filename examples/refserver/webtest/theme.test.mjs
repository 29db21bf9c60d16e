// Issue 27: the dark theme. Under prefers-color-scheme: dark every main
// view is drawn dark (the page's custom properties), and axe-core finds
// no critical or serious problem in it, contrast included, at 1280×800
// and 375×740. The light theme is what every other browser test sees.

import { test, before, after } from "node:test";
import { launch, close, open, done, a11y, shot, signIn, send, lastTurn, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// luminance is the relative luminance (WCAG) of a computed rgb() colour.
function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+(\.\d+)?/g).slice(0, 3).map(Number).map((c) => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

// isDark checks that the page's background and the surface of sel are
// dark and its text light, so the view is drawn in the dark theme.
async function isDark(page, view, sel = "body") {
  const got = await page.evaluate((sel) => {
    const el = document.querySelector(sel);
    let bg = getComputedStyle(el).backgroundColor;
    for (let p = el; p && /rgba\(0, 0, 0, 0\)|transparent/.test(bg); p = p.parentElement) bg = getComputedStyle(p).backgroundColor;
    if (/rgba\(0, 0, 0, 0\)|transparent/.test(bg)) bg = getComputedStyle(document.documentElement).backgroundColor;
    return { bg, color: getComputedStyle(el).color };
  }, sel);
  assert.ok(luminance(got.bg) < 0.05, `${view}: ${sel} is drawn on ${got.bg}, not a dark background`);
  assert.ok(luminance(got.color) > 0.5, `${view}: ${sel} has text in ${got.color}, not light`);
}

// checked runs axe once no animation runs (a fade lowers contrast while it
// plays).
async function checked(page, view) {
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running"));
  await a11y(page, view);
}

for (const [size, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`Dark theme at ${viewport.width}×${viewport.height}: sign-in, home, a chart, an approval card, the settings pages and the preview page are dark and pass axe.`, async () => {
    const page = await open({ viewport, colorScheme: "dark" });
    await page.locator("#signin:not([hidden])").waitFor();
    await isDark(page, "sign-in");
    await isDark(page, "sign-in", ".demo-user");
    await checked(page, "sign-in, dark");
    await signIn(page, "alice");
    await isDark(page, "home", "#composer");
    await checked(page, "home, dark");
    await shot(page, `dark-home-${size}`);

    await send(page, "show signups by week");
    await isDark(page, "chat", ".chart-result > .chart-head");
    await checked(page, "a chart result, dark");
    const href = await lastTurn(page).locator(".chart-title a").getAttribute("href");
    await send(page, "delete the Revenue dashboard");
    await lastTurn(page).locator(".approval").waitFor();
    await isDark(page, "approval card", ".approval > :first-child");
    await checked(page, "an approval card, dark");
    await shot(page, `dark-approval-${size}`);

    for (const [hash, sel] of [["#/memory", "#memory-page:not([hidden])"], ["#/connections", "#connections-page:not([hidden]) .conn-card"],
      ["#/mcp", "#mcp-page:not([hidden]) .setup"]]) {
      await page.evaluate((h) => { location.hash = h; }, hash);
      await page.locator(sel).first().waitFor();
      await isDark(page, hash, sel);
      await checked(page, hash + ", dark");
    }
    await shot(page, `dark-mcp-${size}`);

    await page.goto(href);
    await page.locator("#product:not([aria-busy]) .chart-body:not(.loading)").waitFor();
    await isDark(page, "preview page", ".chart-result > .chart-head");
    await shot(page, `dark-preview-${size}`);
    await done(page);
  });
}
