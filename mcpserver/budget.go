package mcpserver

// The response budget of the data tools (run_dataset, get_chart_data,
// create_chart_preview, explore_data): every answer they give fits a real client's cap on tool
// results. All of it is in this file.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// DefaultResultBytes is the default Options.MaxResultBytes: 40,000 bytes
// of serialized tool result, which holds the data twice (as the JSON text
// the MCP spec asks for, and as structuredContent), so each copy is at
// most about 20,000 bytes.
//
// How bytes map to tokens: 40,000-byte answers of 1,000-row results, as
// this server serves them, counted with the cl100k_base and o200k_base
// BPE tokenizers, take 1.57 bytes per token for small integers, 2.0 for
// dates with integers or decimals, 2.55 for 64-bit IDs and floats, 2.8
// for two-letter codes and 3.8 for text. At the densest either copy of
// the data is 12,750 tokens, half of the 25,000 past which Claude Code
// refuses a tool result; the whole answer, both copies, 25,450 (the
// tokenizer Claude uses is not published). It is also under the ~50 KB
// other BI MCP servers cap an answer at.
const DefaultResultBytes = 40000

// MinResultBytes is the smallest budget a server or a caller may set:
// room for the envelope, the summary and a few rows.
const MinResultBytes = 1000

// Truncation reasons the budget adds to dataexec's (TruncatedRows,
// TruncatedBytes, TruncatedPoints).
const (
	// TruncatedBudget: the rows or points that fit the response budget
	// were returned, and more existed.
	TruncatedBudget = "response_budget"
	// TruncatedLimit: the caller's limit was reached, and more existed.
	TruncatedLimit = "limit"
)

// budgetArgs are the arguments every data tool takes besides its
// action's: the caller may lower the server's budget, never raise it.
type budgetArgs struct {
	// Limit caps the rows (or chart points) returned.
	Limit int `json:"limit,omitempty"`
	// MaxBytes lowers the response budget, from MinResultBytes up to the
	// server's Options.MaxResultBytes.
	MaxBytes int `json:"max_bytes,omitempty"`
}

// budgeted is a data tool's input: its action's input and budgetArgs,
// side by side in one JSON object.
type budgeted[In any] struct {
	in   In
	args budgetArgs
}

func (b *budgeted[In]) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &b.in); err != nil {
		return err
	}
	return json.Unmarshal(data, &b.args)
}

// budgetSchema adds limit and max_bytes to a data tool's input schema;
// max_bytes names this server's budget as its maximum, so tools/list
// tells a client the ceiling and the SDK refuses a call above it.
func budgetSchema(input json.RawMessage, maxBytes int) json.RawMessage {
	input = withProperty(input, "limit", fmt.Sprintf(`{"type":"integer","minimum":1,"maximum":%d}`, dataexec.HardMaxRows))
	return withProperty(input, "max_bytes", fmt.Sprintf(`{"type":"integer","minimum":%d,"maximum":%d}`, MinResultBytes, maxBytes))
}

// fromDataAction makes a budgeted data tool of a product action: as
// fromAction, with budgetArgs in its input, and an answer cut by cut to
// the caller's limit and then to the largest row count whose serialized
// result fits the budget.
func fromDataAction[In, Out any](a dataexec.Action[In, Out], desc, output string, shape func(s *Server, in In, out Out) reply, c cutter[Out]) tool {
	return tool{name: a.Name, right: a.Right, class: a.Class, desc: desc, input: a.Input, output: output, budgeted: true,
		register: func(s *Server, t *mcp.Tool) {
			mcp.AddTool(s.mcp, t, handle(s, func(ctx context.Context, p access.Principal, b budgeted[In]) (reply, error) {
				out, err := a.Run(s.exec, ctx, p, b.in)
				if err != nil {
					return reply{}, err
				}
				return fitReply(ctx, s, p, b, out, shape, c), nil
			}))
		}}
}

