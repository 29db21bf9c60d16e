// The chart app (MCP Apps) in a real host: a small host page built on
// the MCP Apps SDK's own host side (@modelcontextprotocol/ext-apps
// AppBridge and PostMessageTransport) renders the app resource that
// resources/read returns, in a sandboxed frame under the CSP the
// resource declares, and hands it real tools/call answers of the
// reference server, as Claude, ChatGPT or VS Code would. Nothing here
// reaches those hosts: this is the protocol and the drawing, tested.

import { test, before, after } from "node:test";
import fs from "node:fs";
import path from "node:path";
import { launch, close, a11y, shot, desktop, phone, base, assert } from "./lib.mjs";

const tools = process.env.ASKBI_BROWSER_TOOLS;
const key = process.env.ASKBI_MCP_KEY;
const HOST = "http://host.test";
let browser;

before(async () => { browser = await launch(); });
after(close);

// mcp sends one JSON-RPC request to the reference server's MCP endpoint
// as alice (revision 2025-11-25; the server is stateless).
let ids = 0;
async function mcp(method, params) {
  const res = await fetch(base + "/mcp", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
      Authorization: "Bearer " + key, "MCP-Protocol-Version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++ids, method, params }),
  });
  const msg = await res.json();
  assert.ok(msg.result, `${method}: ${JSON.stringify(msg.error)}`);
  return msg.result;
}

// The host page loads the SDK from the tools folder, as ES modules
// through an import map of the packages' browser entries.
const modules = path.join(tools, "node_modules");
function entry(spec) {
  const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
  const sub = "." + spec.slice(name.length);
  const pkg = JSON.parse(fs.readFileSync(path.join(modules, name, "package.json"), "utf8"));
  const pick = (e) => typeof e === "string" ? e : e && (pick(e.browser) || pick(e.import) || pick(e.default));
  const exp = pkg.exports && (typeof pkg.exports === "string" ? { ".": pkg.exports } : pkg.exports);
  const file = (exp && pick(exp[sub])) || (sub === "." && (pkg.module || pkg.main));
  assert.ok(file, "no browser entry for " + spec);
  return "/node_modules/" + path.posix.join(name, file);
}
const imports = Object.fromEntries(["@modelcontextprotocol/ext-apps/app-bridge", "@modelcontextprotocol/client",
  "@modelcontextprotocol/client/_shims", "@modelcontextprotocol/core", "@modelcontextprotocol/core/internal", "zod", "zod/v4",
  "zod/compile", "pkce-challenge", "eventsource", "eventsource-parser", "eventsource-parser/stream", "jose"].map((s) => [s, entry(s)]));

const hostHTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test host</title>
<script type="importmap">${JSON.stringify({ imports })}</script>
<style>body{margin:0;font:14px system-ui} main{padding:8px} iframe{display:block;width:100%;border:1px solid #999;height:50px}</style>
<script type="module">
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
window.sizes = []; window.opened = [];
// render shows the app for one tool call, as a chat host does: the
// frame sandboxed (scripts only, no same origin), the resource's CSP
// applied, then the call's input and its real result.
window.render = async ({ html, csp, tool, args, result, theme }) => {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.title = "askbi chart";
  document.querySelector("main").replaceChildren(frame);
  const list = (domains) => (domains && domains.length ? domains.join(" ") : "'none'");
  const policy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
    "connect-src " + list(csp.connectDomains) + "; frame-src " + list(csp.frameDomains) + "; base-uri 'none'; form-action 'none'";
  const bridge = new AppBridge(null, { name: "askbi test host", version: "1" }, { openLinks: {} },
    { hostContext: { theme, displayMode: "inline", platform: "web", toolInfo: { tool } } });
  bridge.onsizechange = ({ height }) => { window.sizes.push(height); frame.style.height = height + "px"; };
  bridge.onopenlink = async ({ url }) => { window.opened.push(url); return {}; };
  const ready = new Promise((r) => { bridge.oninitialized = r; });
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html.replace("<head>", '<head><meta http-equiv="Content-Security-Policy" content="' + policy + '">');
  await ready;
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  window.bridge = bridge;
};
window.hostReady = true;
</script></head><body><main></main></body></html>`;

// host opens the host page at a viewport and color scheme, with errors
// collected from it and from the app's frame (a CSP violation is one).
async function host(viewport, colorScheme) {
  const context = await browser.newContext({ viewport, colorScheme });
  await context.route(HOST + "/**", async (route) => {
    const url = new URL(route.request().url());
    if (url.pathname === "/") return route.fulfill({ contentType: "text/html", body: hostHTML });
    const file = path.join(modules, decodeURIComponent(url.pathname.slice("/node_modules/".length)));
    if (!url.pathname.startsWith("/node_modules/") || !file.startsWith(modules) || !fs.existsSync(file)) return route.fulfill({ status: 404, body: "" });
    return route.fulfill({ contentType: "text/javascript", body: fs.readFileSync(file) });
  });
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push("page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") page.problems.push("console: " + m.text()); });
  await page.goto(HOST + "/");
  await page.waitForFunction(() => window.hostReady === true);
  return page;
}

// app is what the server offers: the tool definitions and the app.
async function app() {
  const { tools: list } = await mcp("tools/list", {});
  const { contents } = await mcp("resources/read", { uri: "ui://askbi/chart.html" });
  assert.equal(contents.length, 1);
  assert.equal(contents[0].mimeType, "text/html;profile=mcp-app");
  return { list, html: contents[0].text, csp: contents[0]._meta.ui.csp };
}

async function render(page, offer, name, args, result, theme) {
  const tool = offer.list.find((t) => t.name === name);
  assert.equal(tool._meta.ui.resourceUri, "ui://askbi/chart.html", name + " links the app");
  await page.evaluate((a) => window.render(a), { html: offer.html, csp: offer.csp, tool, args, result, theme });
  const frame = page.frameLocator("iframe");
  await frame.locator("main h1, main [role=alert]").first().waitFor();
  return frame;
}

// finish checks the host and the app had no errors and no critical or
// serious accessibility finding, in the app's frame and around it.
async function finish(page) {
  assert.deepEqual(page.problems, [], "the host or the app reported errors");
  const frame = page.frames().find((f) => f !== page.mainFrame());
  await a11y(frame, "the chart app");
  await page.context().close();
}

const lum = (rgb) => {
  const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};

for (const [viewport, size] of [[desktop, "1280"], [phone, "375"]]) {
  for (const theme of ["light", "dark"]) {
    test(`get_chart_data's answer is drawn inline at ${size} px, ${theme}: one point per row, the host's theme, its own size, Open in askbi.`, async () => {
      const offer = await app();
      const args = { chart_id: "chart_weekly_signups" };
      const result = await mcp("tools/call", { name: "get_chart_data", arguments: args });
      const sc = result.structuredContent;
      assert.ok(sc.labels.length >= 4, "the chart has rows");
      const page = await host(viewport, theme);
      const frame = await render(page, offer, "get_chart_data", args, result, theme);
      assert.equal(await frame.locator("h1").innerText(), sc.chart.name);
      await frame.locator("svg.chart-svg").waitFor();
      assert.equal(await frame.locator("svg.chart-svg .dot").count(), sc.labels.length, "one point per row");
      assert.equal(await frame.locator("html").getAttribute("data-theme"), theme, "the app follows the host's theme");
      const bg = await frame.locator("body").evaluate((b) => getComputedStyle(b).backgroundColor);
      assert.ok(theme === "dark" ? lum(bg) < 0.1 : lum(bg) > 0.8, `background ${bg} fits the ${theme} theme`);
      const tick = await frame.locator("svg.chart-svg .tick").first().evaluate((t) => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getScreenCTM().a);
      assert.ok(tick >= 11, `tick text is ${tick.toFixed(1)} px on screen`);
      // Sized by the app: the host made the frame as tall as it asked.
      await page.waitForFunction(() => window.sizes.length > 0 && Math.abs(document.querySelector("iframe").getBoundingClientRect().height - window.sizes.at(-1)) <= 3);
      const asked = await page.evaluate(() => window.sizes.at(-1));
      assert.ok(asked > 200, `the app asked for ${asked} px`);
      // The app's width follows the frame's: nothing wider than it.
      const overflow = await frame.locator("html").evaluate((h) => h.scrollWidth - h.clientWidth);
      assert.ok(overflow <= 0, `the app is ${overflow} px wider than its frame`);
      await shot(page, `mcp-app-${size}-${theme}`);
      await frame.getByRole("link", { name: "Open in askbi" }).click();
      await page.waitForFunction(() => window.opened.length === 1);
      assert.deepEqual(await page.evaluate(() => window.opened), [sc.chart.url], "the server-built link, opened by the host");
      await finish(page);
    });
  }
}

test("run_dataset's rows are charted by the server's reading of them, one point per row.", async () => {
  const offer = await app();
  const args = { dataset_id: "ds_weekly_signups" };
  const result = await mcp("tools/call", { name: "run_dataset", arguments: args });
  const hint = result._meta["askbi/chart"];
  assert.ok(hint && hint.x_field, "the result says how its rows chart");
  const page = await host(desktop, "light");
  const frame = await render(page, offer, "run_dataset", args, result, "light");
  assert.equal(await frame.locator("h1").innerText(), result.structuredContent.dataset.name);
  const marks = hint.chart_type === "bar" ? "rect.bar" : ".dot";
  assert.equal(await frame.locator("svg.chart-svg " + marks).count(), result.structuredContent.rows.length * hint.y_fields.length, "one point per row");
  await finish(page);
});

test("Bad data renders as text, an error or a capped chart, never as markup.", async () => {
  const offer = await app();
  const args = { chart_id: "chart_weekly_signups" };
  const real = await mcp("tools/call", { name: "get_chart_data", arguments: args });
  const page = await host(phone, "light");
  const hostile = '<img src=x onerror="window.top.pwned=1">';
  const evil = structuredClone(real);
  evil.structuredContent.labels[0] = hostile;
  evil.structuredContent.series[0].name = "<script>window.top.pwned=2</script>";
  evil.structuredContent.chart.name = "<b>bold</b>";
  let frame = await render(page, offer, "get_chart_data", args, evil, "light");
  assert.equal(await frame.locator("h1").innerText(), "<b>bold</b>", "the title stays text");
  assert.equal(await frame.locator("main img, main b, main script").count(), 0, "no markup from the data");
  await frame.locator("svg.chart-svg .hit").first().click();
  const tip = frame.getByRole("tooltip");
  assert.match(await tip.innerText(), /<img src=x onerror=/, "the hostile label is shown as text in the tooltip");
  assert.equal(await page.evaluate(() => window.pwned), undefined);

  const wrong = structuredClone(real);
  wrong.structuredContent.series = "oops";
  frame = await render(page, offer, "get_chart_data", args, wrong, "light");
  assert.match(await frame.getByRole("alert").innerText(), /cannot be drawn: the chart has no series/);

  const types = structuredClone(real);
  types.structuredContent.series[0].values[0] = "12";
  frame = await render(page, offer, "get_chart_data", args, types, "light");
  assert.match(await frame.getByRole("alert").innerText(), /cannot be drawn: a value is not a number/);

  const many = structuredClone(real);
  const n = 100000;
  many.structuredContent.labels = Array.from({ length: n }, (_, i) => "p" + i);
  many.structuredContent.series = [{ name: "signups", values: Array.from({ length: n }, (_, i) => i % 97) }];
  frame = await render(page, offer, "get_chart_data", args, many, "light");
  await frame.locator("svg.chart-svg").waitFor();
  assert.equal(await frame.locator("svg.chart-svg .dot").count(), 1000, "capped at 1,000 points");
  assert.match(await frame.locator(".chart-drawing > .chart-note").innerText(), /Showing the first 1,000 of 100,000 points/);

  const failed = { isError: true, content: [{ type: "text", text: "not_found: chart not found" }], structuredContent: { code: "not_found", message: "<i>chart</i> not found" } };
  frame = await render(page, offer, "get_chart_data", args, failed, "light");
  assert.equal(await frame.getByRole("alert").innerText(), "No chart: <i>chart</i> not found");
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await finish(page);
});
