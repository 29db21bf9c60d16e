// The demo page of the askbi reference server: a thin client of the chat
// API. Everything the server says is rendered as text, never as HTML.
"use strict";
const $ = (id) => document.getElementById(id);
let conversation = "";

function headers(extra) {
  return Object.assign({ "Authorization": "Bearer " + $("token").value.trim(), "Content-Type": "application/json" }, extra || {});
}

function line(text, cls) {
  const li = document.createElement("li");
  li.textContent = text;
  if (cls) li.className = cls;
  $("log").appendChild(li);
  return li;
}

async function call(method, path, body) {
  const res = await fetch(path, { method, headers: headers(), body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return {};
  const doc = await res.json();
  if (!res.ok) throw new Error(doc.error.code + ": " + doc.error.message);
  return doc;
}

// turn posts to a turn route and renders its Server-Sent Events.
async function turn(path, body) {
  const res = await fetch(path, { method: "POST", headers: headers({ "Accept": "text/event-stream" }), body: JSON.stringify(body) });
  if (!res.ok) {
    const doc = await res.json();
    line(doc.error.code + ": " + doc.error.message, "error");
    return;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "", reply = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (!data) continue;
      const e = JSON.parse(data);
      if (e.type === "message.delta") {
        reply = reply || line("", "");
        reply.textContent += e.delta;
      } else if (e.type === "message.completed") {
        (reply || line("", "")).textContent = e.text;
        reply = null;
      } else if (e.type === "tool.approval_required") {
        approval(e.tool);
      } else if (e.type === "request.failed") {
        line(e.error.code + ": " + e.error.message, "error");
      } else {
        line(e.type + (e.tool ? " · " + e.tool.label + (e.tool.summary ? " · " + e.tool.summary : "") : "") + (e.notice ? " · " + e.notice : ""), "event");
      }
    }
  }
}

function approval(tool) {
  const li = line(tool.label + " needs your approval: " + JSON.stringify(tool.arguments) + " ");
  for (const verb of ["approve", "reject"]) {
    const b = document.createElement("button");
    b.textContent = verb;
    b.onclick = () => {
      li.querySelectorAll("button").forEach((x) => (x.disabled = true));
      turn(`/ai/conversations/${conversation}/approvals/${tool.approval_id}/${verb}`, { tool: tool.name, arguments: tool.arguments });
    };
    li.appendChild(b);
  }
}

// addToDashboard offers the direct action on a preview chart: it places
// the chart without a model call.
function addToDashboard(li, chartID) {
  const input = document.createElement("input");
  input.placeholder = "dashboard id";
  input.value = "dash_growth";
  input.size = 14;
  const b = document.createElement("button");
  b.textContent = "add to dashboard";
  b.onclick = async () => {
    try {
      await call("POST", `/ai/conversations/${conversation}/charts/${chartID}/add-to-dashboard`, { dashboard_id: input.value.trim() });
      $("open").onclick();
    } catch (err) { line(err.message, "error"); }
  };
  li.append(" ", input, b);
}

$("new").onclick = async () => {
  try {
    conversation = (await call("POST", "/ai/conversations")).conversation.id;
    $("conv").textContent = "conversation " + conversation;
    $("log").replaceChildren();
  } catch (err) { line(err.message, "error"); }
};

$("search").onclick = async () => {
  try {
    const team = $("team").value.trim();
    const doc = await call("GET", "/ai/context?teamId=" + encodeURIComponent(team) + "&limit=50");
    $("pick").replaceChildren();
    for (const g of doc.groups) for (const it of g.items) {
      const o = document.createElement("option");
      o.value = JSON.stringify({ entity_type: it.entity_type, id: it.id });
      o.textContent = g.name + " · " + it.label + " (" + it.info + ")";
      $("pick").appendChild(o);
    }
  } catch (err) { line(err.message, "error"); }
};

$("send").onsubmit = async (ev) => {
  ev.preventDefault();
  if (!conversation) await $("new").onclick();
  const body = { message: $("message").value };
  const picked = [...$("pick").selectedOptions].map((o) => JSON.parse(o.value));
  if (picked.length) body.context = picked;
  line("you: " + body.message);
  $("message").value = "";
  await turn(`/ai/conversations/${conversation}/messages`, body);
};

$("open").onclick = async () => {
  try {
    const v = await call("GET", "/ai/conversations/" + conversation);
    $("summary").replaceChildren(...v.work_summary.map((r) => {
      const li = document.createElement("li");
      li.textContent = r.label + " · " + r.state + (r.error_message ? " · " + r.error_message : "");
      const c = r.result && r.result.chart ? r.result : null;
      if (c) {
        li.textContent += " · chart \"" + c.chart.name + "\" " + c.status + (c.dashboard ? " on " + c.dashboard.name : "");
        if (c.status === "preview") addToDashboard(li, c.chart.id);
      }
      return li;
    }));
  } catch (err) { line(err.message, "error"); }
};

$("mem").onclick = async () => {
  try {
    const doc = await call("GET", "/ai/memory");
    $("memory").replaceChildren(...doc.items.map((m) => {
      const li = document.createElement("li");
      li.textContent = m.text + " ";
      const b = document.createElement("button");
      b.textContent = "delete";
      b.onclick = async () => { await call("DELETE", "/ai/memory/" + m.id); $("mem").onclick(); };
      li.appendChild(b);
      return li;
    }));
  } catch (err) { line(err.message, "error"); }
};

$("forget").onclick = async () => {
  try { await call("DELETE", "/ai/memory"); $("mem").onclick(); } catch (err) { line(err.message, "error"); }
};
