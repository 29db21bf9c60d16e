// Wording shared by the components.

// ago is a time as people say it: "just now", "5 min ago", "3 h ago",
// or a date.
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString(undefined, { day: "numeric", month: "short", year: "numeric" });
}

const chartTypes = { line: "Line chart", bar: "Bar chart", area: "Area chart", pie: "Pie chart",
  doughnut: "Doughnut chart", table: "Table", kpi: "KPI" };

export function chartTypeLabel(t) { return chartTypes[t] || "Chart"; }

// distinctName is a chart's name, followed by what it shows of its
// dataset (its filters and date range, then the dataset's scope, in the
// server's words) when another chart of others has the same name:
// "Weekly signups (page_path = /pricing)". A unique name stays as it is.
export function distinctName(chart, others) {
  const twin = others.some((c) => c.id !== chart.id && c.name === chart.name);
  return twin && chart.scope ? `${chart.name} (${chart.scope.text})` : chart.name;
}

export function capitalize(s) { return s ? s[0].toUpperCase() + s.slice(1) : s; }

// humanize turns an argument name into words: "chart_type" → "Chart type".
export function humanize(key) { return capitalize(String(key).replace(/_/g, " ")); }

export const roleLabel = (r) => capitalize(r || "");

// greeting is the time of day's hello.
export function greeting(date = new Date()) {
  const h = date.getHours();
  return h < 12 ? "Good morning" : h < 18 ? "Good afternoon" : "Good evening";
}

// title is how the server names a chat after its first question.
export function title(question) {
  const q = question.split(/\s+/).filter(Boolean).join(" ");
  return q.length > 60 ? q.slice(0, 59) + "…" : q;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// cellText is a table cell as people read it: a day "7 Sep 2026" (with
// the time when it has one: "7 Sep 2026, 10:30"), a month "Sep 2026", a
// number with thousands separators ("62,350", "12.5"); other text as it
// is; "—" for none.
export function cellText(v) {
  if (v === null || v === undefined || v === "") return "—";
  if (typeof v === "number") return Number.isFinite(v) ? v.toLocaleString("en", { maximumFractionDigits: 2 }) : String(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") return JSON.stringify(v);
  const s = String(v);
  let m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(s);
  if (m && +m[2] >= 1 && +m[2] <= 12) {
    const day = `${+m[3]} ${MONTHS[m[2] - 1]} ${m[1]}`;
    return m[4] && !(m[4] === "00" && m[5] === "00") ? `${day}, ${m[4]}:${m[5]}` : day;
  }
  m = /^(\d{4})-(\d{2})$/.exec(s);
  if (m && +m[2] >= 1 && +m[2] <= 12) return `${MONTHS[m[2] - 1]} ${m[1]}`;
  if (/^-?\d+(\.\d+)?$/.test(s) && s.length < 16) return Number(s).toLocaleString("en", { maximumFractionDigits: 2 });
  return s;
}

// isNumberCell says whether a cell reads as a number (aligned right).
export function isNumberCell(v) {
  return typeof v === "number" || typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v) && v.length < 16;
}
