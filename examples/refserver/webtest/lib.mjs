// Shared helpers of the browser tests: Playwright (playwright-core, from
// the tools folder .ci/browser-tools.sh installs) driving Debian's
// chromium against a reference server that TestBrowser started.

import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import assert from "node:assert/strict";

const tools = process.env.ASKBI_BROWSER_TOOLS;
if (!tools) throw new Error("ASKBI_BROWSER_TOOLS is not set: run these through TestBrowser (go test ./examples/refserver -run TestBrowser)");
const { chromium } = createRequire(path.join(tools, "package.json"))("playwright-core");

export const base = process.env.ASKBI_BASE_URL;
const artifacts = process.env.ASKBI_ARTIFACTS || path.resolve("artifacts");
fs.mkdirSync(artifacts, { recursive: true });

// The flags this closed network needs: no background connections, no
// component updates (Playwright gives every launch a fresh profile).
const flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export const desktop = { width: 1280, height: 800 };
export const phone = { width: 375, height: 740 };

let browser;
export async function launch() {
  browser = await chromium.launch({ executablePath: process.env.ASKBI_CHROMIUM || "/usr/bin/chromium", args: flags });
  return browser;
}
export async function close() { if (browser) await browser.close(); }

// open returns a fresh page (own cookies and session storage) with errors
// collected: a test fails on any page error or CSP violation. Options:
// viewport, reducedMotion, colorScheme ("light", the default, or "dark":
// what prefers-color-scheme answers).
export async function open(options = {}) {
  const context = await browser.newContext({ viewport: options.viewport || desktop, reducedMotion: options.reducedMotion || "no-preference",
    hasTouch: options.hasTouch || false, colorScheme: options.colorScheme || "light" });
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push("page error: " + e.message));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of (4\d\d|5\d\d)/.test(m.text())) page.problems.push("console: " + m.text());
  });
  await page.goto(base + "/");
  return page;
}

// axeSource is axe-core, from the same tools folder.
const axeSource = fs.readFileSync(path.join(tools, "node_modules", "axe-core", "axe.min.js"), "utf8");

// a11y runs axe-core (WCAG 2.1 A and AA) on the page as it stands and
// fails on any critical or serious finding, naming the rule and where.
// axe is evaluated in the page's world, which its CSP does not govern,
// so the page's own policy stays as strict as served.
export async function a11y(page, view) {
  // Contrast is judged on the page at rest: a fade in progress (the
  // layout change of the focused Home) is no finding.
  await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => {}))));
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, {
    runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"],
  }));
  const bad = res.violations.filter((v) => v.impact === "critical" || v.impact === "serious")
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 5).map((n) => n.target.join(" ")).join(" | ")}`);
  assert.deepEqual(bad, [], `axe found critical or serious problems in ${view}`);
}

// done checks that a page had no script errors and no critical or
// serious accessibility finding as it ended, then closes it.
export async function done(page) {
  assert.deepEqual(page.problems, [], "the page reported errors");
  await a11y(page, page.url());
  await page.context().close();
}

export async function shot(page, name) {
  await page.waitForTimeout(250); // past the layout transition
  await page.screenshot({ path: path.join(artifacts, name + ".png") });
}

// signIn picks a demo user on the sign-in page.
export async function signIn(page, name = "alice") {
  await page.getByRole("radio", { name: new RegExp("^" + name, "i") }).check();
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.locator("#home:not([hidden]), #memory-page:not([hidden])").waitFor();
  await idleLoaded(page);
}

// idleLoaded waits for the idle page's lists.
export async function idleLoaded(page) {
  await page.waitForFunction(() => {
    const home = document.getElementById("home");
    if (home.hidden || home.classList.contains("focused")) return true;
    return !document.querySelector("#recent-items").textContent.includes("Loading") &&
      document.querySelector("#recent-chats").children.length > 0;
  });
}

// send types a message and sends it with Enter, then waits for the turn.
export async function send(page, text) {
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.getByLabel("Message", { exact: true }).press("Enter");
  await settled(page);
}

// settled waits until no turn runs and every chart finished loading.
export async function settled(page) {
  await page.waitForFunction(() => document.getElementById("composer").getAttribute("aria-busy") !== "true" &&
    !document.querySelector(".chart-body.loading"));
  await frames(page);
}

// frames waits two animation frames: layout and its observers have run.
export function frames(page) {
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// lastTurn is the newest turn of the transcript.
export const lastTurn = (page) => page.locator(".turn").last();

// pickContext adds an item to the context with the picker.
export async function pickContext(page, query, label) {
  await page.getByRole("button", { name: "Add context" }).click();
  await page.getByLabel("Search dashboards, charts, datasets and connections").fill(query);
  await page.locator(`#picker-results[data-query="${query}"]`).waitFor();
  await page.locator("#picker-results .pick-row").filter({ has: page.getByText(label, { exact: true }) }).first().click();
  await page.locator("#picker").waitFor({ state: "hidden" });
}

export { assert };
