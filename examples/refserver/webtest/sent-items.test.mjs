// Issue 35, seed 001: each message records the objects it was sent with,
// as links back to them, and keeps them after they are detached. The
// question shows the context items it was sent with above it (links to
// their pages in a new tab; a connection, which has no page, by name),
// live and after a reload; removing them from the context leaves them
// there; a deleted one says it is no longer available instead of
// linking. At 1280×800 and 375×740, by keyboard.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, pickContext, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

// sentWith reads the items above each question: label, link (path) and
// whether it says it is gone.
function sentWith(page) {
  return page.locator(".turn").evaluateAll((turns) => turns.map((t) => [...t.querySelectorAll(".question-items li")].map((li) => {
    const a = li.querySelector("a");
    return { label: li.querySelector(".sent-label").textContent, href: a ? new URL(a.href).pathname : "", newTab: a ? a.target === "_blank" : false,
      gone: li.classList.contains("gone") && /no longer available/.test(li.textContent) };
  })));
}

async function reload(page) {
  await page.reload();
  await page.locator("#focus").waitFor();
  await settled(page);
}

// Each viewport deletes its own dashboard: the server is shared.
for (const [name, viewport, dashboard, dashID] of [["desktop", desktop, "Revenue", "dash_revenue"], ["phone", phone, "Finance", "dash_finance"]]) {
  test(`A question keeps the items it was sent with, as links, after they are removed and after one is deleted (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    await pickContext(page, "Weekly signups", "Weekly signups");
    await pickContext(page, dashboard, dashboard);
    await pickContext(page, "Acme warehouse", "Acme warehouse");
    await send(page, "what do these show?");
    const chart = { label: "Chart: Weekly signups", href: "/charts/chart_weekly_signups", newTab: true, gone: false };
    const dash = { label: `Dashboard: ${dashboard}`, href: `/dashboards/${dashID}`, newTab: true, gone: false };
    const conn = { label: "Connection: Acme warehouse", href: "", newTab: false, gone: false }; // no page
    const first = [chart, dash, conn];
    assert.deepEqual(await sentWith(page), [first], "live, above the question");
    assert.ok(await lastTurn(page).locator(".question-items").isVisible());
    assert.equal(await lastTurn(page).getByRole("list", { name: "Sent with" }).count(), 1, "the list is named");
    await lastTurn(page).locator(".question").scrollIntoViewIfNeeded();
    await shot(page, "sent-items-question-" + name);

    // Removed from the context (by keyboard), they stay on the message
    // that was sent with them; the next one has none.
    for (const label of ["Chart: Weekly signups", `Dashboard: ${dashboard}`, "Connection: Acme warehouse"]) {
      await page.getByRole("button", { name: "Remove " + label }).focus();
      await page.keyboard.press("Enter");
    }
    assert.equal(await page.locator("#chips .chip").count(), 0);
    await send(page, "hello");
    assert.deepEqual(await sentWith(page), [first, []], "kept after they left the context");
    await shot(page, "sent-items-" + name);

    // The link opens the item's page, by keyboard, in a new tab.
    const link = page.locator(".turn").first().getByRole("link", { name: new RegExp(`Dashboard: ${dashboard}`) });
    await link.focus();
    const [tab] = await Promise.all([page.context().waitForEvent("page"), page.keyboard.press("Enter")]);
    await tab.locator("#product-title", { hasText: dashboard }).waitFor();
    assert.equal(new URL(tab.url()).pathname, `/dashboards/${dashID}`);
    await tab.close();

    await reload(page);
    assert.deepEqual(await sentWith(page), [first, []], "the same after a reload");

    // Deleted: the item says so, without a link; the others still link.
    await send(page, `delete the ${dashboard} dashboard`);
    await lastTurn(page).getByRole("button", { name: "Approve" }).click();
    await settled(page);
    await reload(page);
    const gone = { label: `Dashboard: ${dashboard}`, href: "", newTab: false, gone: true };
    assert.deepEqual((await sentWith(page)).slice(0, 2), [[chart, gone, conn], []], "a deleted item is no longer available");
    const ids = await page.locator(".question-items").allInnerTexts();
    for (const text of ids) assert.doesNotMatch(text, /chart_|dash_|conn_/, "no IDs shown");
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), "no horizontal scroll");
    await shot(page, "sent-items-deleted-" + name);
    await done(page);
  });
}
