package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/dataexec"
)

// remoteResultChars caps what one remote call keeps: the text and the
// structured content each, in characters. The model sees at most
// Options.MaxToolOutputChars of it (20,000 by default) on top.
const remoteResultChars = 20000

// RemoteTools is the [ToolSource] of the remote MCP tools an admin
// approved for the principal's team: each an ask.Tool named
// <connection>__<tool>, its class from the tool's annotations (untrusted
// hints; missing means destructive), so mutating and destructive calls
// wait for the usual single-use approval, which binds the connection,
// the remote tool and its fingerprint (Tool.Target) with the arguments.
// Descriptions and results are the remote server's: they reach the model
// marked untrusted, and results are capped and pass the sharing filter
// (remoteFilter) like product results. Every call re-reads the
// approval (Remote.Call); a change of the team's connections or
// approvals stops the turns that offered the tools.
func RemoteTools(r Remote) ToolSource { return remoteTools{r} }

// Remote is what Ask needs of the team's remote MCP connections: the
// tools an admin approved, and a call of one. [remote.Tools] is one.
type Remote interface {
	// ApprovedTools returns the usable tools of p's team and a channel
	// closed at the next change of them.
	ApprovedTools(ctx context.Context, p access.Principal) ([]remote.ApprovedTool, <-chan struct{}, error)
	// Call runs tool of connection connID when it is still approved with
	// fingerprint fp.
	Call(ctx context.Context, p access.Principal, connID, tool, fp string, args json.RawMessage) (*remote.CallResult, error)
}

type remoteTools struct{ svc Remote }

