// Charts drawn as SVG from the server's chart data ({chart_type, labels,
// series: [{name, values}]}): line, area, bar, pie, doughnut, table and
// KPI. Colors come from the stylesheet (classes s0 … s9).

import { h } from "./dom.js";
import { chartTypeLabel } from "./format.js";

const W = 600, H = 260, PAD = { l: 56, r: 16, t: 16, b: 40 };

const fmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const short = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

// draw returns the element that shows data.
export function draw(data) {
  const type = data.chart_type || "bar";
  const labels = data.labels || [];
  const series = (data.series || []).slice(0, 10);
  const described = `${chartTypeLabel(type)} of ${series.map((s) => s.name).join(", ")}` +
    (labels.length ? `, ${labels.length} ${labels.length === 1 ? "point" : "points"} from ${labels[0]} to ${labels[labels.length - 1]}` : "");
  let body;
  switch (type) {
    case "table": body = table(labels, series); break;
    case "kpi": body = kpi(series); break;
    case "pie": case "doughnut": body = pie(labels, series[0], type === "doughnut", described); break;
    default: body = xy(type, labels, series, described);
  }
  const parts = [body];
  if (series.length > 1 && type !== "table" && type !== "kpi") parts.push(legend(series.map((s) => s.name)));
  if (data.warning) parts.push(h("p", { class: "chart-warning" }, data.warning));
  else if (data.truncated) parts.push(h("p", { class: "chart-note" }, `Showing the first ${data.row_count} rows.`));
  return h("div", { class: "chart-drawing chart-" + type }, parts);
}

function legend(names) {
  return h("ul", { class: "legend" }, names.map((n, i) => h("li", {}, h("span", { class: "swatch s" + i, "aria-hidden": "true" }), n)));
}

function finite(v) { return typeof v === "number" && Number.isFinite(v); }

function xy(type, labels, series, described) {
  const vals = series.flatMap((s) => s.values.filter(finite));
  const [lo, hi, tick] = nice(Math.min(0, ...vals), Math.max(0, ...vals));
  const iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
  const y = (v) => PAD.t + ih - ((v - lo) / (hi - lo)) * ih;
  const n = Math.max(labels.length, 1);
  const svg = h("svg:svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": described, class: "chart-svg" });
  // Grid and y ticks.
  for (let v = lo; v <= hi + tick / 2; v += tick) {
    svg.append(h("svg:line", { x1: PAD.l, x2: W - PAD.r, y1: y(v), y2: y(v), class: "grid" }),
      h("svg:text", { x: PAD.l - 8, y: y(v) + 4, class: "tick", "text-anchor": "end" }, short.format(v)));
  }
  // X labels: at most six, evenly spread.
  const step = Math.max(1, Math.ceil(n / 6));
  const xOf = type === "bar" ? (i) => PAD.l + (iw / n) * (i + 0.5) : (i) => PAD.l + (n === 1 ? iw / 2 : (iw * i) / (n - 1));
  labels.forEach((l, i) => {
    if (i % step === 0) {
      svg.append(h("svg:text", { x: xOf(i), y: H - PAD.b + 18, class: "tick", "text-anchor": "middle" }, truncate(l, 12)));
    }
  });
  if (type === "bar") {
    const group = iw / n, bw = Math.max(2, (group * 0.7) / series.length);
    series.forEach((s, si) => s.values.forEach((v, i) => {
      if (!finite(v)) return;
      const x = PAD.l + group * i + group * 0.15 + bw * si;
      const top = Math.min(y(v), y(0)), height = Math.abs(y(v) - y(0));
      svg.append(h("svg:rect", { x, y: top, width: bw, height: Math.max(height, 1), class: "bar s" + si },
        h("svg:title", {}, `${labels[i]}: ${fmt.format(v)}`)));
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
          svg.append(h("svg:path", { d: `${d} L${seg[seg.length - 1][0].toFixed(1)} ${y(0)} L${seg[0][0].toFixed(1)} ${y(0)} Z`, class: "area s" + si }));
        }
        svg.append(h("svg:path", { d, class: "line s" + si }));
      }
      pts.forEach((p, i) => p && svg.append(h("svg:circle", { cx: p[0], cy: p[1], r: 3, class: "dot s" + si },
        h("svg:title", {}, `${labels[i]}: ${fmt.format(s.values[i])}`))));
    });
  }
  svg.append(h("svg:line", { x1: PAD.l, x2: W - PAD.r, y1: y(0), y2: y(0), class: "axis" }));
  return svg;
}

function pie(labels, s, doughnut, described) {
  const size = 220, r = 100, c = size / 2;
  const svg = h("svg:svg", { viewBox: `0 0 ${size} ${size}`, role: "img", "aria-label": described, class: "chart-svg pie" });
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
    svg.append(h("svg:path", { d, class: "slice s" + (i % 10) },
      h("svg:title", {}, `${labels[i]}: ${fmt.format(v)} (${Math.round((v / total) * 100)}%)`)));
    a0 = a1;
  });
  if (doughnut) svg.append(h("svg:circle", { cx: c, cy: c, r: r * 0.55, class: "hole" }));
  return h("div", { class: "pie-wrap" }, svg, legend(labels.slice(0, 10)));
}

function table(labels, series) {
  const rows = labels.length ? labels : (series[0] ? series[0].values.map((_, i) => String(i + 1)) : []);
  const shown = rows.slice(0, 100);
  return h("div", { class: "table-wrap" }, h("table", { class: "data" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, ""), series.map((s) => h("th", { scope: "col" }, s.name)))),
    h("tbody", {}, shown.map((l, i) => h("tr", {}, h("th", { scope: "row" }, l),
      series.map((s) => h("td", {}, finite(s.values[i]) ? fmt.format(s.values[i]) : "—")))))),
  rows.length > shown.length ? h("p", { class: "chart-note" }, `Showing 100 of ${rows.length} rows.`) : null);
}

function kpi(series) {
  const s = series[0];
  const vals = s ? s.values.filter(finite) : [];
  const v = vals.length ? vals[vals.length - 1] : null;
  return h("p", { class: "kpi" }, h("span", { class: "kpi-value" }, v === null ? "—" : fmt.format(v)),
    h("span", { class: "kpi-name" }, s ? s.name : ""));
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
