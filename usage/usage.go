// Package usage is what Ask and the MCP server cost and how they are
// used, for a team's owners and admins: the usage records (each model
// call's tokens, as its provider reported them, and their estimated cost),
// the usage view over them and the audit log together (who used the
// assistant and the MCP server and how often, tool calls by tool with
// error rates and p50/p95 latency, tokens and cost by user and model,
// connected MCP clients, remote MCP connections called), and token
// budgets per team or user per day or month, which Ask checks before a
// turn calls the model.
//
// The view never holds message text, memory, tool arguments or data: it
// reads audit entries (which hold none, see [access.AuditEntry]) and
// token counts. A member who is not an owner or admin sees only their own
// row.
//
// Quick start:
//
//	store := usage.NewMemoryStore(nil) // or pgstore's DB.Usage
//	svc := usage.NewService(store, store, gate, &usage.Options{Prices: prices})
//	// The ledger is also the audit sink the view reads:
//	audit := access.TeeAudit(store, hostAuditLog)
//	srv := mcpserver.New(exec, gate, keys.Verify, &mcpserver.Options{Audit: audit})
//	assistant := ask.New(model, gate, exec, stores, tools, &ask.Options{Usage: svc, Audit: audit})
//	http.Handle("/ai/usage", usagehttp.New(svc, login, nil))
package usage

import (
	"context"
	"time"

	"github.com/askbi/askbi/access"
)

// Tokens are the tokens of one model call, or of several summed, as the
// provider reported them: zero where it reported nothing (an
// OpenAI-compatible server that ignores stream_options, say). ask.Usage is
// this type.
type Tokens struct {
	// InputTokens are every input token, those read from or written to
	// the provider's prompt cache included.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens are the input tokens read from the prompt cache:
	// the static prefix (system prompt and tools) of a repeated request.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// CacheWriteTokens are the input tokens written to the prompt cache
	// (Anthropic reports them; OpenAI caches without a charge).
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// Add adds v to u.
func (u *Tokens) Add(v Tokens) {
	u.InputTokens += v.InputTokens
	u.CachedInputTokens += v.CachedInputTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.OutputTokens += v.OutputTokens
}

// Total is what a budget counts: input and output tokens (the cache's
// share of the input included).
func (u Tokens) Total() int64 { return u.InputTokens + u.OutputTokens }

// Price is a model's price in US dollars per million tokens, which
// providers do not report: a host states it.
type Price struct {
	Input float64 `json:"input"`
	// CachedInput and CacheWrite are the prices of input tokens read
	// from and written to the prompt cache; zero means Input's.
	CachedInput float64 `json:"cached_input,omitempty"`
	CacheWrite  float64 `json:"cache_write,omitempty"`
	Output      float64 `json:"output"`
}

// Cost is what u costs at p, in US dollars.
func (p Price) Cost(u Tokens) float64 {
	cached, write := p.CachedInput, p.CacheWrite
	if cached == 0 {
		cached = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	plain := max(u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*p.Input + float64(u.CachedInputTokens)*cached + float64(u.CacheWriteTokens)*write +
		float64(u.OutputTokens)*p.Output) / 1e6
}

// Prices are the prices by model name, as the provider names the model
// ("gpt-4o-mini", "claude-sonnet-4-5").
type Prices map[string]Price

// Charge is one model call's usage record: who, which model, what it
// reported, and its estimated cost when the model's price is known.
type Charge struct {
	Time     time.Time `json:"time"`
	TeamID   string    `json:"team_id"`
	UserID   string    `json:"user_id"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Tokens   Tokens    `json:"tokens"`
	// CostMicros is the estimated cost in millionths of a US dollar, at
	// the price known when the call was made; 0 when none was.
	CostMicros int64 `json:"cost_micros"`
}

// Period is how long a budget lasts before it starts again: a UTC
// calendar day or month.
type Period string

// Periods.
const (
	Day   Period = "day"
	Month Period = "month"
)

// Valid reports whether p is Day or Month.
func (p Period) Valid() bool { return p == Day || p == Month }

// Start is the start of the period that holds t, in UTC.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	if p == Month {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// Next is the start of the period after the one that holds t: when a
// budget resets.
func (p Period) Next(t time.Time) time.Time {
	s := p.Start(t)
	if p == Month {
		return s.AddDate(0, 1, 0)
	}
	return s.AddDate(0, 0, 1)
}

// Budget is a token budget of a team, or of one user in it, for a
// period: past Tokens (Tokens.Total of the period's charges), a new turn
// is refused.
type Budget struct {
	TeamID string `json:"team_id"`
	// UserID is the member the budget is for; "" for the whole team.
	UserID string `json:"user_id,omitempty"`
	Period Period `json:"period"`
	Tokens int64  `json:"tokens"`
	// SetBy and SetAt are who set the budget last, and when.
	SetBy string    `json:"set_by"`
	SetAt time.Time `json:"set_at"`
}

// Query is the period and scope of a report: audit entries and charges
// with From <= time < To, of one user when UserID is set, of the whole
// team otherwise.
type Query struct {
	From, To time.Time
	UserID   string
}

// Ledger keeps the usage records and reads the audit log: it is an
// [access.AuditSink] (the host's audit log, or a copy of it through
// [access.TeeAudit]) and the store of model calls' charges, and it
// answers budget sums and reports over both. Implementations must be
// safe for concurrent use, across processes sharing a backing store: a
// charge that Charge returned for is counted by every later Spent of
// every process. Package usagetest proves one:
// usagetest.RunLedger(t, newLedger).
type Ledger interface {
	// Record keeps an audit entry. An implementation may keep it a
	// moment before writing it (a batch a second), so that the MCP hot
	// path makes no round trip; [Flusher] then writes what it holds. It
	// returns Unavailable when the store cannot be reached.
	Record(ctx context.Context, e access.AuditEntry) error
	// Charge keeps one model call's usage record. It returns
	// Unavailable when the store cannot be reached, Internal otherwise.
	Charge(ctx context.Context, c Charge) error
	// Spent is the Tokens.Total of the charges of teamID (of its member
	// userID when not "") at or after since. It returns only Unavailable
	// or Internal errors.
	Spent(ctx context.Context, teamID, userID string, since time.Time) (int64, error)
	// Report sums teamID's audit entries and charges of q, its rows in
	// the order [Report.Sort] gives. It returns only Unavailable or
	// Internal errors.
	Report(ctx context.Context, teamID string, q Query) (Report, error)
}

// Flusher is a [Ledger] that holds audit entries before writing them:
// Flush writes what it holds now. Tests and a shutdown call it.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Store is a [Ledger] and [Budgets] in one, as [MemoryStore] and
// pgstore's UsageStore are.
type Store interface {
	Ledger
	Budgets
}

// Budgets keeps the token budgets. Implementations must be safe for
// concurrent use. Package usagetest proves one:
// usagetest.RunBudgets(t, newBudgets).
type Budgets interface {
	// SetBudget creates or replaces the budget of (b.TeamID, b.UserID,
	// b.Period). It returns only Unavailable or Internal errors.
	SetBudget(ctx context.Context, b Budget) error
	// DeleteBudget removes the budget of (teamID, userID, period), or
	// returns NotFound when there is none.
	DeleteBudget(ctx context.Context, teamID, userID string, period Period) error
	// TeamBudgets lists teamID's budgets, the team's first, then by user
	// ID; each user's day before month. It returns only Unavailable or
	// Internal errors.
	TeamBudgets(ctx context.Context, teamID string) ([]Budget, error)
}
