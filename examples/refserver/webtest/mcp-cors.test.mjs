// A web MCP client in a browser: a page of an origin the server allows
// (-mcp-allowed-origins) calls /mcp from the browser with an API key, as
// a browser-based client (the MCP Inspector's direct mode, a host's own
// web agent) does, and Chromium's own CORS checks let it read the answers,
// the 401's challenge included. A page of another origin cannot: its
// preflight is refused. The page is served by this test on a loopback
// port of its own (ASKBI_WEB_CLIENT_PORT), as http://localhost:PORT, the
// origin TestBrowser allows; http://127.0.0.1:PORT is another origin.

import { test, before, after } from "node:test";
import http from "node:http";
import { launch, close, done, base, assert } from "./lib.mjs";

const key = process.env.ASKBI_MCP_KEY;
const port = process.env.ASKBI_WEB_CLIENT_PORT;
const ALLOWED = "http://localhost:" + port;
const OTHER = "http://127.0.0.1:" + port;
let browser, server;

before(async () => {
  browser = await launch();
  server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end("<!doctype html><html lang=\"en\"><title>Web MCP client</title><main><h1>Web MCP client</h1></main></html>");
  });
  await new Promise((ok) => server.listen(Number(port), "127.0.0.1", ok));
});
after(async () => { await close(); server.close(); });

// pageAt opens the blank page at origin, with errors collected as open's.
async function pageAt(origin) {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.problems = [];
  page.on("pageerror", (e) => page.problems.push("page error: " + e.message));
  await page.goto(origin + "/");
  return page;
}

// call posts tools/list to /mcp from the page, and what the page could
// read of the answer: its status, the challenge, the tool names; or the
// error fetch threw.
function call(page, token) {
  return page.evaluate(async ({ url, token }) => {
    try {
      const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25" };
      if (token) headers.Authorization = "Bearer " + token;
      const res = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) });
      const text = await res.text(); // a 401's body is not JSON-RPC
      const tools = res.ok ? JSON.parse(text).result.tools.map((t) => t.name) : [];
      return { status: res.status, challenge: res.headers.get("WWW-Authenticate"), tools };
    } catch (e) {
      return { error: String(e) };
    }
  }, { url: base + "/mcp", token });
}

test("a page of an allowed origin calls /mcp from the browser and reads the answers", async () => {
  const page = await pageAt(ALLOWED);
  const listed = await call(page, key);
  assert.equal(listed.status, 200, JSON.stringify(listed));
  assert.ok(listed.tools.includes("run_dataset"), "the tools reach the page: " + JSON.stringify(listed));
  const refused = await call(page, "");
  assert.equal(refused.status, 401);
  assert.match(refused.challenge || "", /^Bearer .*resource_metadata="/, "the page reads the challenge, to start OAuth");
  await done(page);
});

test("a page of another origin cannot call /mcp", async () => {
  const page = await pageAt(OTHER);
  const got = await call(page, key);
  assert.ok(got.error, "the browser refused the call: " + JSON.stringify(got));
  await done(page);
});
