// Issue 41, the page's last rough edges: errors said for people (a
// viewer's refusal, a refused file without a Retry that cannot help, the
// offline message); Home's recent chats without "null"; the chats list
// (search, titles that fit a phone, a close control at the top, a tap
// outside closes it, chats of one title told apart by date); the
// dashboard page draws its charts and the dataset page formats its
// table, which the keyboard scrolls (axe scrollable-region-focusable,
// also on the chart's Table view); approval cards (a waiting step reads
// in the present, a destructive Approve looks destructive, a batch
// placement's receipt shows its charts Saved) and the way to a waiting
// card from the composer; the context picker ranks saved items first and
// folds a name's previews; a connection with no tool allowed says which
// step is left. Each test at 1280×800 in the light theme and at 375×740
// in the dark one, driven by keyboard, ending with axe (in done).

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, settled, lastTurn, desktop, phone, base, assert } from "./lib.mjs";
import { as, session, overflow } from "./settings-lib.mjs";

before(launch);
after(close);

const views = [["desktop-light", desktop, "light"], ["phone-dark", phone, "dark"]];

// ask types a question into the composer and sends it with Enter.
async function ask(page, text) {
  await page.getByLabel("Message", { exact: true }).focus();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await settled(page);
}

// tabTo presses key (Tab, or Shift+Tab) until target has the focus.
async function tabTo(page, target, key = "Tab") {
  await target.waitFor({ state: "attached" });
  for (let i = 0; i < 60; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press(key);
  }
  assert.fail("the keyboard never reached " + target);
}

// chat sends question in a new conversation of user's through the chat
// API, as another tab would have.
async function chat(user, question) {
  const { conversation } = await as(user, "POST", "/ai/conversations", {});
  const res = await fetch(`${base}/ai/conversations/${conversation.id}/messages`, {
    method: "POST", headers: { Authorization: "Bearer " + await session(user), "Content-Type": "application/json" },
    body: JSON.stringify({ message: question }),
  });
  assert.ok(res.ok, `message: ${res.status}`);
  await res.text();
  return conversation.id;
}

