// Small DOM helpers. Everything the server says is set as text or as an
// attribute value, never parsed as HTML.

const SVG = "http://www.w3.org/2000/svg";

// h builds an element: h("a", {href, class, onclick}, child, ...). A tag
// "svg:path" makes an SVG element. Children are nodes or text.
export function h(tag, attrs, ...children) {
  const svg = tag.startsWith("svg:");
  const el = svg ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "style") throw new Error("inline styles are not allowed (CSP)");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

export const $ = (id) => document.getElementById(id);

// icon returns a small decorative SVG icon.
export function icon(name) {
  const paths = {
    external: "M11 3h6v6M17 3l-8 8M15 11v5H4V5h5",
    dataset: "M4 5c0-1.1 2.7-2 6-2s6 .9 6 2-2.7 2-6 2-6-.9-6-2zm0 0v10c0 1.1 2.7 2 6 2s6-.9 6-2V5M4 10c0 1.1 2.7 2 6 2s6-.9 6-2",
    dashboard: "M3 3h6v8H3zM11 3h6v4h-6zM11 9h6v8h-6zM3 13h6v4H3z",
    chart: "M3 17V9M8 17V4M13 17v-6M18 17V7",
    connection: "M7 7l6 6M5 9a3 3 0 010-4l0 0a3 3 0 014 0M15 11a3 3 0 010 4l0 0a3 3 0 01-4 0",
    edit: "M4 16l1-4 8-8 3 3-8 8zM12 5l3 3",
    trash: "M4 6h12M8 6V4h4v2M6 6l1 11h6l1-11",
    check: "M4 10l4 4 8-8",
    cross: "M5 5l10 10M15 5L5 15",
    alert: "M10 3l8 14H2zM10 8v4M10 14v1",
    clock: "M10 3a7 7 0 100 14 7 7 0 000-14zM10 6v4l3 2",
  };
  return h("svg:svg", { viewBox: "0 0 20 20", class: "icon", "aria-hidden": "true", focusable: "false" },
    h("svg:path", { d: paths[name] || "" }));
}

// newTab is a link that opens in a new tab and says so to screen readers.
export function newTab(href, ...children) {
  return h("a", { href, target: "_blank", rel: "noopener noreferrer" }, children, " ", icon("external"),
    h("span", { class: "vh" }, "(opens in a new tab)"));
}
