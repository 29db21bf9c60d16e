// A client on the official TypeScript MCP SDK's 2026-07-28 generation
// (@modelcontextprotocol/client) with its Tasks support
// (@modelcontextprotocol/ext-tasks), both as the pinned tools install
// them, against the reference server's /mcp, run by
// TestTypeScriptSDKTasks. It declares the Tasks extension, runs a slow
// explore_data preview (ASKBI_SQL1) that must become a task, lets the
// SDK poll it to its result, then runs a second (ASKBI_SQL2), says so on
// stderr ("TASK2 <id>"), waits for a line on stdin (the Go test has seen
// its query running in the warehouse) and cancels it. It prints one JSON
// report on stdout; the Go test asserts on it.
//
// ext-tasks needs a raw dispatcher for the task wire shapes, which the
// SDK Client's public API does not send (its README: "a 2026-07-28 Tasks
// server additionally requires rawDispatch and v2RequestFraming"): here
// it is fetch, POSTing each framed JSON-RPC request with the standard
// 2026-07-28 headers. Session setup (server/discover) is the SDK's own.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const tools = process.env.ASKBI_MCP_TOOLS;
const mod = (rel) => import(pathToFileURL(path.join(tools, "node_modules", "@modelcontextprotocol", rel)).href);
const { Client, StreamableHTTPClientTransport } = await mod("client/dist/index.mjs");
const { createTaskSessionFromClient, resultFromTaskOutcome } = await mod("ext-tasks/dist/client/index.js");
const version = (pkg) => JSON.parse(fs.readFileSync(path.join(tools, "node_modules", "@modelcontextprotocol", pkg, "package.json"), "utf8")).version;

const mcpURL = new URL(process.env.ASKBI_MCP_URL);
const authorization = `Bearer ${process.env.ASKBI_API_KEY}`;
const TASKS = "io.modelcontextprotocol/tasks";
const clientInfo = { name: "askbi-ts-tasks-test", version: "1.0.0" };
const clientCapabilities = { extensions: { [TASKS]: {} } };
const report = { client: version("client"), ext_tasks: version("ext-tasks"), requests: {} };

// Pinned to 2026-07-28: the SDK connects with server/discover, where the
// server declares the extension to a client that declares it.
const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
await client.connect(new StreamableHTTPClientTransport(mcpURL, { requestInit: { headers: { authorization } } }));
report.era = client.getProtocolEra();
report.server_tasks = client.getServerCapabilities()?.extensions?.[TASKS] !== undefined;

let id = 0;
async function rawDispatch(request, options) {
  const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
  report.requests[request.method] = (report.requests[request.method] || 0) + 1;
  const res = await fetch(mcpURL, {
    method: "POST", signal: options?.signal, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, ...request }),
    headers: {
      authorization, "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28", "mcp-method": request.method, ...(name ? { "mcp-name": name } : {}),
    },
  });
  const msg = await res.json();
  if (process.env.ASKBI_DEBUG) process.stderr.write(`DEBUG ${JSON.stringify(request).slice(0, 400)} => ${res.status} ${JSON.stringify(msg).slice(0, 600)}\n`);
  return msg.error ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
}
const session = createTaskSessionFromClient(client, {
  endpointId: "askbi-refserver", rawDispatch,
  v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities },
});

const preview = (sql) => session.callTool("explore_data", { operation: "preview", connection_id: process.env.ASKBI_CONNECTION, sql },
  { task: { preference: "require" } });

// The first: a task, polled by the SDK to its result.
const first = await preview(process.env.ASKBI_SQL1);
report.first = { kind: first.kind, task_id: first.handle?.taskId };
const settled = await first.settle();
const result = resultFromTaskOutcome(settled.outcome);
report.first.status = settled.outcome.status;
report.first.polls = report.requests["tasks/get"] || 0;
report.first.result = { isError: !!result.isError, structuredContent: result.structuredContent, content_types: result.content?.map((c) => c.type) };

// The second: cancelled once the Go test has seen its query run.
const second = await preview(process.env.ASKBI_SQL2);
report.second = { kind: second.kind, task_id: second.handle?.taskId };
process.stderr.write(`TASK2 ${second.handle?.taskId}\n`);
const lines = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));
lines.close();
await second.cancel();
const after = await rawDispatch({ method: "tasks/get", params: { taskId: second.handle.taskId, _meta: {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": clientInfo,
  "io.modelcontextprotocol/clientCapabilities": clientCapabilities } } });
report.second.status_after_cancel = after.result?.status;
report.second.result_after_cancel = after.result?.result !== undefined;

await session.close();
await client.close();
console.log(JSON.stringify(report));