func (r remoteTools) Tools(ctx context.Context, p access.Principal) ([]Tool, <-chan struct{}, error) {
	approved, changed, err := r.svc.ApprovedTools(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if len(approved) == 0 {
		// Nothing offered, so nothing to stop: a turn that offered no
		// remote tool is not stopped by an approval made during it.
		return nil, nil, nil
	}
	tools := make([]Tool, 0, len(approved))
	for _, at := range approved {
		tools = append(tools, r.tool(at))
	}
	return tools, changed, nil
}

func (r remoteTools) tool(at remote.ApprovedTool) Tool {
	connID, name, fp, conn := at.ConnectionID, at.Tool.Name, at.Tool.Fingerprint(), at.ConnectionName
	desc := neutralize(fmt.Sprintf("Remote tool %q of the connection %q. Its description, from the remote server (untrusted): %s",
		name, conn, at.Tool.Description))
	return Tool{
		Name: at.ModelName, Description: desc, InputSchema: at.Tool.InputSchema, Class: at.Tool.Class,
		Label:        capChars("Used "+conn+": "+name, 120),
		Filter:       remoteFilter,
		ApproveRight: callRight(at.Tool.Class),
		Target:       "mcp:" + connID + "/" + name + "@" + fp,
		Run: func(ctx context.Context, call Call) (Output, error) {
			res, err := r.svc.Call(ctx, call.Principal, connID, name, fp, call.Arguments)
			if err != nil {
				return Output{}, err
			}
			data := map[string]any{"connection": conn, "tool": name}
			if res.Text != "" {
				data["text"] = capChars(res.Text, remoteResultChars)
			}
			var kept *remote.CallResult // what the page may draw: within the caps
			if res.Structured != nil {
				if b, err := json.Marshal(res.Structured); err == nil && utf8.RuneCount(b) <= remoteResultChars {
					data["structured"] = json.RawMessage(b)
					kept = &remote.CallResult{Structured: res.Structured}
				} else {
					data["structured_truncated"] = true
				}
			}
			result := remoteResultOf(conn, name, kept, data["text"])
			result.Title = titleOf(call.Message)
			return Output{Summary: "Answer from " + capChars(conn, 60), Data: data, Result: result}, nil
		},
	}
}

// RemoteResultType is the Type of a [RemoteResult].
const RemoteResultType = "remote_result"

// Kinds of a [RemoteResult].
const (
	RemoteChart = "chart"
	RemoteTable = "table"
	RemoteText  = "text"
)

// RemoteResult is the typed chat result of a remote MCP tool's call
// (Output.Result, and ToolRun.Result in the work summary): what the page
// or a host draws of the answer, the user's own data. Kind says which
// field is set: [RemoteChart] when the structured content reads as rows
// that chart (a label column and a numeric one, built and checked by
// [dataexec.TableChart], the chart preview's building and sample
// validation), [RemoteTable] when it reads as rows that do not, [RemoteText]
// otherwise (the answer's text, to be shown as text, never as markup).
// It is built from what the call kept (the text and structured content
// within their caps); the model's view of the answer is the sharing
// filter's (remoteFilter), not this.
type RemoteResult struct {
	Type       string `json:"type"` // RemoteResultType
	Connection string `json:"connection"`
	Tool       string `json:"tool"`
	Kind       string `json:"kind"`
	// Title names the answer for people, from the question it answers
	// ("Pageviews from Demo Analytics by week"); "" when the call ran
	// without one (on an approval): a client then names the tool.
	Title string `json:"title,omitempty"`
	// Chart is the chart data of a RemoteChart, drawn like a chart
	// result's data.
	Chart *dataexec.ChartData `json:"chart_data,omitempty"`
	// Table is the rows of a RemoteTable, and of a RemoteChart too (for
	// a table view of the chart).
	Table *RemoteRows `json:"table,omitempty"`
	// Text is a RemoteText's text, "" when the answer had none.
	Text string `json:"text,omitempty"`
}

// RemoteRows are the rows of a remote answer, as a dataset on the tool
// reads them ([remote.CallResult.Table]).
type RemoteRows struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// titleOf is a question as a title: one line, its first letter upper
// case, without the question mark and a leading "show me", at most 80
// characters.
func titleOf(question string) string {
	t := strings.Join(strings.Fields(question), " ")
	for _, lead := range []string{"show me the ", "show me ", "show the ", "show "} {
		if len(t) > len(lead) && strings.EqualFold(t[:len(lead)], lead) {
			t = t[len(lead):]
			break
		}
	}
	t = strings.TrimRight(t, "?!. ")
	if t == "" {
		return ""
	}
	r := []rune(capChars(t, 80))
	return strings.ToUpper(string(r[:1])) + string(r[1:])
}

// remoteResultOf is the typed result of an answer: kept is its
// structured content within the cap (nil when none or over it), text its
// capped text (nil when none).
func remoteResultOf(conn, tool string, kept *remote.CallResult, text any) RemoteResult {
	r := RemoteResult{Type: RemoteResultType, Connection: conn, Tool: tool, Kind: RemoteText}
	r.Text, _ = text.(string)
	if kept == nil {
		return r
	}
	tab, err := kept.Table()
	if err != nil {
		return r
	}
	r.Text, r.Table = "", &RemoteRows{Columns: tab.Columns, Rows: tab.Rows}
	r.Kind = RemoteTable
	if cd, err := dataexec.TableChart(tab); err == nil {
		r.Kind, r.Chart = RemoteChart, cd
	}
	return r
}

// callRight is the right approving a call of a remote tool of class c
// needs: an owner or admin for a destructive tool, an editor or above for
// one that may change something else (mutating, unknown); none for a
// read-only tool, which needs no approval.
func callRight(c dataexec.Class) access.Right {
	switch c {
	case dataexec.ClassReadOnly:
		return ""
	case dataexec.ClassDestructive:
		return access.RightCallDestructiveTool
	}
	return access.RightCallMutatingTool
}

// remoteFilter is the sharing filter of remote answers: the remote
// server's read-only setting does not replace it. At the rows level the
// model sees the answer (already capped). Below it, the structured
// content is summarised the way product tables are (TableFilter, on the
// rows a dataset would read of it: remote.CallResult.Table): columns
// and row count, and at the aggregates level numeric summaries; the text,
// which may say anything, is withheld with a note naming the level.
func remoteFilter(data json.RawMessage, level Sharing) json.RawMessage {
	if level == SharingRows {
		return data
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return json.RawMessage(`{"withheld":"the answer could not be read"}`)
	}
	out := map[string]any{}
	for _, k := range []string{"connection", "tool", "structured_truncated"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	if _, ok := m["text"]; ok {
		out["text_withheld"] = fmt.Sprintf("the text of the answer is not shared with the model at the %q level", level)
	}
	if raw, ok := m["structured"]; ok {
		out["structured"] = structuredSummary(raw, level)
	}
	b, _ := json.Marshal(out)
	return b
}

// structuredSummary is TableFilter's view of a remote answer's structured
// content at level (below rows).
func structuredSummary(raw json.RawMessage, level Sharing) json.RawMessage {
	notTable := json.RawMessage(`{"withheld":"the structured content is not a table"}`)
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return notTable
	}
	tab, err := remote.CallResult{Structured: v}.Table()
	if err != nil {
		return notTable
	}
	b, err := json.Marshal(map[string]any{"columns": tab.Columns, "rows": tab.Rows, "row_count": len(tab.Rows)})
	if err != nil {
		return notTable
	}
	return TableFilter(b, level)
}

func capChars(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
