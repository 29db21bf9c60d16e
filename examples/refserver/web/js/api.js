// The chat API client: JSON calls and turns as Server-Sent Events. Every
// failure becomes an ApiError whose message is a sentence a person can
// read; the server's JSON errors carry a stable code.

import { capitalize } from "./format.js";

export const UNAVAILABLE = "This item is no longer available. Select another item.";

let token = "";
let onSignedOut = () => {};

export function setToken(t) { token = t || ""; }

// masked is text with the session's own token hidden, for text the page
// shows before the server has redacted it (the question as typed).
export function masked(text) { return token ? text.split(token).join("[redacted]") : text; }
export function onUnauthenticated(fn) { onSignedOut = fn; }

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

function headers(extra) {
  const h = { "Content-Type": "application/json", ...extra };
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

// sentence turns a server error into words for people.
export function sentence(code, message, status) {
  switch (code) {
    case "unauthenticated": return "Your session has ended. Sign in again.";
    case "rate_limited": return "Too many requests right now. Wait a moment, then try again.";
    case "internal": return "Something went wrong on the server. Try again.";
    case "timeout": return "This took too long. Try again, or ask a narrower question.";
    case "network": return typeof navigator !== "undefined" && navigator.onLine === false
      ? "You are offline. Try again once you are connected."
      : "The server cannot be reached. Check that it is running, then try again.";
  }
  if (message && /^context: an item is not available/.test(message)) return UNAVAILABLE;
  if (!message) {
    return status === 404 ? "That was not found." : `The request failed (HTTP ${status}). Try again.`;
  }
  let m = message.trim();
  const field = /^([a-z_]+)(\[\d+\])?(\.[a-z_]+)?: (.*)$/s.exec(m);
  if (field) {
    // "message: at most 4000 characters" reads "Message can have at most
    // 4,000 characters.", "title: must be …" "Title must be …"; any
    // other field path is dropped ("attachments[0]: the data is not a
    // PNG…" reads "The data is not a PNG…"): people do not read field
    // names.
    let rest = field[4].replace(/\b\d{4,}\b/g, (d) => Number(d).toLocaleString("en"));
    if (/^at (most|least) /.test(rest)) rest = "can have " + rest;
    const subject = /^(can|must|is|are|has|should) /.test(rest) && !field[2] && !/_id$/.test(field[1]);
    m = subject ? capitalize(field[1].replace(/_/g, " ")) + (field[3] ? " " + field[3].slice(1).replace(/_/g, " ") : "") + " " + rest : rest;
  }
  m = capitalize(m);
  return /[.!?]$/.test(m) ? m : m + ".";
}

// retryable says whether sending the same request again may work: the
// server or the network failed, or was busy. A request refused for what
// it holds (a file of another type, a message too long) would be
// refused again.
export function retryable(err) {
  return ["network", "rate_limited", "timeout", "internal", "unavailable"].includes(err.code) || /^http_5/.test(err.code);
}

async function readJSON(res) {
  if (!(res.headers.get("Content-Type") || "").includes("application/json")) return null;
  try { return await res.json(); } catch { return null; }
}

async function failure(res) {
  const doc = await readJSON(res);
  const e = doc && doc.error;
  const code = (e && e.code) || "http_" + res.status;
  if (code === "unauthenticated") onSignedOut();
  const err = new ApiError(code, sentence(code, e && e.message, res.status), res.status);
  err.detail = (e && e.message) || ""; // the server's own words, for forms that place "field: …" by the field
  return err;
}

async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError("network", sentence("network"), 0);
  }
}

// call sends one JSON request and returns the answer's document.
export async function call(method, path, body) {
  const res = await send(path, { method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return {};
  const doc = await readJSON(res);
  if (doc === null) throw new ApiError("invalid_result", "The server answered something this page cannot read. Reload and try again.", res.status);
  return doc;
}

// turn posts to a turn route and hands each event to onEvent, in order,
// as the stream delivers it.
export async function turn(path, body, onEvent, signal) {
  const res = await send(path, { method: "POST", headers: headers({ Accept: "text/event-stream" }), body: JSON.stringify(body), signal });
  if (!res.ok) throw await failure(res);
  if (!(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    const doc = await readJSON(res);
    for (const e of (doc && doc.events) || []) onEvent(e);
    return;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new ApiError("network", "The connection was lost before the answer finished. Reload to see what was saved.", 0);
    }
    if (chunk.done) break;
    buf += dec.decode(chunk.value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// The routes the page uses, one function each.
export const api = {
  status: () => call("GET", "/ai/status"),
  conversations: (limit = 20) => call("GET", "/ai/conversations?limit=" + limit),
  create: () => call("POST", "/ai/conversations", {}),
  open: (id) => call("GET", "/ai/conversations/" + encodeURIComponent(id)),
  rename: (id, title) => call("PATCH", "/ai/conversations/" + encodeURIComponent(id), { title }),
  remove: (id) => call("DELETE", "/ai/conversations/" + encodeURIComponent(id)),
  chart: (conv, chart) => call("GET", `/ai/conversations/${encodeURIComponent(conv)}/charts/${encodeURIComponent(chart)}`),
  place: (conv, chart, dashboard) => call("POST",
    `/ai/conversations/${encodeURIComponent(conv)}/charts/${encodeURIComponent(chart)}/add-to-dashboard`, { dashboard_id: dashboard }),
  search: (team, query, limit = 20) => call("GET",
    `/ai/context?teamId=${encodeURIComponent(team)}&query=${encodeURIComponent(query)}&limit=${limit}`),
  message: (conv, body, onEvent, signal) => turn(`/ai/conversations/${encodeURIComponent(conv)}/messages`, body, onEvent, signal),
  decide: (conv, approval, verb, body, onEvent, signal) =>
    turn(`/ai/conversations/${encodeURIComponent(conv)}/approvals/${encodeURIComponent(approval)}/${verb}`, body, onEvent, signal),
  memories: () => call("GET", "/ai/memory"),
  addMemory: (text) => call("POST", "/ai/memory", { text }),
  editMemory: (id, text) => call("PUT", "/ai/memory/" + encodeURIComponent(id), { text }),
  deleteMemory: (id) => call("DELETE", "/ai/memory/" + encodeURIComponent(id)),
  deleteAllMemory: () => call("DELETE", "/ai/memory"),
  // The product pages' data routes (package datahttp), signed in by the
  // browser's session cookie.
  pageChart: (id) => call("GET", "/api/charts/" + encodeURIComponent(id)),
  pagePlace: (id, dashboard) => call("POST", `/api/charts/${encodeURIComponent(id)}/add-to-dashboard`, { dashboard_id: dashboard }),
  pageDashboard: (id) => call("GET", "/api/dashboards/" + encodeURIComponent(id)),
  datasetData: (id, filters) => call("GET", `/api/datasets/${encodeURIComponent(id)}/data` +
    (filters && filters.length ? "?filters=" + encodeURIComponent(JSON.stringify(filters)) : "")),
  signOut: () => call("POST", "/signout"),
  demoUsers: () => call("GET", "/demo/principals"),
  demoSignIn: (name) => call("POST", "/demo/sign-in", { name }),
};
