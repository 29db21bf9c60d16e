// Issue 27, Space: the composer's file limits appear on demand and the
// empty composer is at most 120 px tall on a phone; the "Continue:" bar
// never covers page content; a preview link opened signed out offers the
// demo user picker; the preview page's title does not open the page
// again; the headings are in order (axe heading-order, a moderate rule
// the critical/serious check of done() does not see). At 1280×800 and
// 375×740, light and dark, by keyboard where it is about the keyboard.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, lastTurn, frames, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const sizes = [["desktop", desktop], ["phone", phone]];
const schemes = ["light", "dark"];

// headingOrder runs axe's heading-order rule alone on the page as it stands.
async function headingOrder(page, view) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) {
    const fs = await import("node:fs");
    const path = await import("node:path");
    await page.evaluate(fs.readFileSync(path.join(process.env.ASKBI_BROWSER_TOOLS, "node_modules", "axe-core", "axe.min.js"), "utf8"));
  }
  const res = await page.evaluate(() => window.axe.run(document, { runOnly: { type: "rule", values: ["heading-order"] }, resultTypes: ["violations"] }));
  const bad = res.violations.flatMap((v) => v.nodes.map((n) => n.target.join(" ")));
  assert.deepEqual(bad, [], `headings out of order in ${view}`);
}

// covered lists the visible content of the shown main that sits under the
// conversation bar.
function covered(page) {
  return page.evaluate(() => {
    const bar = document.getElementById("convbar").getBoundingClientRect();
    const main = document.querySelector("main:not([hidden])");
    const view = main.getBoundingClientRect();
    const out = [];
    for (const el of main.querySelectorAll("*")) {
      if (el.children.length && !el.matches("button, a, input, select, textarea")) continue;
      for (const r of el.getClientRects()) {
        const top = Math.max(r.top, view.top), bottom = Math.min(r.bottom, view.bottom);
        if (bottom <= top || r.width === 0) continue; // scrolled out of view
        if (r.left < bar.right && r.right > bar.left && top < bar.bottom && bottom > bar.top) {
          out.push((el.id ? "#" + el.id : el.tagName.toLowerCase()) + ": " + (el.textContent || "").trim().slice(0, 40));
        }
      }
    }
    return out;
  });
}

for (const [size, viewport] of sizes) {
  for (const colorScheme of schemes) {
    test(`${size}, ${colorScheme}: the file limits show on demand, the empty composer is short, and the Continue bar covers nothing`, async () => {
      const page = await open({ viewport, colorScheme });
      await signIn(page, "alice");
      const limits = page.locator("#attach-limits");
      const limitsShown = await limits.isVisible();
      const height = () => page.locator("#composer").evaluate((el) => el.getBoundingClientRect().height);
      if (viewport === phone) assert.ok(await height() <= 120, `the empty composer is ${await height()} px tall at 375 px`);
      assert.equal(limitsShown, false, "the limits are not shown before they are asked for");
      await headingOrder(page, "home");

      // By keyboard: Tab from the message to Attach file shows them; they
      // are its description.
      await page.getByLabel("Message", { exact: true }).focus();
      for (let i = 0; i < 5 && !(await page.locator("#attach").evaluate((b) => b === document.activeElement)); i++) await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement.id), "attach", "Tab reaches Attach file");
      await frames(page);
      assert.ok(await limits.isVisible(), "the limits show while Attach file has the focus");
      assert.match(await limits.innerText(), /^Up to 3 files: text/);
      await page.keyboard.press("Shift+Tab");
      await frames(page);
      assert.equal(await limits.isVisible(), false, "and go when it loses it, to " + await page.evaluate(() => document.activeElement.id + " " + document.querySelector("#attach").matches(":hover")));
      // They stay while a file is attached.
      await page.locator("#attach-input").setInputFiles([{ name: "a.csv", mimeType: "text/csv", buffer: Buffer.from("a,b\n1,2\n") }]);
      await page.locator("#files .file-chip").waitFor();
      assert.ok(await limits.isVisible(), "the limits show while a file is attached");
      await page.getByRole("button", { name: "Remove file a.csv" }).press("Enter"); // the focus goes to Attach file
      await page.getByLabel("Message", { exact: true }).focus();
      await frames(page);
      assert.equal(await limits.isVisible(), false, "no file and no focus: the limits go");

      await send(page, "show signups by week");
      if (viewport === phone) assert.ok(await height() <= 120, `the empty composer is ${await height()} px tall at 375 px in a chat`);
      await headingOrder(page, "a chat with a chart");
      await shot(page, `space-chat-${size}-${colorScheme}`);

      // Away from the chat the bar offers it, over no content, scrolled
      // to the end of each page.
      for (const [hash, sel] of [["#/memory", "#memory-page:not([hidden])"], ["#/connections", "#connections-page:not([hidden]) .conn-card"],
        ["#/mcp", "#mcp-page:not([hidden]) .setup"]]) {
        await page.evaluate((h) => { location.hash = h; }, hash);
        await page.locator(sel).first().waitFor();
        await page.locator("#convbar:not([hidden])").waitFor();
        await page.evaluate(() => { const m = document.querySelector("main:not([hidden])"); m.scrollTop = m.scrollHeight; });
        await frames(page);
        assert.deepEqual(await covered(page), [], `the Continue bar covers content of ${hash}`);
        await headingOrder(page, hash);
      }
      await shot(page, `space-convbar-${size}-${colorScheme}`);
      await done(page);
    });
  }

  test(`${size}: a preview link opened signed out offers the demo users; the preview page's title is no link to itself`, async () => {
    const chat = await open({ viewport });
    await signIn(chat, "bob");
    await send(chat, "show signups by week");
    const href = await lastTurn(chat).locator(".chart-title a").getAttribute("href");
    await done(chat);

    const page = await open({ viewport });
    await page.goto(href);
    assert.equal(new URL(page.url()).pathname, "/signin");
    await headingOrder(page, "/signin");
    // By keyboard: the first demo user, then Sign in.
    const users = page.getByRole("radio");
    assert.deepEqual(await page.locator("label:has(input[type=radio])").allInnerTexts().then((t) => t.map((s) => s.split("\n")[0].trim())),
      ["Alice", "Bob", "Vic", "Carol"]);
    await users.first().focus();
    await page.keyboard.press("ArrowDown"); // Bob
    assert.ok(await page.getByRole("radio", { name: /^Bob/ }).isChecked());
    await page.getByRole("button", { name: "Sign in", exact: true }).focus();
    await page.keyboard.press("Enter");
    await page.waitForURL(href);
    await page.locator("#product:not([aria-busy]) .chart-body:not(.loading)").waitFor();
    assert.equal(await page.locator("h1").innerText(), "Signups by week");
    assert.equal(await page.locator(`.chart-title a[href="${href}"], a[href="${new URL(href).pathname}"]`).count(), 0,
      "nothing on the preview page opens the same page again");
    assert.equal(await page.locator(".chart-title a").count(), 0, "the title is text");
    await headingOrder(page, "the preview page");
    await shot(page, `space-preview-${size}`);
    // Placed, the page still does not link to itself.
    await page.getByLabel("Dashboard").selectOption({ label: "Growth overview" });
    await page.getByRole("button", { name: "Add to dashboard" }).click();
    await page.waitForFunction(() => document.querySelector(".chart-head .badge").textContent === "Saved");
    assert.equal(await page.locator(".chart-title a").count(), 0, "the saved chart's title is text on its own page");
    await done(page);
  });
}