for (const [name, viewport, colorScheme] of views) {
  const user = name.startsWith("desktop") ? "alice" : "bob"; // each its own chats

  test(`Errors a person meets are sentences: a viewer's refusal, a refused file, offline (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, "vic");
    await ask(page, "delete the Revenue dashboard");
    const said = await lastTurn(page).locator(".answer > .text").last().innerText();
    assert.match(said, /I did not propose that, because your role cannot do it here: this action requires the editor role or above\. An owner or admin of the team can\./);
    assert.doesNotMatch(said, /not proposed|That did not work|_id|forbidden/, "no codes, field paths or notes to the model");

    // A PNG header on an executable: refused, the file named, no Retry
    // (sending it again would be refused again).
    const fake = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("\x7fELF\x02\x01\x01\x00")]);
    await page.locator("#attach-input").setInputFiles([{ name: "chart.png", mimeType: "image/png", buffer: fake }]);
    await page.locator("#files .file-chip").waitFor();
    await ask(page, "what does this chart show?");
    const error = lastTurn(page).locator(".turn-error");
    assert.equal(await error.innerText(), "The file “chart.png” was not sent: it is not a readable PNG image. Remove it, or attach another file, then send again.");
    assert.equal(await error.getByRole("button", { name: "Retry" }).count(), 0, "no Retry that cannot help");
    page.problems.splice(0); // the browser's note of the 4xx
    await page.getByRole("button", { name: "Remove file chart.png" }).click();
    await page.getByLabel("Message", { exact: true }).fill("");

    // Offline: said so, with a Retry that works once connected.
    await page.context().setOffline(true);
    await ask(page, "how are signups trending?");
    const offline = lastTurn(page).locator(".turn-error");
    assert.equal(await offline.innerText(), "You are offline. Try again once you are connected. Retry");
    page.problems.splice(0);
    await page.context().setOffline(false);
    await page.getByLabel("Message", { exact: true }).fill("");
    await tabTo(page, offline.getByRole("button", { name: "Retry" }), "Shift+Tab");
    await page.keyboard.press("Enter");
    await settled(page);
    assert.equal(await lastTurn(page).locator(".chart-result").count(), 1, "Retry sent it once connected");
    await shot(page, `errors-${name}`);
    await done(page);
  });

  test(`Home's recent chats read cleanly; the chats list searches, fits, closes at the top or outside, and tells twins apart (${name})`, async () => {
    await chat(user, "hello");
    await chat(user, "hello");
    await chat(user, "what happened to signups in the week of the product launch and after the pricing change in october");
    const page = await open({ viewport, colorScheme });
    await signIn(page, user);
    const recent = page.locator("#recent-chats");
    assert.doesNotMatch(await recent.innerText(), /\bnull\b/, "no \"null\" beside a recent chat");
    const twins = recent.locator(".row", { hasText: "hello" });
    assert.equal(await twins.count(), 2);
    const [a, b] = await twins.locator(".row-info").allInnerTexts();
    assert.match(a, /^Started \d{1,2} [A-Z][a-z]{2}, \d{2}:\d{2}(:\d{2})?(, \d of \d)? · /, "a twin says when it started");
    assert.notEqual(a, b, "twins are told apart");

    await tabTo(page, page.getByRole("button", { name: "Chats", exact: true }));
    await page.keyboard.press("Enter");
    const dialog = page.locator("#chats");
    await dialog.locator(".row-label").first().waitFor();
    // The close control sits at the top, beside the heading.
    const close = dialog.getByRole("button", { name: "Close chats" });
    const [closeBox, listBox] = [await close.boundingBox(), await dialog.locator("#chats-list").boundingBox()];
    assert.ok(closeBox.y < listBox.y, "Close is above the list");
    // Search by title.
    await dialog.getByLabel("Search chats").focus();
    await page.keyboard.type("launch");
    assert.equal(await dialog.locator(".row-label").count(), 1);
    const label = dialog.locator(".row-label").first();
    assert.match(await label.innerText(), /^what happened to signups/);
    // A long title wraps inside the dialog: nothing cut, nothing sideways.
    assert.ok(await label.evaluate((el) => el.scrollWidth <= el.clientWidth + 1), "the title fits its row");
    assert.ok(await overflow(page) <= viewport.width, "nothing sideways: " + await overflow(page));
    await page.keyboard.press("Control+A");
    await page.keyboard.type("no such chat");
    assert.equal(await dialog.locator("#chats-list").innerText(), "No chat title has “no such chat”.");
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Backspace");
    assert.deepEqual((await dialog.locator("[aria-label^='Rename chat: hello']").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")))).length, 2);
    const names = await dialog.locator("[aria-label^='Rename chat: hello']").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")));
    assert.notEqual(names[0], names[1], "their controls are told apart too");
    await shot(page, `chats-list-${name}`);
    await tabTo(page, close, "Shift+Tab");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    // A tap outside the list closes it.
    await page.getByRole("button", { name: "Chats", exact: true }).click();
    await dialog.locator(".row-label").first().waitFor();
    await page.mouse.click(3, viewport.height - 3);
    await dialog.waitFor({ state: "hidden" });
    await done(page);
  });

  test(`The dashboard page draws its charts; the dataset page formats its table, which the keyboard scrolls (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, "alice");
    await page.goto(base + "/dashboards/dash_growth");
    await page.locator("#product:not([aria-busy])").waitFor();
    await page.waitForFunction(() => document.querySelectorAll(".chart-result").length >= 3 && !document.querySelector(".chart-body.loading"));
    const titles = await page.locator(".chart-result .chart-title").allInnerTexts();
    for (const t of ["Weekly signups", "Signups by country", "Top pages"]) assert.ok(titles.some((x) => x.includes(t)), `the dashboard draws ${t}: ${titles}`);
    assert.ok(await page.locator(".chart-result svg.chart-svg").count() >= 3, "each with the chat's chart component");
    // The chart's Table view scrolls in a region the keyboard reaches.
    const table = page.locator(".chart-result").first().getByRole("button", { name: "Table" });
    await tabTo(page, table);
    await page.keyboard.press("Enter");
    const region = page.locator(".chart-result").first().locator(".chart-tabular .table-wrap");
    assert.equal(await region.getAttribute("tabindex"), "0");
    assert.equal(await region.getAttribute("role"), "region");
    await shot(page, `dashboard-page-${name}`);
    await done(page);

    const data = await open({ viewport, colorScheme });
    await signIn(data, "alice");
    await data.goto(base + "/datasets/ds_weekly_signups");
    await data.locator("#product:not([aria-busy])").waitFor();
    const cells = await data.locator("tbody tr").first().locator("td").allInnerTexts();
    assert.deepEqual(cells, ["7 Sep 2026", "1,180"], "a date and a number as people read them");
    assert.match(await data.locator("#product-body .muted").innerText(), /^12 rows( · read \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2})?$/);
    const wrap = data.locator("#product-body .table-wrap");
    await tabTo(data, wrap);
    assert.equal(await wrap.evaluate((el) => el.scrollTop), 0);
    await data.keyboard.press("End");
    await data.waitForFunction(() => document.querySelector("#product-body .table-wrap").scrollTop > 0);
    await shot(data, `dataset-page-${name}`);
    await done(data);
  });

  test(`Approval cards: a waiting step in the present, a destructive Approve, Saved receipts, and the way to a card from the composer (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    await signIn(page, user);
    if (user === "alice") {
      await ask(page, "delete the Revenue dashboard");
      const step = lastTurn(page).locator(".work .step").last();
      assert.equal(await step.locator(".step-label").innerText(), "Delete dashboard", "not \"Deleted dashboard\" while it waits");
      assert.equal(await step.locator(".step-state").innerText(), "Waiting for your approval");
      const approve = lastTurn(page).locator(".approval").getByRole("button", { name: "Approve" });
      assert.match(await approve.getAttribute("class"), /\bdestructive\b/);
      const [bg, danger] = await approve.evaluate((el) => {
        const probe = document.createElement("span");
        probe.style.color = "var(--danger)"; // the page's own colour, resolved
        document.body.append(probe);
        const d = getComputedStyle(probe).color;
        probe.remove();
        return [getComputedStyle(el).backgroundColor, d];
      });
      assert.equal(bg, danger, "a destructive Approve is drawn in the danger colour");
      // From the composer: one Shift+Tab to "Go to it", then the card.
      const note = page.locator("#waiting-note");
      assert.ok(await note.isVisible(), "the composer says an approval waits");
      await page.getByLabel("Message", { exact: true }).focus();
      await page.keyboard.press("Shift+Tab");
      assert.equal(await page.evaluate(() => document.activeElement.id), "to-approval", "one Shift+Tab from the message");
      await page.keyboard.press("Enter");
      assert.ok(await page.evaluate(() => document.activeElement.classList.contains("approval")), "Go to it moves to the card");
      await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement.textContent), "Approve", "and Tab reaches Approve");
      // The shortcut, from the message.
      await page.getByLabel("Message", { exact: true }).focus();
      await page.keyboard.press("Alt+Shift+KeyA");
      assert.ok(await page.evaluate(() => document.activeElement.classList.contains("approval")), "Alt+Shift+A moves to the card");
      await shot(page, `approval-waiting-${name}`);
      await page.keyboard.press("Tab");
      await page.keyboard.press("Tab");
      assert.equal(await page.evaluate(() => document.activeElement.textContent), "Reject");
      await page.keyboard.press("Enter");
      await settled(page);
      assert.ok(!await note.isVisible(), "no note once nothing waits");
      assert.equal(await step.locator(".step-label").textContent(), "Delete dashboard", "a rejected step did not happen: still in the present");
      assert.equal(await step.locator(".step-state").textContent(), "Rejected, did not run");
    }
    // A batch placement's receipt shows its charts Saved.
    await ask(page, "show signups by week");
    await ask(page, "show signups by country");
    await ask(page, "top pages last month");
    await ask(page, "yes, add them to Growth overview");
    await page.getByLabel("Message", { exact: true }).focus();
    await page.keyboard.press("Alt+Shift+KeyA");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Approve");
    await page.keyboard.press("Enter");
    await settled(page);
    const receipt = lastTurn(page).locator(".approval");
    await receipt.locator(".record", { hasText: "You approved it. Done." }).waitFor();
    const targets = await receipt.locator(".targets li").allInnerTexts();
    const charts = targets.filter((t) => t.startsWith("Chart"));
    assert.equal(charts.length, 3, "the three charts: " + targets);
    for (const t of charts) assert.match(t, /Saved on Growth overview$/, "a placed chart reads Saved: " + t);
    await page.reload();
    await page.locator("#focus").waitFor();
    await settled(page);
    for (const t of (await lastTurn(page).locator(".approval .targets li").allInnerTexts()).filter((x) => x.startsWith("Chart"))) {
      assert.match(t, /Saved on Growth overview$/, "after a reload too: " + t);
    }
    await shot(page, `approval-receipt-${name}`);
    await done(page);
  });

  test(`The context picker lists saved items first, and a name's previews as one row (${name})`, async () => {
    for (let i = 0; i < 6; i++) await chat(user, "show signups by week");
    const page = await open({ viewport, colorScheme });
    await signIn(page, user);
    await tabTo(page, page.getByRole("button", { name: "Add context" }));
    await page.keyboard.press("Enter");
    await page.keyboard.type("signups");
    await page.locator('#picker-results[data-query="signups"]').waitFor();
    const charts = page.locator("#picker-results .pick-group").filter({ has: page.getByRole("heading", { name: "Charts" }) });
    const rows = await charts.locator(".pick-row").evaluateAll((els) => els.map((e) => e.querySelector(".pick-label").textContent + " | " + e.querySelector(".pick-info").textContent));
    const saved = rows.filter((r) => !r.includes("| Preview"));
    assert.ok(saved.length >= 2, "the saved charts are listed: " + rows.join("; "));
    assert.deepEqual(rows.slice(0, saved.length), saved, "saved charts first: " + rows.join("; "));
    const previews = rows.filter((r) => r.startsWith("Signups by week | Preview"));
    assert.equal(previews.length, 1, "the previews of one name are one row: " + rows.join("; "));
    assert.match(previews[0], /· \d+ previews of this name$/);
    await page.keyboard.press("ArrowDown");
    assert.ok(await page.evaluate(() => document.activeElement.classList.contains("pick-row")), "arrows move through the rows");
    await shot(page, `picker-${name}`);
    await page.keyboard.press("Escape");
    await done(page);
  });
}

