// The usage page (#/usage): an owner reads what the team's assistant and
// MCP server cost and which tool fails most, sets a token budget that
// refuses a member's next message, changes and removes it; a member sees
// their own row alone and no budget form; on a phone-sized screen, by
// keyboard alone, nothing runs sideways. Usage comes from real calls:
// chat turns as the demo users and MCP tool calls with API keys
// (TestBrowser passes them in).

import { test, before, after } from "node:test";
import { launch, close, done, a11y, shot, signIn, send, lastTurn, base, phone, desktop, assert } from "./lib.mjs";
import { as, overflow, unlabelled, open } from "./settings-lib.mjs";

const keys = { alice: process.env.ASKBI_MCP_KEY, bob: process.env.ASKBI_MCP_KEY_BOB };
if (!keys.alice || !keys.bob) throw new Error("run these through TestBrowser: it passes alice's and bob's API keys");

// tool calls an MCP tool with a demo user's API key; it answers the
// askbi error code of a failed call, "" for a success.
async function tool(user, name, args) {
  const res = await fetch(base + "/mcp", {
    method: "POST",
    headers: { Authorization: "Bearer " + keys[user], "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args, _meta: { "io.modelcontextprotocol/clientInfo": { name: "usage-test", version: "1" } } } }),
  });
  const doc = await res.json();
  assert.ok(doc.result, `${name}: ${JSON.stringify(doc)}`);
  return doc.result.isError ? doc.result.structuredContent.code : "";
}

// chat sends one message in a new conversation as a demo user.
async function chat(user, message) {
  const { conversation } = await as(user, "POST", "/ai/conversations", {});
  await as(user, "POST", `/ai/conversations/${conversation.id}/messages`, { message });
}

before(async () => {
  await launch();
  // What the team did this week: alice and bob chatted; alice's MCP
  // client ran run_dataset three times, two of them on a dataset that
  // does not exist, and searched once.
  await chat("alice", "show signups by week");
  await chat("bob", "show signups by week");
  assert.equal(await tool("alice", "search_workspace", { query: "signups" }), "");
  assert.equal(await tool("alice", "run_dataset", { dataset_id: "ds_weekly_signups" }), "");
  for (let i = 0; i < 2; i++) assert.equal(await tool("alice", "run_dataset", { dataset_id: "ds_gone" }), "not_found");
  assert.equal(await tool("bob", "search_workspace", { query: "mrr" }), "");
});
after(close);

// cells are the rows of a usage table, each as its cells' text.
const cells = (page, id) => page.locator(`#${id} tbody tr`).evaluateAll((rows) =>
  rows.map((r) => [...r.children].map((c) => c.innerText.trim())));

// cramped lists the usage tables' visible cells narrower than half the
// screen: on a phone each row must read as a card, a cell to a line.
const cramped = (page) => page.locator("#usage-page .usage-table :is(th, td)").evaluateAll((cells) =>
  cells.filter((c) => c.getClientRects().length && !c.closest("thead") && c.getBoundingClientRect().width < innerWidth / 2).map((c) => c.innerText));

// a11yThrough runs axe with each part of the usage page on screen in
// turn: axe judges the contrast of what is in view of the page's scroll
// container, and the tables are below the fold.
async function a11yThrough(page, view) {
  for (const part of ["#usage-totals", "#budget-list", "#usage-people", "#usage-tools", "#usage-models", "#usage-clients", "#usage-connections"]) {
    await page.locator(part).scrollIntoViewIfNeeded();
    await a11y(page, `${view}, at ${part}`);
  }
}

// usage opens the usage page from the header and waits for it to load.
async function usage(page) {
  await page.getByRole("link", { name: "Usage", exact: true }).click();
  await page.locator("#usage-status", { hasText: "Showing" }).waitFor({ state: "attached" });
}

test("An owner sees what the team's assistant cost this week and which tool fails most", async () => {
  const page = await open({ viewport: desktop });
  await signIn(page, "alice");
  await usage(page);
  await page.getByLabel("Period").selectOption("week");
  await page.locator("#usage-status", { hasText: "Showing this week" }).waitFor({ state: "attached" });
  assert.match(page.url(), /#\/usage\?period=week$/, "the period is in the address");
  assert.match(await page.locator("#usage-lede").innerText(), /^How Acme uses the assistant and the MCP server/);
  const totals = Object.fromEntries(await page.locator("#usage-totals .tile").evaluateAll((ts) =>
    ts.map((t) => [t.querySelector("dt").innerText, t.querySelector("dd").firstChild.textContent])));
  assert.match(totals["Estimated cost"], /^\$0\.\d{4}$|^\$\d+\.\d\d$/);
  assert.notEqual(totals["Estimated cost"], "$0.00", "the demo model's tokens cost something");
  assert.equal(totals["Chat messages"], "2");
  assert.equal(totals["MCP tool calls"], "5");
  assert.ok(Number(totals["Tokens"].replace(/,/g, "")) > 0);
  assert.equal(await page.locator("#usage-fails").innerText(), "Fails most: run_dataset (MCP), 2 of 3 calls failed (67%).");

  const people = await cells(page, "usage-people");
  assert.deepEqual(people.map((r) => r[0]), ["alice", "bob"]);
  assert.equal(people[0][1], "1");
  assert.equal(people[0][2], "4 (2 failed)");
  const tools = await cells(page, "usage-tools");
  assert.deepEqual(tools[0].slice(0, 5), ["run_dataset", "MCP", "3", "2", "67%"], "the tool that fails most heads the list");
  assert.match(tools[0][5], /ms|s$/, "its median latency");
  assert.ok(tools.some((r) => r[0] === "search_workspace" && r[1] === "MCP" && r[2] === "2" && r[4] === "0%"));
  const models = await cells(page, "usage-models");
  assert.equal(models.length, 1);
  assert.match(models[0][0], /^askbi-demo · mock$/);
  assert.match(models[0][4], /^\$/);
  const clients = await cells(page, "usage-clients");
  assert.deepEqual(clients.map((r) => [r[0], r[1], r[2], r[3], r[4]]), [["usage-test", "alice", "API key", "4", "2"], ["usage-test", "bob", "API key", "1", "0"]]);
  assert.match(await page.locator("#usage-connections").innerText(), /called no remote MCP connection/);
  // Nothing of what was asked or returned is on the page.
  const text = await page.locator("#usage-page").innerText();
  for (const secret of ["show signups by week", "ds_gone", "signups\"", "mrr"]) assert.ok(!text.includes(secret), "the page shows " + secret);
  await shot(page, "usage-owner");
  await a11yThrough(page, "the owner's usage page");
  await done(page);
});

test("An owner sets a daily team budget; a member's next message is refused with who set it and when it resets; changing and removing it", async () => {
  const page = await open({ viewport: desktop });
  await signIn(page, "alice");
  await usage(page);
  assert.ok(await page.locator("#budget-empty").isVisible());
  assert.match(await page.locator("#budget-empty").innerText(), /No budgets/);
  await page.getByLabel("Applies to").selectOption("");
  await page.getByLabel("Resets").selectOption("day");
  await page.getByLabel("Tokens", { exact: true }).fill("0");
  await page.getByRole("button", { name: "Save budget" }).click();
  assert.equal(await page.locator("#budget-tokens-error").innerText(), "Enter a whole number of tokens, 1 or more.");
  assert.equal(await page.getByLabel("Tokens", { exact: true }).getAttribute("aria-invalid"), "true");
  await page.getByLabel("Tokens", { exact: true }).fill("100");
  await page.getByRole("button", { name: "Save budget" }).click();
  await page.locator("#usage-status", { hasText: "The team's daily budget is 100 tokens: it is used up" }).waitFor({ state: "attached" });
  const card = page.locator("#budget-list .budget");
  assert.equal(await card.count(), 1);
  const cardText = await card.innerText();
  assert.match(cardText, /Whole team, daily/);
  assert.match(cardText, /Used up/);
  assert.match(cardText, /[\d,]+ of 100 tokens used/);
  assert.match(cardText, /Set by alice on \d{1,2} \w{3} \d{4}\. Resets at 00:00 UTC on \d{1,2} \w{3} \d{4}\./);
  await shot(page, "usage-budget-used-up");

  // Bob, in his chat: the refusal says whose budget, who set it and when
  // it resets.
  const bob = await open({ viewport: desktop });
  await signIn(bob, "bob");
  await send(bob, "show signups by week");
  const refusal = await lastTurn(bob).innerText();
  assert.match(refusal, /Acme's daily token budget of 100 tokens is used up/);
  assert.match(refusal, /set by alice on .* resets at 00:00 UTC on /);
  await shot(bob, "usage-budget-refused-chat");
  await done(bob);

  // Bob's refused message shows in the view as a failed one.
  await page.reload();
  await page.locator("#usage-status", { hasText: "Showing" }).waitFor({ state: "attached" });
  const bobRow = (await cells(page, "usage-people")).find((r) => r[0] === "bob");
  assert.equal(bobRow[1], "2 (1 failed)");

  // Change: the form takes the budget's values; a larger one lifts the
  // refusal.
  await page.getByRole("button", { name: "Change budget: Whole team, daily" }).click();
  assert.equal(await page.getByLabel("Tokens", { exact: true }).inputValue(), "100");
  assert.equal(await page.evaluate(() => document.activeElement.id), "budget-tokens", "focus moves to the tokens");
  await page.keyboard.type("100000000"); // the old value is selected: typing replaces it
  await page.keyboard.press("Enter");
  await page.locator("#usage-status", { hasText: "The team's daily budget is 100,000,000 tokens." }).waitFor({ state: "attached" });
  assert.ok(!/Used up/.test(await card.innerText()));
  await as("bob", "POST", "/ai/conversations", {}).then(({ conversation }) =>
    as("bob", "POST", `/ai/conversations/${conversation.id}/messages`, { message: "show signups by week" }));

  // Remove asks first.
  await page.getByRole("button", { name: "Remove budget: Whole team, daily" }).click();
  assert.equal(await page.locator("#confirm-title").innerText(), "Remove the team's daily budget?");
  await page.locator("#confirm").getByRole("button", { name: "Cancel" }).click();
  assert.equal(await card.count(), 1, "Cancel keeps it");
  await page.getByRole("button", { name: "Remove budget: Whole team, daily" }).click();
  await page.locator("#confirm").getByRole("button", { name: "Remove" }).click();
  await page.locator("#usage-status", { hasText: "Removed the team's daily budget." }).waitFor({ state: "attached" });
  assert.equal(await card.count(), 0);
  assert.ok(await page.locator("#budget-empty").isVisible());
  const { budgets } = await as("alice", "GET", "/ai/usage/budgets");
  assert.deepEqual(budgets, [], "and it is gone on the server");
  await done(page);
});

test("At 375 px by keyboard alone: a member reaches Usage from the header and sees only their own row; an owner sets a budget", async () => {
  const active = (page) => page.evaluate(() => {
    const a = document.activeElement;
    return a && (a.getAttribute("aria-label") || (a.labels && a.labels[0] && a.labels[0].textContent.trim()) || a.textContent.trim() || a.id || a.tagName);
  });
  const tabTo = async (page, want) => {
    for (let i = 0; i < 80; i++) {
      if (String(await active(page)).match(want)) return;
      await page.keyboard.press("Tab");
    }
    assert.fail("keyboard focus never reached " + want + "; last: " + await active(page));
  };
  const visibleFocus = (page) => page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle !== "none");

  const page = await open({ viewport: phone, reducedMotion: "reduce" });
  await signIn(page, "bob");
  await page.locator("body").focus();
  await tabTo(page, /^Usage$/);
  assert.ok(await visibleFocus(page), "the header link shows focus");
  await page.keyboard.press("Enter");
  await page.locator("#usage-status", { hasText: "Showing" }).waitFor({ state: "attached" });
  assert.match(await page.locator("#usage-lede").innerText(), /^Your own use of the assistant and the MCP server in Acme\. Owners and admins see the whole team\./);
  assert.deepEqual((await cells(page, "usage-people")).map((r) => r[0]), ["bob"], "a member sees their own row alone");
  assert.deepEqual((await cells(page, "usage-clients")).map((r) => r[1]), ["bob"]);
  const mcpTools = (await cells(page, "usage-tools")).filter((r) => r[1] === "MCP").map((r) => r[0]);
  assert.deepEqual(mcpTools, ["search_workspace"], "his MCP calls alone, not alice's");
  assert.ok(await page.locator("#budget-form").isHidden(), "no budget form for a member");
  assert.ok(await page.locator("#budget-readonly").isVisible());
  // The period, by keyboard.
  await tabTo(page, /^Period$/);
  assert.ok(await visibleFocus(page));
  await page.keyboard.press("ArrowDown");
  await page.locator("#usage-status", { hasText: /Showing (?!last 7 days)/ }).waitFor({ state: "attached" });
  assert.ok(await overflow(page) <= phone.width, "no horizontal scrolling: " + await overflow(page));
  assert.deepEqual(await cramped(page), [], "each table row reads as a card: no cell squeezed into a column");
  assert.deepEqual(await unlabelled(page), [], "every control has a name");
  await shot(page, "phone-usage-member");
  await a11yThrough(page, "a member's usage page at 375 px");
  await done(page);

  const owner = await open({ viewport: phone, reducedMotion: "reduce" });
  await signIn(owner, "alice");
  await owner.locator("body").focus();
  await tabTo(owner, /^Usage$/);
  await owner.keyboard.press("Enter");
  await owner.locator("#usage-status", { hasText: "Showing" }).waitFor({ state: "attached" });
  await tabTo(owner, /^Applies to$/);
  assert.ok(await visibleFocus(owner));
  await tabTo(owner, /^Resets$/);
  await owner.keyboard.press("ArrowDown"); // monthly
  await tabTo(owner, /^Tokens$/);
  await owner.keyboard.type("250000");
  await owner.keyboard.press("Enter");
  await owner.locator("#usage-status", { hasText: "The team's monthly budget is 250,000 tokens." }).waitFor({ state: "attached" });
  assert.match(await owner.locator("#budget-list").innerText(), /Whole team, monthly[\s\S]*of 250,000 tokens used[\s\S]*Resets at 00:00 UTC on 1 /);
  assert.ok(await overflow(owner) <= phone.width, "no horizontal scrolling for the owner: " + await overflow(owner));
  assert.deepEqual(await cramped(owner), []);
  assert.deepEqual(await unlabelled(owner), []);
  await tabTo(owner, /^Remove budget: Whole team, monthly$/);
  assert.ok(await visibleFocus(owner));
  await shot(owner, "phone-usage-owner");
  await owner.keyboard.press("Enter");
  await owner.locator("#confirm").getByRole("button", { name: "Remove" }).press("Enter");
  await owner.locator("#usage-status", { hasText: "Removed the team's monthly budget." }).waitFor({ state: "attached" });
  await done(owner);
});

test("In the dark theme too, a used-up budget and a failing tool read without contrast problems", async () => {
  await as("alice", "PUT", "/ai/usage/budgets", { period: "day", tokens: 1 });
  const page = await open({ viewport: desktop, colorScheme: "dark" });
  await signIn(page, "alice");
  await usage(page);
  await page.locator("#budget-list .budget.exceeded").waitFor();
  assert.ok(await page.locator("#usage-tools .bad").count() > 0, "a failing tool's error rate is marked");
  await shot(page, "usage-dark");
  await a11yThrough(page, "the usage page, dark");
  await done(page);
  await as("alice", "DELETE", "/ai/usage/budgets?period=day");
});
