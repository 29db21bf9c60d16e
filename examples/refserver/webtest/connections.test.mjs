// The connection page (seed 000, "Missing connection": the connection
// form and tool approval), against the demo's analytics MCP server and
// the fixture servers of webfixture_test.go.

import { test, before, after } from "node:test";
import { launch, close, done, shot, signIn, send, base, assert } from "./lib.mjs";
import { analytics, fixture, as, connection, open } from "./settings-lib.mjs";

before(launch);
after(close);

const status = (page) => page.locator("#connections-status");
const rows = (page) => page.locator("#tool-rows .tool");
const row = (page, name) => page.locator(`#tool-rows .tool[data-tool="${name}"]`);
const toggle = (page, name) => page.getByRole("switch", { name: "Allow access to " + name });
const summary = (page) => page.locator("#tool-summary");

// checked maps the shown page's tools to their switch (null: no switch).
function checked(page) {
  return rows(page).evaluateAll((lis) => Object.fromEntries(lis.map((li) => {
    const s = li.querySelector('input[role="switch"]');
    return [li.dataset.tool, s ? s.checked : null];
  })));
}

async function openConnections(page) {
  await page.getByRole("link", { name: "Connections", exact: true }).click();
  await page.locator("#connections-page:not([hidden]) #connections-body > *").first().waitFor();
}

// add fills in and sends the connection form.
async function add(page, { name, url, auth = "Bearer token", token }) {
  await page.getByRole("button", { name: "Add connection" }).click();
  await page.getByLabel("Name", { exact: true }).fill(name);
  await page.getByRole("textbox", { name: "Server URL", exact: true }).fill(url);
  await page.getByRole("radio", { name: auth }).check();
  if (token) await page.getByLabel("Token", { exact: true }).fill(token);
  await page.locator(".conn-form button[type=submit]").click();
}

async function settledTools(page, want) {
  await page.waitForFunction((want) => {
    const s = document.getElementById("tool-summary");
    return s && s.textContent.startsWith(want);
  }, want);
}

test("An admin adds a bearer connection, refreshes its tools, allows one, then all; the destructive tool stays blocked; approvals survive a reload", async () => {
  const page = await open();
  await signIn(page, "alice");
  await openConnections(page);
  await add(page, { name: "My analytics", url: analytics.url, token: analytics.token });
  await page.locator("#connections-title", { hasText: "My analytics" }).waitFor();
  await status(page).filter({ hasText: "Connection added. Found 5 tools. New tools start off." }).waitFor();
  assert.ok(!(await page.content()).includes(analytics.token), "the token is never shown");
  assert.deepEqual(await checked(page), { create_annotation: false, delete_project_data: null, top_pages: false,
    traffic_summary: false, weekly_active_users: false }, "new tools start off; the destructive one has no switch");
  assert.match(await row(page, "delete_project_data").innerText(), /Blocked: marked destructive/);
  assert.match(await page.locator(".facts").innerText(), /Active[\s\S]*Bearer token[\s\S]*Token saved[\s\S]*Tools last listed just now[\s\S]*5 tools/);
  await shot(page, "connection-added");

  await toggle(page, "top_pages").check();
  await status(page).filter({ hasText: "top_pages is allowed for Ask and datasets." }).waitFor();
  assert.ok(await toggle(page, "top_pages").isChecked());
  await page.getByRole("button", { name: "Allow all" }).click();
  await status(page).filter({ hasText: "Allowed 3 tools. 1 stays off" }).waitFor();
  assert.deepEqual(await checked(page), { create_annotation: true, delete_project_data: null, top_pages: true,
    traffic_summary: true, weekly_active_users: true }, "Allow all never allows the destructive tool");
  await shot(page, "connection-allowed");

  await page.getByRole("button", { name: "Refresh tools" }).click();
  await status(page).filter({ hasText: "Found 5 tools." }).waitFor();
  await page.reload();
  await settledTools(page, "5 tools");
  assert.deepEqual(await checked(page), { create_annotation: true, delete_project_data: null, top_pages: true,
    traffic_summary: true, weekly_active_users: true }, "approvals are the server's: a refresh and a reload keep them");
  await page.getByRole("link", { name: "← All connections" }).click();
  const card = page.locator(".conn-card", { hasText: "My analytics" });
  await card.waitFor();
  assert.match(await card.innerText(), /Active[\s\S]*127\.0\.0\.1:\d+[\s\S]*Bearer token[\s\S]*Token saved[\s\S]*Tools last listed just now[\s\S]*5 tools/);
  await shot(page, "connections-list");
  await done(page);
});

