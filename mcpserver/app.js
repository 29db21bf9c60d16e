// The chart app (MCP Apps, io.modelcontextprotocol/ui): it runs in the
// host's sandboxed frame, after the chart component (chartview's
// chart.js) in the same module, and speaks the View side of the
// protocol over postMessage with the host: ui/initialize, then the tool
// result (ui/notifications/tool-result) it draws, the host's theme
// (hostContext), its own size (ui/notifications/size-changed) and
// ui/open-link for "Open in askbi". It holds no credential and makes no
// request of its own: the data is the tool result's structuredContent.

const PROTOCOL = "2026-01-26";
const root = document.getElementById("app");
let nextID = 1;
const waiting = new Map();

function post(msg) { window.parent.postMessage({ jsonrpc: "2.0", ...msg }, "*"); }
function notify(method, params) { post({ method, params }); }
function request(method, params) {
  const id = nextID++;
  post({ id, method, params });
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}

window.addEventListener("message", (e) => {
  const m = e.data;
  if (e.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
  if (m.method === undefined) {
    const w = waiting.get(m.id);
    if (w) { waiting.delete(m.id); if (m.error) w.reject(m.error); else w.resolve(m.result); }
    return;
  }
  switch (m.method) {
    case "ui/notifications/tool-result": show(m.params); break;
    case "ui/notifications/tool-cancelled": message("The call was cancelled."); break;
    case "ui/notifications/host-context-changed": context(m.params); break;
    case "ping": case "ui/resource-teardown": post({ id: m.id, result: {} }); break;
    default: if (m.id !== undefined) post({ id: m.id, error: { code: -32601, message: "method not found" } });
  }
});

// context follows the host: its theme, and its style variables (CSS
// custom properties only; a value that could load anything is skipped).
function context(ctx) {
  if (!ctx || typeof ctx !== "object") return;
  if (ctx.theme === "dark" || ctx.theme === "light") document.documentElement.dataset.theme = ctx.theme;
  const vars = ctx.styles && ctx.styles.variables;
  if (vars && typeof vars === "object") {
    for (const [k, v] of Object.entries(vars)) {
      if (/^--[a-z0-9-]+$/.test(k) && typeof v === "string" && !/url\(|[@;{}]/i.test(v)) document.documentElement.style.setProperty(k, v);
    }
  }
}

function node(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

function message(text, cls = "note") { root.replaceChildren(node("p", { class: cls, role: cls === "error" ? "alert" : "status" }, text)); }

// link is the server-built product link of an answer, if it is one.
function link(ref) {
  if (!ref || typeof ref.url !== "string") return null;
  try {
    const u = new URL(ref.url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch { return null; }
}

// tableChart is a run_dataset answer's rows as chart data, by the
// server's reading of them (the result's _meta "askbi/chart": chart
// type, label field, value fields), or null when they do not chart.
function tableChart(sc, hint) {
  if (!hint || typeof hint !== "object" || !Array.isArray(sc.columns) || !Array.isArray(sc.rows) || !Array.isArray(hint.y_fields)) return null;
  const col = (name) => sc.columns.indexOf(name);
  const x = col(hint.x_field), ys = hint.y_fields.map(col);
  if (x < 0 || ys.some((i) => i < 0)) return null;
  const num = (v) => { const f = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN; return Number.isFinite(f) ? f : null; };
  const rows = sc.rows.filter(Array.isArray);
  return {
    chart_type: hint.chart_type, x_field: hint.x_field, labels: rows.map((r) => (r[x] === null || r[x] === undefined ? "(none)" : String(r[x]))),
    series: hint.y_fields.map((name, i) => ({ name: String(name), values: rows.map((r) => num(r[ys[i]])) })),
    truncated: sc.truncated === true, row_count: sc.row_count,
  };
}

// show draws a tool result: get_chart_data's and create_chart_preview's
// chart data, or run_dataset's rows when they chart.
function show(result) {
  if (!result || typeof result !== "object") return message("This answer has no chart.", "error");
  const sc = result.structuredContent;
  if (result.isError) {
    const why = sc && typeof sc.message === "string" ? sc.message : "the call failed";
    return message("No chart: " + why, "error");
  }
  if (!sc || typeof sc !== "object") return message("This answer has no chart data.", "error");
  let data = sc, ref = sc.chart;
  if (!("series" in sc)) {
    ref = sc.dataset;
    data = tableChart(sc, result._meta && result._meta["askbi/chart"]);
  }
  const name = ref && typeof ref.name === "string" ? ref.name : "Chart";
  const parts = [node("h1", {}, name)];
  if (data) parts.push(draw(data));
  else parts.push(node("p", { class: "note" }, "These rows do not make a chart."));
  const url = link(ref);
  if (url) {
    const a = node("a", { href: url, class: "open", target: "_blank", rel: "noopener noreferrer" }, "Open in askbi");
    a.addEventListener("click", (e) => {
      e.preventDefault();
      request("ui/open-link", { url }).catch(() => {});
    });
    parts.push(a);
  }
  root.replaceChildren(...parts);
}

// The app tells the host its height whenever it changes.
let height = 0;
new ResizeObserver(() => {
  const h = Math.ceil(document.documentElement.getBoundingClientRect().height);
  if (h !== height) { height = h; notify("ui/notifications/size-changed", { height: h }); }
}).observe(document.documentElement);

request("ui/initialize", { appInfo: { name: "askbi-chart", version: "1" }, appCapabilities: { availableDisplayModes: ["inline"] }, protocolVersion: PROTOCOL })
  .then((r) => { context(r && r.hostContext); notify("ui/notifications/initialized", {}); })
  .catch(() => message("The host did not start the app.", "error"));