// disconnect leaves Acme without the Demo Analytics connection the test
// made.
async function disconnect() {
  for (const c of (await as("alice", "GET", "/ai/connections")).connections) {
    if (c.name.startsWith("Demo Analytics")) await as("alice", "DELETE", "/ai/connections/" + c.id);
  }
}

for (const [name, viewport, colorScheme] of views) {
  test(`A connection with no tool allowed says which step is left, links to it, and is not made twice (${name})`, async () => {
    const page = await open({ viewport, colorScheme });
    try {
      await signIn(page, "alice");
      await ask(page, "show pageviews from Demo Analytics by week");
      const connect = lastTurn(page).locator(".setup-card").getByRole("button", { name: "Connect Demo Analytics" });
      await tabTo(page, connect, "Shift+Tab");
      await page.keyboard.press("Enter");
      await page.waitForURL(/#\/connections\/conn_[a-z0-9]+$/);
      const connPage = new URL(page.url()).hash;
      // Back to the chat without allowing a tool.
      await tabTo(page, page.locator("#convbar-open"));
      await page.keyboard.press("Enter");
      await page.locator("#focus").waitFor();
      await settled(page);
      await ask(page, "Continue request");
      const said = await lastTurn(page).locator(".answer > .text").last().innerText();
      assert.match(said, /^Demo Analytics is connected, but Ask may use none of its tools yet, so this question cannot be answered now\. Allow at least one tool on its connection page/);
      assert.doesNotMatch(said, /has no connection to/);
      const card = lastTurn(page).locator(".setup-card");
      assert.equal(await card.getByRole("button", { name: /^Connect/ }).count(), 0, "no second Connect");
      const link = card.getByRole("link", { name: "Allow a tool" });
      assert.equal(new URL(await link.evaluate((a) => a.href)).hash, connPage, "the link goes to the step left");
      await shot(page, `no-tool-${name}`);
      // Another chat asks again: the same connection, still one.
      await tabTo(page, page.getByRole("button", { name: "New chat" }), "Shift+Tab");
      await page.keyboard.press("Enter");
      await ask(page, "show pageviews from Demo Analytics by week");
      assert.equal(await lastTurn(page).locator(".setup-card").getByRole("link", { name: "Allow a tool" }).count(), 1);
      const names = (await as("alice", "GET", "/ai/connections")).connections.map((c) => c.name).filter((n) => n.startsWith("Demo Analytics"));
      assert.deepEqual(names, ["Demo Analytics"], "one connection, no \"Demo Analytics 2\"");
      await tabTo(page, lastTurn(page).locator(".setup-card").getByRole("link", { name: "Allow a tool" }), "Shift+Tab");
      await page.keyboard.press("Enter");
      await page.waitForURL((u) => u.hash === connPage);
      await page.getByRole("switch", { name: "Allow access to pageviews_by_week" }).waitFor({ state: "attached" });
      await done(page);
    } finally {
      await disconnect();
    }
  });
}
