package usage

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/askbi/askbi/access"
)

// Report is the usage view of one team (or of one member of it) over a
// period: counts, tokens, costs, latencies, names and IDs, never text,
// arguments or data. A Ledger builds it from the audit entries and the
// charges of the period.
type Report struct {
	TeamID string `json:"team_id"`
	// TeamName is the team's name for people (Options.TeamName), set by
	// [Service.Report]; "" when the host names none. Ledgers leave it.
	TeamName string    `json:"team_name,omitempty"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// UserID is set when the report holds one member's use only (a
	// member who is not an owner or admin sees their own).
	UserID string `json:"user_id,omitempty"`
	Total  Totals `json:"total"`
	// Users are the members who used Ask or the MCP server, by user ID.
	Users []UserRow `json:"users"`
	// Tools are the tool calls by surface and tool, the most failed
	// first: what fails most heads the list.
	Tools []ToolRow `json:"tools"`
	// Models are the model calls by provider and model, the most
	// expensive first.
	Models []ModelRow `json:"models"`
	// Clients are the MCP credentials (API keys, OAuth grants) that
	// called, with the name their client gave on initialize.
	Clients []ClientRow `json:"clients"`
	// Connections are the remote MCP connections Ask called.
	Connections []ConnectionRow `json:"connections"`
}

// Totals are the whole report's sums.
type Totals struct {
	ChatTurns  int64   `json:"chat_turns"`
	MCPCalls   int64   `json:"mcp_calls"`
	ModelCalls int64   `json:"model_calls"`
	Tokens     Tokens  `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
}

// UserRow is one member's use.
type UserRow struct {
	UserID string `json:"user_id"`
	// ChatTurns are chat requests that ran a turn (messages, approvals,
	// rejections), ChatErrors those that failed.
	ChatTurns  int64 `json:"chat_turns"`
	ChatErrors int64 `json:"chat_errors"`
	// MCPCalls are MCP tool calls, MCPErrors those that failed.
	MCPCalls   int64     `json:"mcp_calls"`
	MCPErrors  int64     `json:"mcp_errors"`
	ModelCalls int64     `json:"model_calls"`
	Tokens     Tokens    `json:"tokens"`
	CostUSD    float64   `json:"cost_usd"`
	LastActive time.Time `json:"last_active"`
}

// ToolRow is one tool's calls on one surface ("chat" or "mcp").
type ToolRow struct {
	Surface string `json:"surface"`
	Tool    string `json:"tool"`
	Calls   int64  `json:"calls"`
	Errors  int64  `json:"errors"`
	// ErrorRate is Errors / Calls.
	ErrorRate float64 `json:"error_rate"`
	// P50MS and P95MS are the calls' latency percentiles in
	// milliseconds, by nearest rank (the smallest duration at or above
	// that share of the calls, as PostgreSQL's percentile_disc).
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
}

// ModelRow is one model's calls.
type ModelRow struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Calls    int64   `json:"calls"`
	Tokens   Tokens  `json:"tokens"`
	CostUSD  float64 `json:"cost_usd"`
	// Priced says the host states a price for the model (Options.Prices);
	// without one its cost reads 0.
	Priced bool `json:"priced"`
}

// ClientRow is one MCP credential's calls.
type ClientRow struct {
	UserID       string            `json:"user_id"`
	Auth         access.AuthMethod `json:"auth"`
	CredentialID string            `json:"credential_id"`
	// Client is the latest name the client gave itself in the period
	// (unverified): on initialize (access.ActionMCPInitialize), or in a
	// call's _meta (a 2026-07-28 client's; Details["client"] of the
	// call). "" when it gave none.
	Client   string    `json:"client"`
	Calls    int64     `json:"calls"`
	Errors   int64     `json:"errors"`
	LastUsed time.Time `json:"last_used"`
}

// ConnectionRow is one remote MCP connection's calls from Ask.
type ConnectionRow struct {
	ConnectionID string `json:"connection_id"`
	// Name is the connection's name at its latest call in the period.
	Name     string    `json:"name"`
	Calls    int64     `json:"calls"`
	Errors   int64     `json:"errors"`
	P50MS    float64   `json:"p50_ms"`
	P95MS    float64   `json:"p95_ms"`
	LastUsed time.Time `json:"last_used"`
}

// Sort puts r's rows in their documented order: users by ID; tools by
// errors, then calls (most first), then surface and name; models by cost
// and calls (most first), then provider and name; clients by user, then
// credential; connections by calls (most first), then ID. Ledgers call it
// on the reports they return.
func (r *Report) Sort() {
	slices.SortFunc(r.Users, func(a, b UserRow) int { return cmp.Compare(a.UserID, b.UserID) })
	slices.SortFunc(r.Tools, func(a, b ToolRow) int {
		return cmp.Or(cmp.Compare(b.Errors, a.Errors), cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Surface, b.Surface), cmp.Compare(a.Tool, b.Tool))
	})
	slices.SortFunc(r.Models, func(a, b ModelRow) int {
		return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	slices.SortFunc(r.Clients, func(a, b ClientRow) int {
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.Auth, b.Auth), cmp.Compare(a.CredentialID, b.CredentialID))
	})
	slices.SortFunc(r.Connections, func(a, b ConnectionRow) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.ConnectionID, b.ConnectionID))
	})
}

// Percentile is the nearest-rank percentile p (0 < p <= 1) of sorted
// values: the smallest value at or above a share p of them, as
// PostgreSQL's percentile_disc; 0 for none. Ledgers use it so that they
// agree.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// DurationMS is d in milliseconds at microsecond precision, as ledgers
// keep an audit entry's duration.
func DurationMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// CostUSD is micros, millionths of a dollar, in dollars.
func CostUSD(micros int64) float64 { return float64(micros) / 1e6 }

// ErrorRate is errors / calls, or 0 for no calls.
func ErrorRate(errors, calls int64) float64 {
	if calls == 0 {
		return 0
	}
	return float64(errors) / float64(calls)
}
