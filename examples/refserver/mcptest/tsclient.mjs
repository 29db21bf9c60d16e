// A client on the official TypeScript MCP SDK (@modelcontextprotocol/sdk,
// pinned in .ci/mcp-tools) against the reference server's /mcp, run by
// TestTypeScriptSDKClient. With ASKBI_MODE=oauth it connects with no
// credential and lets the SDK's own OAuth client do the rest: the 401, the
// protected resource and authorization server metadata, dynamic client
// registration (or its client ID metadata document's URL as its
// client_id), S256 PKCE and the token exchange. The consent page is
// answered headlessly as a browser would: the page is fetched with the
// product's session cookie, its form posted back same-origin. With
// ASKBI_MODE=apikey it sends an API key as the bearer token. Either way it
// lists the tools and calls each CALLS entry, then prints one JSON report
// on stdout; the Go test asserts on it.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const tools = process.env.ASKBI_MCP_TOOLS;
const require = createRequire(path.join(tools, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { UnauthorizedError } = require("@modelcontextprotocol/sdk/client/auth.js");

const mcpURL = new URL(process.env.ASKBI_MCP_URL);
const mode = process.env.ASKBI_MODE;
const calls = JSON.parse(process.env.ASKBI_CALLS || "[]");
const sdkPackage = path.join(tools, "node_modules", "@modelcontextprotocol", "sdk", "package.json");
const report = { mode, sdk: JSON.parse(fs.readFileSync(sdkPackage, "utf8")).version };

// consent answers the consent page at authURL as a signed-in browser
// would, and returns the query of the redirect back to the client.
async function consent(authURL) {
  const cookie = `${process.env.ASKBI_SESSION_COOKIE}=${process.env.ASKBI_SESSION}`;
  const page = await fetch(authURL, { headers: { cookie }, redirect: "manual" });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`consent page: HTTP ${page.status}: ${html.slice(0, 300)}`);
  const unescape = (s) => s.replace(/&#34;|&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const form = new URLSearchParams({ decision: "allow", team: process.env.ASKBI_TEAM });
  for (const m of html.matchAll(/<input type="hidden" name="([a-z_]+)" value="([^"]*)">/g)) form.append(m[1], unescape(m[2]));
  for (const m of html.matchAll(/<input type="checkbox" name="scope" value="([a-z:]+)" checked>/g)) form.append("scope", m[1]);
  const action = html.match(/<form method="post" action="([^"]+)"/)?.[1];
  if (!action) throw new Error("consent page has no form");
  const answer = await fetch(unescape(action), {
    method: "POST", body: form, redirect: "manual",
    headers: { cookie, origin: mcpURL.origin, "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" },
  });
  const loc = answer.headers.get("location");
  if (answer.status !== 303 || !loc) throw new Error(`consent answer: HTTP ${answer.status}: ${(await answer.text()).slice(0, 300)}`);
  return new URL(loc).searchParams;
}

// provider is an OAuthClientProvider kept in memory, as a desktop client
// keeps it in its own store. With ASKBI_CLIENT_METADATA_URL it has a
// client ID metadata document there, which the SDK uses as its client_id
// instead of registering when the server says it reads them.
function newProvider() {
  const saved = {};
  return {
    saved,
    clientMetadataUrl: process.env.ASKBI_CLIENT_METADATA_URL || undefined,
    get redirectUrl() { return "http://127.0.0.1:33419/callback"; },
    get clientMetadata() {
      return {
        client_name: "TypeScript SDK test client", redirect_uris: [this.redirectUrl],
        grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none",
      };
    },
    state() { saved.state = "ts-" + Math.random().toString(36).slice(2, 12); return saved.state; },
    clientInformation() { return saved.client; },
    saveClientInformation(info) { saved.client = info; },
    tokens() { return saved.tokens; },
    saveTokens(tokens) { saved.tokens = tokens; },
    saveCodeVerifier(v) { saved.verifier = v; },
    codeVerifier() { return saved.verifier; },
    async redirectToAuthorization(url) {
      saved.authURL = url;
      saved.redirect = await consent(url.href);
    },
  };
}

async function session(transportOptions) {
  const client = new Client({ name: "askbi-ts-sdk-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(mcpURL, transportOptions));
  return client;
}

let client;
if (mode === "oauth") {
  const provider = newProvider();
  const first = new StreamableHTTPClientTransport(mcpURL, { authProvider: provider });
  try {
    await new Client({ name: "askbi-ts-sdk-test", version: "1.0.0" }).connect(first);
    throw new Error("connected without signing in");
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  const q = provider.saved.redirect;
  const a = provider.saved.authURL.searchParams;
  report.authorization = {
    client_id: a.get("client_id"), registered: !!provider.saved.client?.client_id_issued_at,
    resource: a.get("resource"), code_challenge_method: a.get("code_challenge_method"), scope: a.get("scope"),
    state_returned: q.get("state") === provider.saved.state, iss: q.get("iss"),
  };
  await first.finishAuth(q.get("code"));
  report.token = { access_prefix: provider.saved.tokens.access_token.slice(0, 9), refresh: !!provider.saved.tokens.refresh_token,
    token_type: provider.saved.tokens.token_type, scope: provider.saved.tokens.scope };
  client = await session({ authProvider: provider });
} else {
  client = await session({ requestInit: { headers: { authorization: `Bearer ${process.env.ASKBI_API_KEY}` } } });
}
report.server = client.getServerVersion()?.name;
const list = await client.listTools();
report.tools = list.tools.map((t) => t.name);
report.calls = [];
for (const c of calls) {
  // callTool validates structuredContent against the tool's outputSchema.
  const res = await client.callTool({ name: c.name, arguments: c.arguments });
  report.calls.push({ name: c.name, isError: !!res.isError, structuredContent: res.structuredContent,
    content: res.content.map((p) => p.type === "text" ? { type: "text", text: p.text } : { type: p.type }) });
}
await client.close();
console.log(JSON.stringify(report));