test("Ten tools a page; search and kind apply to the whole list and go back to page 1; approvals survive paging; Allow all spans every page and filter", async () => {
  const page = await open();
  await signIn(page, "carol"); // the rate limit is per user: spread the load
  await openConnections(page);
  await add(page, { name: "Wide analytics", url: fixture.base + "/mcp", token: fixture.token });
  await settledTools(page, "23 tools, page 1 of 3.");
  assert.equal(await rows(page).count(), 10);
  assert.match(await page.locator(".facts").innerText(), /22 tools[\s\S]*1 tool excluded: failed the safety checks/);
  assert.ok(!await page.getByText("Tool focus").count(), "no Tool focus: no tool was left out");
  const firstOff = async () => Object.entries(await checked(page)).find(([, on]) => on === false)[0];
  const first = await firstOff();
  await toggle(page, first).check();
  await status(page).filter({ hasText: `${first} is allowed` }).waitFor();
  await page.getByRole("button", { name: "Next" }).click();
  await settledTools(page, "23 tools, page 2 of 3.");
  const second = await firstOff();
  await toggle(page, second).check();
  await status(page).filter({ hasText: `${second} is allowed` }).waitFor();
  await page.getByRole("button", { name: "Next" }).click();
  await settledTools(page, "23 tools, page 3 of 3.");
  assert.equal(await rows(page).count(), 3);
  const last = Object.keys(await checked(page)).at(-1);
  await page.getByRole("button", { name: "Previous" }).click();
  await page.getByRole("button", { name: "Previous" }).click();
  await settledTools(page, "23 tools, page 1 of 3.");
  assert.equal((await checked(page))[first], true, "an approval survives leaving its page");
  await page.getByRole("button", { name: "Next" }).click();
  await settledTools(page, "23 tools, page 2 of 3.");
  assert.equal((await checked(page))[second], true);
  await shot(page, "connection-tools-page-2");

  // Search the whole list, from page 2: back to page 1 with the match.
  await page.getByLabel("Search tools").fill(last);
  await settledTools(page, "1 tool matches.");
  assert.deepEqual(Object.keys(await checked(page)), [last], "a tool of page 3 is found from page 2");
  await page.getByLabel("Search tools").fill("segment");
  await settledTools(page, "2 tools match.");
  assert.deepEqual(Object.keys(await checked(page)).sort(), ["create_segment", "delete_segment"]);
  await page.getByLabel("Search tools").fill("");
  await settledTools(page, "23 tools, page 1 of 3.");
  // The kind filter, from page 2: back to page 1.
  await page.getByRole("button", { name: "Next" }).click();
  await settledTools(page, "23 tools, page 2 of 3.");
  await page.getByLabel("Kind").selectOption({ label: "Read-only" });
  await settledTools(page, "15 tools match, page 1 of 2.");
  await page.getByLabel("Kind").selectOption({ label: "Destructive" });
  await settledTools(page, "2 tools match.");
  assert.deepEqual(await checked(page), { delete_segment: null, purge_events: null });
  for (const t of ["delete_segment", "purge_events"]) assert.match(await row(page, t).innerText(), /Blocked: marked destructive/);

  // Allow all from a filtered view: every page and every kind, never
  // destructive, unknown or excluded tools.
  await page.getByLabel("Kind").selectOption({ label: "Read-only" });
  await settledTools(page, "15 tools match, page 1 of 2.");
  await page.getByRole("button", { name: "Allow all" }).click();
  await status(page).filter({ hasText: "Allowed 16 tools. 5 stay off" }).waitFor();
  await page.reload();
  await settledTools(page, "23 tools, page 1 of 3.");
  const all = {};
  for (const [hint, pages] of [["Changes data", ["4 tools match."]], ["Unknown", ["2 tools match."]],
    ["Read-only", ["15 tools match, page 1 of 2.", "15 tools match, page 2 of 2."]]]) {
    await page.getByLabel("Kind").selectOption({ label: hint });
    for (const [i, want] of pages.entries()) {
      if (i) await page.getByRole("button", { name: "Next" }).click();
      await settledTools(page, want);
      Object.assign(all, await checked(page));
    }
  }
  assert.equal(all.run_custom_script, false, "an unknown tool stays off");
  assert.equal(all.sync_warehouse, false);
  assert.equal(all.legacy_import, null, "an excluded tool cannot be allowed");
  for (const t of ["create_segment", "rename_event", "schedule_export", "tag_session", "active_users", "top_referrers", "page_views"]) {
    assert.equal(all[t], true, t + " was allowed by Allow all");
  }
  await page.getByLabel("Search tools").fill("legacy");
  await settledTools(page, "1 tool matches.");
  assert.match(await row(page, "legacy_import").innerText(), /Excluded: .*nest/i);
  await shot(page, "connection-tools-filtered");
  await done(page);
});

