// askbi's chart component (package chartview): charts drawn as SVG from
// chart data ({chart_type, x_field, labels, series: [{name, values}]}):
// line, area, bar, pie, doughnut, table and KPI. One module for the page
// and for the MCP app, importing nothing. Every value from the data is
// set as text or as an attribute value, never parsed as markup. Colors
// come from the stylesheet (chart.css: classes s0 … s9).

const SVG = "http://www.w3.org/2000/svg";
const H = 260, PAD = { l: 64, r: 16, t: 16, b: 52 };
const MAX_POINTS = 1000, MAX_SERIES = 10, MAX_LABEL = 200;
const TYPES = { line: "Line chart", bar: "Bar chart", area: "Area chart", pie: "Pie chart",
  doughnut: "Doughnut chart", table: "Table", kpi: "KPI" };

const fmt = new Intl.NumberFormat("en-GB", { maximumFractionDigits: 2 });
const short = new Intl.NumberFormat("en-GB", { notation: "compact", maximumFractionDigits: 1 });
let tips = 0;

// el builds an element: el("p", {class}, child, ...); a tag "svg:path"
// makes an SVG element. Children are nodes or text.
function el(tag, attrs, ...children) {
  const svg = tag.startsWith("svg:");
  const e = svg ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function finite(v) { return typeof v === "number" && Number.isFinite(v); }

// check normalizes chart data: {data} with at most 1,000 points and ten
// series, labels as text and values as numbers or null, and total (the
// points there were); or {error} when the data has the wrong shape.
export function check(data) {
  if (!data || typeof data !== "object" || Array.isArray(data)) return { error: "the chart data is not an object" };
  const type = data.chart_type === undefined ? "bar" : data.chart_type;
  if (typeof type !== "string" || !TYPES[type]) return { error: "the chart type is not one this chart draws" };
  const labels = data.labels === undefined || data.labels === null ? [] : data.labels;
  if (!Array.isArray(labels)) return { error: "the labels are not a list" };
  if (!labels.every((l) => ["string", "number", "boolean"].includes(typeof l) || l === null)) return { error: "a label is not text" };
  if (!Array.isArray(data.series) || data.series.length === 0) return { error: "the chart has no series" };
  const series = [];
  for (const s of data.series.slice(0, MAX_SERIES)) {
    if (!s || typeof s !== "object" || typeof s.name !== "string" || !Array.isArray(s.values)) return { error: "a series is not a name with a list of values" };
    if (!s.values.every((v) => v === null || typeof v === "number")) return { error: "a value is not a number" };
    series.push({ name: s.name.slice(0, MAX_LABEL), values: s.values.slice(0, MAX_POINTS).map((v) => (finite(v) ? v : null)) });
  }
  const total = Math.max(labels.length, ...series.map((s) => s.values.length), 0);
  const rowCount = finite(data.row_count) ? data.row_count : total;
  return {
    data: {
      chart_type: type, x_field: typeof data.x_field === "string" ? data.x_field.slice(0, MAX_LABEL) : "",
      labels: labels.slice(0, MAX_POINTS).map((l) => (l === null ? "" : String(l).slice(0, MAX_LABEL))), series,
      truncated: data.truncated === true || total > MAX_POINTS, row_count: Math.min(rowCount, MAX_POINTS),
      warning: typeof data.warning === "string" ? data.warning.slice(0, 500) : "",
    },
    total,
  };
}

// chartTypeLabel names a chart type: "Line chart".
export function chartTypeLabel(t) { return TYPES[t] || "Chart"; }

// readable turns date labels into words: "2026-09-07" → "7 Sep" (with the
// year when the labels span more than one), "2026-09" → "Sep 2026".
// Other labels stay as they are.
export function readable(labels) {
  const day = /^(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/, month = /^(\d{4})-(\d{2})$/;
  if (!labels.length) return labels;
  const names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  for (const re of [day, month]) {
    const parts = labels.map((l) => re.exec(l));
    if (parts.some((m) => !m || +m[2] < 1 || +m[2] > 12 || (m[3] && (+m[3] < 1 || +m[3] > 31)))) continue;
    if (re === month) return parts.map((m) => `${names[m[2] - 1]} ${m[1]}`);
    const years = new Set(parts.map((m) => m[1]));
    return parts.map((m) => `${+m[3]} ${names[m[2] - 1]}` + (years.size > 1 ? ` ${m[1]}` : ""));
  }
  return labels;
}

// fieldTitle is an axis title from a field name: "signup_count" →
// "signup count".
function fieldTitle(name) { return String(name || "").replace(/_/g, " "); }

// draw returns the element that shows data: the chart, its legend, a
// Table button that shows the same data as a table, and its notes.
export function draw(raw) {
  const checked = check(raw);
  if (checked.error) {
    return el("div", { class: "chart-drawing chart-error" }, el("p", { class: "error", role: "alert" }, "This chart cannot be drawn: " + checked.error + "."));
  }
  const data = checked.data;
  const type = data.chart_type;
  const series = data.series;
  const labels = readable(data.labels);
  const described = `${chartTypeLabel(type)} of ${series.map((s) => s.name).join(", ")}` +
    (labels.length ? `, ${labels.length} ${labels.length === 1 ? "point" : "points"} from ${labels[0]} to ${labels[labels.length - 1]}` : "");
  const notes = [];
  if (data.warning) notes.push(el("p", { class: "chart-warning" }, data.warning));
  if (checked.total > MAX_POINTS) notes.push(el("p", { class: "chart-note" }, `Showing the first ${fmt.format(MAX_POINTS)} of ${fmt.format(checked.total)} points.`));
  else if (data.truncated) notes.push(el("p", { class: "chart-note" }, `Showing the first ${data.row_count} rows.`));
  if (type === "table") return el("div", { class: "chart-drawing chart-table" }, table(labels, series, data.x_field), notes);
  if (type === "kpi") return el("div", { class: "chart-drawing chart-kpi" }, kpi(series), notes);

  const plot = el("div", { class: "chart-plot" });
  const tabular = el("div", { class: "chart-tabular", hidden: true }, table(labels, series, data.x_field));
  const toggle = el("button", { type: "button", class: "chart-view", "aria-pressed": "false" }, "Table");
  toggle.addEventListener("click", () => {
    const on = toggle.getAttribute("aria-pressed") !== "true";
    toggle.setAttribute("aria-pressed", String(on));
    tabular.hidden = !on;
    plot.hidden = on;
  });
  const pie = type === "pie" || type === "doughnut";
  const legendNames = pie ? labels.slice(0, 10) : series.length > 1 ? series.map((s) => s.name) : [];
  const parts = [el("div", { class: "chart-tools" }, toggle), plot, tabular];
  if (legendNames.length) parts.push(legend(legendNames));
  const root = el("div", { class: "chart-drawing chart-" + type }, parts, notes);

  const render = (width) => {
    plot.replaceChildren(pie ? pieChart(labels, series[0], type === "doughnut", described) : xy(type, labels, series, data.x_field, described, width));
  };
  let drawn = 0;
  render(600);
  // The SVG is drawn at the width it gets, so its text keeps its size
  // (12 px) on a phone instead of shrinking with a scaled drawing.
  if (!pie && typeof ResizeObserver === "function") {
    new ResizeObserver((entries) => {
      const w = Math.round(entries[entries.length - 1].contentRect.width);
      if (w > 0 && w !== drawn) { drawn = w; render(w); }
    }).observe(plot);
  }
  return root;
}

function legend(names) {
  return el("ul", { class: "legend", "aria-label": "Legend" }, names.map((n, i) => el("li", {}, el("span", { class: "swatch s" + (i % 10), "aria-hidden": "true" }), n)));
}

function xy(type, labels, series, xField, described, width) {
  const W = Math.max(240, width);
  const vals = series.flatMap((s) => s.values.filter(finite));
  const [lo, hi, tick] = nice(Math.min(0, ...vals), Math.max(0, ...vals));
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  const y = (v) => PAD.t + ih - ((v - lo) / (hi - lo)) * ih;
  const n = Math.max(labels.length, 1);
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": described, class: "chart-svg", tabindex: "0" });
  for (let v = lo; v <= hi + tick / 2; v += tick) {
    svg.append(el("svg:line", { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: "grid" }),
      el("svg:text", { x: PAD.l - 8, y: y(v) + 4, class: "tick", "text-anchor": "end" }, short.format(v)));
  }
  // X labels: as many as fit, about one per 72 px, evenly spread.
  const step = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(iw / 72))));
  const band = iw / n;
  const xOf = type === "bar" ? (i) => PAD.l + band * (i + 0.5) : (i) => PAD.l + (n === 1 ? iw / 2 : (iw * i) / (n - 1));
  labels.forEach((l, i) => {
    // The last label of a line ends at the right edge, not past it.
    const anchor = type !== "bar" && n > 1 && i === n - 1 ? "end" : "middle";
    if (i % step === 0) svg.append(el("svg:text", { x: xOf(i), y: H - PAD.b + 18, class: "tick", "text-anchor": anchor }, truncate(l, 12)));
  });
  if (xField) svg.append(el("svg:text", { x: PAD.l + iw / 2, y: H - 8, class: "axis-title", "text-anchor": "middle" }, fieldTitle(xField)));
  if (series.length === 1) {
    svg.append(el("svg:text", { x: -(PAD.t + ih / 2), y: 14, transform: "rotate(-90)", class: "axis-title", "text-anchor": "middle" }, fieldTitle(series[0].name)));
  }
  if (type === "bar") {
    const bw = Math.max(1, (band * 0.7) / series.length);
    series.forEach((s, si) => s.values.forEach((v, i) => {
      if (!finite(v)) return;
      const top = Math.min(y(v), y(0)), height = Math.abs(y(v) - y(0));
      svg.append(el("svg:rect", { x: PAD.l + band * i + band * 0.15 + bw * si, y: top, width: bw, height: Math.max(height, 1), class: "bar s" + si }));
    }));
  } else {
    series.forEach((s, si) => {
      const pts = s.values.map((v, i) => (finite(v) ? [xOf(i), y(v)] : null));
      const segments = [];
      let cur = [];
      for (const p of pts) { if (p) cur.push(p); else if (cur.length) { segments.push(cur); cur = []; } }
      if (cur.length) segments.push(cur);
      for (const seg of segments) {
        const d = seg.map((p, i) => (i ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1)).join(" ");
        if (type === "area") {
          svg.append(el("svg:path", { d: `${d} L${seg[seg.length - 1][0].toFixed(1)} ${y(0)} L${seg[0][0].toFixed(1)} ${y(0)} Z`, class: "area s" + si }));
        }
        svg.append(el("svg:path", { d, class: "line s" + si }));
      }
      pts.forEach((p, i) => p && svg.append(el("svg:circle", { cx: p[0], cy: p[1], r: 3, class: "dot s" + si })));
    });
  }
  svg.append(el("svg:line", { x1: PAD.l, x2: W - PAD.r, y1: y(0), y2: y(0), class: "axis" }));
  // One hit band per label, for the tooltip on hover and on tap.
  const hitW = type === "bar" ? band : n === 1 ? iw : iw / (n - 1);
  for (let i = 0; i < labels.length; i++) {
    svg.append(el("svg:rect", { x: Math.max(PAD.l, xOf(i) - hitW / 2), y: PAD.t, width: hitW, height: ih, class: "hit", "data-i": i }));
  }
  const wrap = el("div", { class: "chart-canvas" }, svg);
  tooltip(wrap, svg, labels, series, xOf);
  return wrap;
}

