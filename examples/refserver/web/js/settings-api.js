// The routes of the connection page and the account MCP settings, on the
// same client as the chat: the session token travels as
// Authorization: Bearer, which the chat API (/ai/connections) and the
// reference server's account routes (/account/mcp) both take.

import { call } from "./api.js";

const conn = (id) => "/ai/connections/" + encodeURIComponent(id);

export const connections = {
  list: () => call("GET", "/ai/connections"),
  create: (body) => call("POST", "/ai/connections", body),
  // connect is save and connect: a new OAuth connection and the start
  // of its sign-in, in one request (as the chat's setup card does).
  connect: (body) => call("POST", "/ai/connections/connect", body),
  update: (id, patch) => call("PATCH", conn(id), patch),
  remove: (id) => call("DELETE", conn(id)),
  discover: (id, toolFocus) => call("POST", conn(id) + "/discover", toolFocus === undefined ? undefined : { tool_focus: toolFocus }),
  tools: (id, { page = 1, search = "", hint = "" } = {}) => {
    const q = new URLSearchParams({ page: String(page) });
    if (search) q.set("search", search);
    if (hint) q.set("hint", hint);
    return call("GET", conn(id) + "/tools?" + q);
  },
  setAccess: (id, tool, allowed) => call("PUT", conn(id) + "/tools/" + encodeURIComponent(tool) + "/access", { allowed }),
  allowAll: (id) => call("POST", conn(id) + "/tools/allow-all"),
  // startOAuth signs connection id in again; conversation is where the
  // sign-in returns to ("" for none).
  startOAuth: (id, conversation = "") => call("POST", conn(id) + "/oauth/start", conversation ? { conversation_id: conversation } : undefined),
};

export const account = {
  settings: () => call("GET", "/account/mcp"),
  clients: () => call("GET", "/account/mcp/clients"),
  removeClient: (id) => call("DELETE", "/account/mcp/clients/" + encodeURIComponent(id)),
};