test("A changed definition shows: a new description is noted, a widened tool needs approval again", async () => {
  const c = await connection("Changing analytics", fixture.base + "/mcp", fixture.token);
  for (const t of ["funnel_report", "page_views"]) await as("alice", "PUT", `/ai/connections/${c.id}/tools/${t}/access`, { allowed: true });
  await fetch(fixture.base + "/control/revise", { method: "POST" });
  try {
    const page = await open();
    await signIn(page, "alice");
    await openConnections(page);
    await page.getByRole("link", { name: "Changing analytics" }).click();
    await settledTools(page, "23 tools");
    await page.getByRole("button", { name: "Refresh tools" }).click();
    await status(page).filter({ hasText: "Found 22 tools." }).waitFor();
    await page.getByLabel("Search tools").fill("funnel");
    await settledTools(page, "1 tool matches.");
    assert.match(await row(page, "funnel_report").innerText(), /signup funnel[\s\S]*Its description changed since it was approved\./);
    assert.ok(await toggle(page, "funnel_report").isChecked(), "a description change blocks nothing");
    await page.getByLabel("Search tools").fill("page_views");
    await settledTools(page, "1 tool matches.");
    assert.match(await row(page, "page_views").innerText(), /Changes data[\s\S]*Needs approval again: its annotations now say mutating; approve it again to use it\./);
    assert.ok(!await toggle(page, "page_views").isChecked(), "a widening change turned it off");
    await shot(page, "connection-tool-changed");
    await toggle(page, "page_views").check();
    await status(page).filter({ hasText: "page_views is allowed" }).waitFor();
    assert.doesNotMatch(await row(page, "page_views").innerText(), /Needs approval again/);
    await done(page);
  } finally {
    await fetch(fixture.base + "/control/restore", { method: "POST" });
  }
});