// tooltip shows the values at a label: on hover, on tap, and from the
// keyboard (arrow keys on the focused chart; Escape hides it).
function tooltip(wrap, svg, labels, series, xOf) {
  const id = "chart-tip-" + ++tips;
  const tip = el("div", { class: "chart-tooltip", role: "tooltip", id, hidden: true });
  wrap.append(tip);
  let at = -1;
  const show = (i) => {
    if (i < 0 || i >= labels.length) return;
    at = i;
    tip.replaceChildren(el("strong", {}, labels[i]),
      ...series.map((s, si) => el("span", {}, el("span", { class: "swatch s" + si, "aria-hidden": "true" }), `${s.name}: ${finite(s.values[i]) ? fmt.format(s.values[i]) : "no value"}`)));
    tip.hidden = false;
    svg.setAttribute("aria-describedby", id);
    const box = svg.getBoundingClientRect(), scale = box.width ? box.width / svg.viewBox.baseVal.width : 1;
    const x = xOf(i) * scale;
    // Positioned through the CSSOM, which the pages' CSP allows.
    tip.style.left = Math.round(Math.min(Math.max(0, x - tip.offsetWidth / 2), Math.max(0, box.width - tip.offsetWidth))) + "px";
    tip.style.top = "0px";
  };
  const hide = () => { tip.hidden = true; at = -1; svg.removeAttribute("aria-describedby"); };
  const index = (e) => { const t = e.target.closest && e.target.closest("[data-i]"); return t ? Number(t.getAttribute("data-i")) : -1; };
  svg.addEventListener("pointermove", (e) => { const i = index(e); if (i >= 0 && i !== at) show(i); });
  svg.addEventListener("pointerleave", (e) => { if (e.pointerType === "mouse") hide(); });
  svg.addEventListener("click", (e) => { const i = index(e); if (i >= 0) show(i); });
  svg.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      show(Math.min(labels.length - 1, Math.max(0, at + (e.key === "ArrowRight" ? 1 : -1))));
    } else if (e.key === "Escape") hide();
  });
  svg.addEventListener("blur", hide);
}

