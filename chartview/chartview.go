// Package chartview is askbi's chart component: one JavaScript module
// (chart.js) and its stylesheet (chart.css), embedded, that draw a
// chart's data (dataexec.ChartData as JSON: chart_type, x_field, labels,
// series) as SVG, with axis titles, readable dates, a tooltip on hover
// and tap, a legend and a table view. The same files draw the reference
// server's page and the MCP app that mcpserver serves to agents' chats
// (MCP Apps), so a chart looks and behaves the same in both.
//
// The module imports nothing, so it can be served as a file
// (import { draw } from "./chart-svg.js") or inlined in a page that may
// load nothing else, and it sets every value from the data as text or as
// an attribute, never as markup. Data of the wrong shape draws as an
// error; more than [MaxPoints] points draw the first MaxPoints and say so.
package chartview

import _ "embed"

// JS is the chart module: export draw(data) returns the element that
// shows data; export check(data) returns {data} normalized or {error}.
//
//go:embed chart.js
var JS []byte

// CSS styles the chart. It reads the host page's colors from custom
// properties, each with a light default: --text, --muted, --surface,
// --frame, --line, --warn and --chart-grid, --chart-axis.
//
//go:embed chart.css
var CSS []byte

// MaxPoints is the most points (rows) a chart draws, the executor's
// default point cap (dataexec.DefaultMaxChartPoints).
const MaxPoints = 1000