test("A failed connection says why in a sentence and keeps the previous tools; a bad URL is refused by its field", async () => {
  const page = await open();
  await signIn(page, "alice");
  await openConnections(page);
  // A URL the policy refuses: said by the field, nothing saved.
  await add(page, { name: "Bad", url: "ftp://mcp.example.com/mcp", token: "x" });
  const fieldError = page.locator("#cf-field-error");
  await fieldError.waitFor();
  assert.equal(await fieldError.innerText(), "The scheme must be http or https.");
  assert.equal(await page.getByRole("textbox", { name: "Server URL", exact: true }).getAttribute("aria-invalid"), "true");
  await shot(page, "connection-bad-url");
  await page.getByRole("button", { name: "Cancel" }).click();
  assert.equal(await page.locator(".conn-card", { hasText: "Bad" }).count(), 0, "nothing was saved");

  // No server there: saved, not connected, with a sentence.
  await add(page, { name: "Nowhere", url: "http://127.0.0.1:9/mcp", token: "x" });
  const problem = page.locator("#connection-problem");
  await problem.waitFor();
  assert.match(await problem.innerText(), /^The MCP server could not be reached or did not speak MCP; check the URL and try again\.$/);
  assert.match(await page.locator(".facts").innerText(), /Not connected/);

  // A token the server refuses: the previous tools and approvals stay.
  const c = await connection("Token test", fixture.base + "/mcp", fixture.token);
  await as("alice", "PUT", `/ai/connections/${c.id}/tools/active_users/access`, { allowed: true });
  await page.goto(base + "/#/connections/" + c.id);
  await settledTools(page, "23 tools");
  await page.getByRole("button", { name: "Edit" }).click();
  assert.equal(await page.getByRole("textbox", { name: "Server URL", exact: true }).inputValue(), fixture.base + "/mcp");
  assert.match(await page.locator("#cf-token-hint").innerText(), /A token is saved/);
  await page.getByLabel("Token", { exact: true }).fill("not-the-token");
  await page.getByRole("button", { name: "Save changes" }).click();
  await problem.filter({ hasText: "refused" }).waitFor();
  const text = await problem.innerText();
  assert.match(text, /The MCP server refused the connection's credentials; sign in again or update the token\./);
  assert.match(text, /The tools from the last successful refresh are kept, with their approvals\./);
  assert.equal(await problem.getAttribute("role"), "alert");
  const html = await page.content();
  for (const bad of ["Traceback", "auth.py", "not-the-token"]) assert.ok(!html.includes(bad), `no "${bad}" on the page`);
  await settledTools(page, "23 tools");
  assert.equal((await checked(page)).active_users, true, "the approval is kept");
  assert.match(await page.locator(".facts").innerText(), /Last refresh failed/);
  await shot(page, "connection-refused-token");
  // The right token again: the failure is gone.
  await page.getByRole("button", { name: "Edit" }).click();
  await page.getByLabel("Token", { exact: true }).fill(fixture.token);
  await page.getByRole("button", { name: "Save changes" }).click();
  await status(page).filter({ hasText: "Saved. Found 22 tools." }).waitFor();
  assert.equal(await problem.count(), 0);
  await done(page);
});

test("No usable tools is said plainly; Tool focus shows only when tools were left out; OAuth saves and says sign-in is needed", async () => {
  const page = await open();
  await signIn(page, "carol");
  await openConnections(page);
  await add(page, { name: "Unusable", url: fixture.base + "/mcp/unusable", token: fixture.token });
  const problem = page.locator("#connection-problem");
  await problem.waitFor();
  assert.equal(await problem.innerText(), "No usable tools: None of the server's 2 tools passed the schema safety checks, so none can be used.");
  await shot(page, "connection-no-usable-tools");

  await page.getByRole("link", { name: "← All connections" }).click();
  await add(page, { name: "Huge", url: fixture.base + "/mcp/huge", token: fixture.token });
  await settledTools(page, "250 tools, page 1 of 25.");
  const focus = page.locator(".tool-focus");
  assert.match(await focus.innerText(), /10 were left out/);
  assert.match(await page.locator(".facts").innerText(), /250 of 260 tools shown/);
  await page.getByLabel("Tool focus").fill("metric 259");
  await page.getByRole("button", { name: "Save and reload tools" }).click();
  await status(page).filter({ hasText: "Tool focus saved. The tools were reloaded." }).waitFor();
  assert.equal(await page.getByLabel("Tool focus").inputValue(), "metric 259");
  await shot(page, "connection-tool-focus");

  await page.getByRole("link", { name: "← All connections" }).click();
  await page.getByRole("button", { name: "Add connection" }).click();
  await page.getByRole("radio", { name: "OAuth" }).check();
  assert.ok(!await page.getByLabel("Token", { exact: true }).isVisible(), "no token field for OAuth");
  await page.getByRole("button", { name: "Cancel" }).click();
  await add(page, { name: "Hosted analytics", url: fixture.base + "/mcp", auth: "OAuth" });
  await problem.filter({ hasText: "Sign-in is needed" }).waitFor();
  assert.match(await problem.innerText(), /Sign-in is needed\. .*The connection is saved; Reconnect tries again\./);
  assert.match(await page.locator(".facts").innerText(), /Sign-in needed[\s\S]*OAuth/);
  assert.ok(await page.getByRole("button", { name: "Reconnect" }).isVisible(), "an existing OAuth connection reconnects");
  await shot(page, "connection-oauth-sign-in-needed");
  await done(page);
});

test("The OAuth submit reads Save and connect", async () => {
  const page = await open();
  await signIn(page, "alice");
  await openConnections(page);
  await page.getByRole("button", { name: "Add connection" }).click();
  const submit = page.locator(".conn-form button[type=submit]");
  assert.equal(await submit.innerText(), "Add connection");
  await page.getByRole("radio", { name: "OAuth" }).check();
  assert.equal(await submit.innerText(), "Save and connect");
  await page.getByRole("radio", { name: "No authentication" }).check();
  assert.equal(await submit.innerText(), "Add connection");
  await done(page);
});

test("A viewer reads the connections and their tools, changes nothing, and is told to ask an admin", async () => {
  await connection("Wide for viewers", fixture.base + "/mcp", fixture.token);
  const page = await open();
  await signIn(page, "vic");
  await openConnections(page);
  assert.equal(await page.getByRole("button", { name: "Add connection" }).count(), 0);
  assert.match(await page.locator("#connections-body .lede").innerText(), /Owners and admins add them/);
  await page.getByRole("link", { name: "Wide for viewers" }).click();
  await settledTools(page, "23 tools, page 1 of 3.");
  for (const b of ["Refresh tools", "Edit", "Delete", "Allow all"]) assert.equal(await page.getByRole("button", { name: b }).count(), 0, `no ${b}`);
  assert.equal(await page.getByRole("switch").count(), 0, "no switches");
  assert.ok(await page.getByText("Ask an admin").count() >= 8, "a tool that is off says Ask an admin");
  await shot(page, "connection-viewer");
  await page.getByRole("link", { name: "← All connections" }).click();
  await page.getByRole("link", { name: "Acme analytics" }).click();
  await settledTools(page, "5 tools");
  assert.match(await row(page, "top_pages").innerText(), /Allowed/);
  assert.match(await row(page, "delete_project_data").innerText(), /Blocked/);
  await done(page);
});

test("Deleting a connection asks first", async () => {
  await connection("Short-lived", analytics.url, analytics.token);
  const page = await open();
  await signIn(page, "alice");
  await openConnections(page);
  await page.getByRole("link", { name: "Short-lived" }).click();
  await settledTools(page, "5 tools");
  await page.getByRole("button", { name: "Delete" }).click();
  assert.equal(await page.locator("#confirm-title").innerText(), "Delete Short-lived?");
  await page.locator("#confirm").getByRole("button", { name: "Cancel" }).click();
  assert.equal(await page.locator("#connections-title").innerText(), "Short-lived");
  await page.getByRole("button", { name: "Delete" }).click();
  await page.locator("#confirm").getByRole("button", { name: "Delete connection" }).click();
  await status(page).filter({ hasText: "Short-lived was deleted." }).waitFor();
  assert.equal(await page.locator(".conn-card", { hasText: "Short-lived" }).count(), 0);
  assert.equal(new URL(page.url()).hash, "#/connections");
  await done(page);
});

test("Save and connect signs in to the provider and comes back to the connection, its tools listed and off", async () => {
  const page = await open();
  await signIn(page, "alice");
  const { setup } = await as("alice", "GET", "/ai/connections/setup?provider=" + encodeURIComponent("Demo Analytics"));
  const url = setup.options.find((o) => o.state === "mcp_oauth_setup").mcp_url;
  await openConnections(page);
  const posts = [];
  page.on("request", (r) => { if (r.method() === "POST") posts.push(new URL(r.url()).pathname); });
  await add(page, { name: "Demo by hand", url, auth: "OAuth" });
  await page.waitForURL(/\/#\/connections\/conn_[a-z0-9]+$/);
  assert.deepEqual(posts, ["/ai/connections/connect"], "one save and connect, as the chat's card does");
  await page.locator("#connections-return .conn-banner").filter({ hasText: "Demo by hand is connected." }).waitFor();
  assert.equal(await page.evaluate(() => location.search), "", "the return parameters are consumed");
  await settledTools(page, "3 tools");
  assert.match(await page.locator(".facts").innerText(), /Active[\s\S]*OAuth[\s\S]*Token saved/);
  assert.deepEqual(await checked(page), { create_goal: false, pageviews_by_week: false, top_referrers: false }, "new tools start off");
  assert.ok(await page.getByRole("button", { name: "Refresh tools" }).isVisible(), "a signed-in connection refreshes its tools");
  await page.reload();
  await settledTools(page, "3 tools");
  assert.equal(await page.locator("#connections-return").innerText(), "", "a reload does not repeat the return");
  await done(page);
});

test("The OAuth return makes the conversation the active one without opening it; the bar offers it; a reload does not repeat it", async () => {
  const page = await open();
  await signIn(page, "alice");
  await send(page, "show signups by week");
  const conv = await page.evaluate(() => sessionStorage.getItem(Object.keys(sessionStorage).find((k) => k.startsWith("askbi.active."))));
  await page.getByRole("button", { name: "Close answer" }).click();
  await page.evaluate(() => { for (const k of Object.keys(sessionStorage)) if (k.startsWith("askbi.active.")) sessionStorage.removeItem(k); });
  let posts = 0;
  page.on("request", (r) => { if (r.method() === "POST" && /\/messages$|\/approvals\//.test(r.url())) posts++; });
  const ret = (team) => `/?oauth=connected&connection=conn_acme_analytics&conversation=${conv}&team=${team}#/connections/conn_acme_analytics`;
  await page.goto(base + ret("acme"));
  await settledTools(page, "5 tools");
  assert.match(await page.locator("#connections-return").innerText(), /Acme analytics is connected\. .*Your chat is waiting in the bar below\./);
  assert.ok(await page.locator("#home").isHidden(), "the chat stays closed");
  assert.ok(!page.url().includes("conversation=") && !page.url().includes("oauth="), "the parameters are consumed: " + page.url());
  assert.ok(page.url().endsWith("/#/connections/conn_acme_analytics"));
  await page.locator("#convbar-open").filter({ hasText: "show signups by week" }).waitFor();
  await shot(page, "connection-oauth-return");
  await page.reload();
  await settledTools(page, "5 tools");
  assert.equal(await page.locator("#connections-return").innerText(), "", "a reload does not repeat it");

  await page.goto(base + ret("globex").replace("oauth=connected", "oauth=failed&code=forbidden"));
  await page.locator("#connections-return .conn-banner.failed").waitFor();
  assert.match(await page.locator("#connections-return").innerText(), /refused or started elsewhere\. Nothing was connected\.[\s\S]*in another team/);

  // The chat made active by the first return is still offered; another
  // team's return changed nothing.
  await page.locator("#convbar-open").filter({ hasText: "show signups by week" }).click();
  await page.locator("#focus").waitFor();
  await page.locator(".chart-result").first().waitFor();
  assert.equal(await page.locator("#conv-title").innerText(), "show signups by week");
  assert.equal(posts, 0, "no message was sent");
  await done(page);
});