function pieChart(labels, s, doughnut, described) {
  const size = 220, r = 100, c = size / 2;
  const svg = el("svg:svg", { viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": described, class: "chart-svg pie" });
  const vals = s ? s.values.map((v) => (finite(v) && v > 0 ? v : 0)) : [];
  const total = vals.reduce((a, b) => a + b, 0);
  let a0 = -Math.PI / 2;
  vals.forEach((v, i) => {
    if (!v) return;
    const a1 = a0 + (v / total) * 2 * Math.PI;
    const large = a1 - a0 > Math.PI ? 1 : 0;
    const p = (a) => `${(c + r * Math.cos(a)).toFixed(2)} ${(c + r * Math.sin(a)).toFixed(2)}`;
    const d = v === total ? `M${c - r} ${c} a${r} ${r} 0 1 0 ${2 * r} 0 a${r} ${r} 0 1 0 ${-2 * r} 0 Z`
      : `M${c} ${c} L${p(a0)} A${r} ${r} 0 ${large} 1 ${p(a1)} Z`;
    svg.append(el("svg:path", { d, class: "slice s" + (i % 10) },
      el("svg:title", {}, `${labels[i]}: ${fmt.format(v)} (${Math.round((v / total) * 100)}%)`)));
    a0 = a1;
  });
  if (doughnut) svg.append(el("svg:circle", { cx: c, cy: c, r: r * 0.55, class: "hole" }));
  return el("div", { class: "pie-wrap" }, svg);
}

function table(labels, series, xField) {
  const rows = labels.length ? labels : (series[0] ? series[0].values.map((_, i) => String(i + 1)) : []);
  const shown = rows.slice(0, 100);
  // The table scrolls in a region the keyboard reaches (axe
  // scrollable-region-focusable).
  const label = `${series.map((s) => s.name).join(", ")} by ${fieldTitle(xField) || "row"}, as a table`;
  return el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label }, el("table", { class: "data" },
    el("thead", {}, el("tr", {}, el("th", { scope: "col" }, fieldTitle(xField)), series.map((s) => el("th", { scope: "col" }, s.name)))),
    el("tbody", {}, shown.map((l, i) => el("tr", {}, el("th", { scope: "row" }, l),
      series.map((s) => el("td", {}, finite(s.values[i]) ? fmt.format(s.values[i]) : "—")))))),
  rows.length > shown.length ? el("p", { class: "chart-note" }, `Showing 100 of ${rows.length} rows.`) : null);
}

function kpi(series) {
  const s = series[0];
  const vals = s ? s.values.filter(finite) : [];
  const v = vals.length ? vals[vals.length - 1] : null;
  return el("p", { class: "kpi" }, el("span", { class: "kpi-value" }, v === null ? "—" : fmt.format(v)),
    el("span", { class: "kpi-name" }, s ? s.name : ""));
}

function truncate(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// nice widens [lo, hi] to round tick steps, about four of them.
function nice(lo, hi) {
  if (lo === hi) hi = lo + 1;
  const raw = (hi - lo) / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step, step];
}