// fitReply applies the caller's limit, then the byte budget: the smaller
// of the server's Options.MaxResultBytes and the caller's max_bytes. It
// never fails: at worst the answer keeps no rows and says why. A cut or
// truncated answer says so in structuredContent (truncated,
// truncated_reason, row_count: the rows returned) and in its text, with
// how to narrow the call.
//
// The budget counts the whole tool result as the client receives it
// (toolResult: the summary, the data's JSON as text and as
// structuredContent, an OAuth call's team label included), not the
// JSON-RPC envelope around it.
func fitReply[In, Out any](ctx context.Context, s *Server, p access.Principal, b budgeted[In], out Out, shape func(*Server, In, Out) reply, c cutter[Out]) reply {
	limit := s.opts.MaxResultBytes
	if b.args.MaxBytes > 0 && b.args.MaxBytes < limit {
		limit = b.args.MaxBytes
	}
	total := c.rowsOf(out)
	if b.args.Limit > 0 && total > b.args.Limit {
		out, total = c.cut(out, b.args.Limit, TruncatedLimit), b.args.Limit
	}
	build := func(out Out, cut bool, n int) (reply, int) {
		r := shape(s, b.in, out)
		if cut {
			r.summary += fmt.Sprintf(" The first %d of %d rows fit the %d-byte response budget.", n, total, limit)
		}
		if c.meta(out).Truncated {
			r.summary += " To see the rest, narrow the call: " + c.narrow + "."
		}
		if p.Auth == access.AuthOAuth {
			r = s.withTeam(ctx, p.TeamID, r)
		}
		r.teamed = true
		return sized(r)
	}
	// Estimate the size from a sample of rows first, so that a result far
	// over the budget is never encoded whole: a request should not hold
	// more than about the budget in encodings.
	fits := func(n int) bool {
		_, size := build(c.cut(out, n, TruncatedBudget), true, n)
		return size <= limit
	}
	sample := min(total, 32)
	_, empty := build(c.cut(out, 0, TruncatedBudget), true, 0)
	_, some := build(c.cut(out, sample, TruncatedBudget), true, sample)
	perRow := max(float64(some-empty)/float64(max(sample, 1)), 1)
	if float64(empty)+perRow*float64(total) <= 1.25*float64(limit) {
		if r, size := build(out, false, total); size <= limit {
			return r
		}
	}
	if total == 0 {
		r, _ := build(out, false, 0)
		return r
	}
	// The largest n whose cut answer fits (n rows fit, n+1 do not):
	// bracket it from the estimate, then bisect the bracket.
	guess := min(max(int((float64(limit)-float64(empty))/perRow), 0), total-1)
	step := max(guess/32, 1)
	var lo, hi int // fits(lo), or lo is 0; !fits(hi), or hi is total
	if fits(guess) {
		lo = guess
		for lo+step < total && fits(lo+step) {
			lo, step = lo+step, 2*step
		}
		hi = min(lo+step, total)
	} else {
		hi = guess
		for hi-step > 0 && !fits(hi-step) {
			hi, step = hi-step, 2*step
		}
		lo = max(hi-step, 0)
	}
	n := lo + sort.Search(hi-lo-1, func(i int) bool { return !fits(lo + 1 + i) })
	if n == total-1 {
		// The estimate was off: the whole answer may fit after all.
		if r, size := build(out, false, total); size <= limit {
			return r
		}
	}
	r, _ := build(c.cut(out, n, TruncatedBudget), true, n)
	return r
}

// sized returns r with its data encoded and escaped, and the size of the
// tool result it makes (toolResult), as the server writes it, without
// writing it.
func sized(r reply) (reply, int) {
	_, enc, err := prepareResult(r)
	if err != nil {
		return r, 0 // handle reports the same error when it encodes r
	}
	r.data, r.quoted, r.quotedOf = json.RawMessage(enc.data), enc.quoted, enc.data
	return r, enc.size()
}

// cutter keeps the first n rows (or points) of a result Out, marking the
// copy truncated with reason; it never changes out, which the cache may
// share. rowsOf counts what can be cut, meta reads the result's Meta and
// narrow says how a caller gets other rows.
type cutter[Out any] struct {
	rowsOf func(out Out) int
	cut    func(out Out, n int, reason string) Out
	meta   func(out Out) dataexec.Meta
	narrow string
}

// cutRows keeps the first n rows of res.
func cutRows(res *dataexec.Result, n int, reason string) *dataexec.Result {
	c := res.Head(n)
	c.Truncated, c.TruncatedReason = true, reason
	return c
}

var (
	datasetCut = cutter[*dataexec.Result]{
		rowsOf: func(res *dataexec.Result) int { return res.RowCount },
		cut:    cutRows,
		meta:   func(res *dataexec.Result) dataexec.Meta { return res.Meta },
		narrow: "add filters that select fewer rows",
	}
	chartCut = cutter[*dataexec.ChartResult]{
		rowsOf: func(cr *dataexec.ChartResult) int {
			if cr.Data == nil {
				return 0
			}
			return cr.Data.RowCount
		},
		cut: func(cr *dataexec.ChartResult, n int, reason string) *dataexec.ChartResult {
			c, d := *cr, *cr.Data
			d.Labels = d.Labels[:min(n, len(d.Labels))]
			d.Series = make([]dataexec.Series, len(cr.Data.Series))
			for i, sr := range cr.Data.Series {
				d.Series[i] = dataexec.Series{Name: sr.Name, Values: sr.Values[:min(n, len(sr.Values))]}
			}
			d.RowCount, d.Truncated, d.TruncatedReason = min(n, d.RowCount), true, reason
			c.Data = &d
			return &c
		},
		meta: func(cr *dataexec.ChartResult) dataexec.Meta {
			if cr.Data == nil {
				return dataexec.Meta{}
			}
			return cr.Data.Meta
		},
		narrow: "add filters that select fewer points",
	}
	// previewCut is chartCut for create_chart_preview, which takes no
	// filters.
	previewCut = cutter[*dataexec.ChartResult]{rowsOf: chartCut.rowsOf, cut: chartCut.cut, meta: chartCut.meta,
		narrow: "preview a dataset that aggregates more"}
	// exploreCut cuts a preview's rows; inspections are bounded by
	// dataexec's InspectLimit and are not cut.
	exploreCut = cutter[*dataexec.Explored]{
		rowsOf: func(ex *dataexec.Explored) int {
			if ex.Preview == nil {
				return 0
			}
			return ex.Preview.RowCount
		},
		cut: func(ex *dataexec.Explored, n int, reason string) *dataexec.Explored {
			if ex.Preview == nil {
				return ex
			}
			c := *ex
			c.Preview = cutRows(ex.Preview, n, reason)
			return &c
		},
		meta: func(ex *dataexec.Explored) dataexec.Meta {
			if ex.Preview == nil {
				return dataexec.Meta{}
			}
			return ex.Preview.Meta
		},
		narrow: "select fewer or shorter columns, or add a WHERE clause or a LIMIT",
	}
)
