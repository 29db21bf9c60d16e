package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/usage"
)

// Audit entries a UsageStore holds before it writes them, and how long.
const (
	auditBatch      = 256
	auditFlushEvery = time.Second
	// auditMaxHeld bounds what it holds while the database cannot be
	// reached; past it new entries are dropped (logged).
	auditMaxHeld = 10000
)

// UsageStore is the PostgreSQL [usage.Ledger] and [usage.Budgets]
// (migration 0020_usage.sql): the audit log the usage view reads, the
// usage records of model calls and the token budgets, shared by every
// instance on the database.
//
// Record holds audit entries and writes them in batches, a second
// apart or every 256 entries, so that an MCP call, which is audited,
// makes no round trip for it (the hot path touches no shared store); a
// process that dies loses at most its last second of entries, and while
// the database cannot be reached it holds up to 10,000 and drops the
// entries after them (logged). Flush writes what it holds; Close flushes
// and stops. Charge
// and the budgets write at once: a charge that Charge returned for is
// counted by every instance's next Spent.
type UsageStore struct {
	db  *sqlx.DB
	log *slog.Logger

	mu      sync.Mutex
	held    []access.AuditEntry
	dropped int
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	flushMu sync.Mutex // one write of held entries at a time
}

var (
	_ usage.Ledger  = (*UsageStore)(nil)
	_ usage.Budgets = (*UsageStore)(nil)
	_ usage.Flusher = (*UsageStore)(nil)
)

// NewUsageStore returns the store on db, its writer of audit entries
// started. log (nil for slog.Default()) hears of entries it could not
// write. Close it when done.
func NewUsageStore(db *sqlx.DB, log *slog.Logger) *UsageStore {
	if log == nil {
		log = slog.Default()
	}
	s := &UsageStore{db: db, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.writer()
	return s
}

// Record implements [usage.Ledger]: it holds e for the next batch.
func (s *UsageStore) Record(_ context.Context, e access.AuditEntry) error {
	s.mu.Lock()
	if len(s.held) >= auditMaxHeld {
		s.dropped++
	} else {
		s.held = append(s.held, e)
	}
	full := len(s.held) >= auditBatch
	s.mu.Unlock()
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// writer writes the held entries every second, or when a batch is full,
// until Close.
func (s *UsageStore) writer() {
	defer close(s.done)
	tick := time.NewTicker(auditFlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.Flush(ctx); err != nil {
			s.log.Error("pgstore: write audit entries (kept for the next try)", "err", err)
		}
		cancel()
	}
}

// Flush writes the entries Record holds. Those it could not write stay
// held for the next try.
func (s *UsageStore) Flush(ctx context.Context) (err error) {
	defer askbi.Wrap(&err, "pgstore.UsageStore.Flush")
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	for {
		s.mu.Lock()
		batch := s.held[:min(len(s.held), auditBatch)]
		dropped := s.dropped
		s.dropped = 0
		s.mu.Unlock()
		if dropped > 0 {
			s.log.Error("pgstore: audit entries dropped while the database could not be reached", "dropped", dropped)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := s.insert(ctx, batch); err != nil {
			return err
		}
		s.mu.Lock()
		// Record only appends: those written are the first len(batch).
		s.held = s.held[len(batch):]
		s.mu.Unlock()
	}
}

// insert writes entries in one statement.
func (s *UsageStore) insert(ctx context.Context, entries []access.AuditEntry) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO audit_log (at, action, user_id, team_id, auth, credential_id, target, outcome, duration_us, details) VALUES `)
	args := make([]any, 0, 10*len(entries))
	for i, e := range entries {
		target, err := json.Marshal(e.Target)
		if err != nil {
			return err
		}
		details := []byte("{}")
		if len(e.Details) > 0 {
			if details, err = json.Marshal(e.Details); err != nil {
				return err
			}
		}
		if i > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10)
		args = append(args, e.Time.UTC(), e.Action, e.UserID, e.TeamID, string(e.Auth), e.CredentialID, string(target), e.Outcome,
			e.Duration.Microseconds(), string(details))
	}
	if _, err := s.db.ExecContext(ctx, q.String(), args...); err != nil {
		return internal("pgstore.UsageStore.Record", err)
	}
	return nil
}

// Close writes the held entries and stops the writer.
func (s *UsageStore) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Flush(ctx)
}

// Purge deletes the audit entries and charges older than 400 days, the
// view's longest reach with room to spare: a retention step
// (httpserve.Purge).
func (s *UsageStore) Purge(ctx context.Context) (int, error) {
	return s.PurgeBefore(ctx, time.Now().AddDate(0, 0, -400))
}

// PurgeBefore deletes the audit entries and charges before cutoff and
// returns how many.
func (s *UsageStore) PurgeBefore(ctx context.Context, cutoff time.Time) (n int, err error) {
	defer askbi.Wrap(&err, "pgstore.UsageStore.Purge")
	for _, table := range []string{"audit_log", "usage_charges"} {
		res, err := s.db.ExecContext(ctx, `DELETE FROM `+table+` WHERE at < $1`, cutoff)
		if err != nil {
			return n, internal("pgstore.UsageStore.Purge", err)
		}
		k, _ := res.RowsAffected()
		n += int(k)
	}
	return n, nil
}

// Charge implements [usage.Ledger].
func (s *UsageStore) Charge(ctx context.Context, c usage.Charge) error {
	const op = "pgstore.UsageStore.Charge"
	t := c.Tokens
	return write(ctx, s.db, op, nil, `INSERT INTO usage_charges (at, team_id, user_id, provider, model,
		input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, cost_micros) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.Time.UTC(), c.TeamID, c.UserID, c.Provider, c.Model, t.InputTokens, t.CachedInputTokens, t.CacheWriteTokens, t.OutputTokens, c.CostMicros)
}

// Spent implements [usage.Ledger].
func (s *UsageStore) Spent(ctx context.Context, teamID, userID string, since time.Time) (int64, error) {
	var n int64
	err := s.db.GetContext(ctx, &n, `SELECT COALESCE(sum(input_tokens + output_tokens), 0) FROM usage_charges
		WHERE team_id = $1 AND ($2 = '' OR user_id = $2) AND at >= $3`, teamID, userID, since.UTC())
	if err != nil {
		return 0, internal("pgstore.UsageStore.Spent", err)
	}
	return n, nil
}

// Report implements [usage.Ledger]: six sums in the database, in one
// read-only transaction so they agree.
func (s *UsageStore) Report(ctx context.Context, teamID string, q usage.Query) (_ usage.Report, err error) {
	const op = "pgstore.UsageStore.Report"
	defer askbi.Wrap(&err, op)
	r := usage.Report{TeamID: teamID, From: q.From, To: q.To, UserID: q.UserID}
	tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return r, internal(op, err)
	}
	defer tx.Rollback()
	// $1 team, $2 from, $3 to, $4 user ('' for all).
	where := `team_id = $1 AND at >= $2 AND at < $3 AND ($4 = '' OR user_id = $4)`
	args := []any{teamID, q.From.UTC(), q.To.UTC(), q.UserID}
	sel := func(dst any, query string) error {
		if err := sqlx.SelectContext(ctx, tx, dst, query, args...); err != nil {
			return internal(op, err)
		}
		return nil
	}

	var users []struct {
		UserID     string    `db:"user_id"`
		ChatTurns  int64     `db:"chat_turns"`
		ChatErrors int64     `db:"chat_errors"`
		MCPCalls   int64     `db:"mcp_calls"`
		MCPErrors  int64     `db:"mcp_errors"`
		Last       time.Time `db:"last"`
	}
	if err := sel(&users, `SELECT user_id,
			count(*) FILTER (WHERE action = 'chat.turn') AS chat_turns,
			count(*) FILTER (WHERE action = 'chat.turn' AND outcome <> 'ok') AS chat_errors,
			count(*) FILTER (WHERE action = 'mcp.tool_call') AS mcp_calls,
			count(*) FILTER (WHERE action = 'mcp.tool_call' AND outcome <> 'ok') AS mcp_errors,
			max(at) AS last
		FROM audit_log WHERE `+where+` AND action IN ('chat.turn', 'mcp.tool_call') GROUP BY user_id`); err != nil {
		return r, err
	}
	type sums struct {
		Calls  int64 `db:"calls"`
		In     int64 `db:"input_tokens"`
		Cached int64 `db:"cached_input_tokens"`
		Write  int64 `db:"cache_write_tokens"`
		Out    int64 `db:"output_tokens"`
		Cost   int64 `db:"cost_micros"`
	}
	tokens := func(s sums) usage.Tokens {
		return usage.Tokens{InputTokens: s.In, CachedInputTokens: s.Cached, CacheWriteTokens: s.Write, OutputTokens: s.Out}
	}
	const sumCols = `count(*) AS calls, sum(input_tokens) AS input_tokens, sum(cached_input_tokens) AS cached_input_tokens,
		sum(cache_write_tokens) AS cache_write_tokens, sum(output_tokens) AS output_tokens, sum(cost_micros) AS cost_micros`
	var byUser []struct {
		UserID string    `db:"user_id"`
		Last   time.Time `db:"last"`
		sums
	}
	if err := sel(&byUser, `SELECT user_id, max(at) AS last, `+sumCols+` FROM usage_charges WHERE `+where+` GROUP BY user_id`); err != nil {
		return r, err
	}
	var byModel []struct {
		Provider string `db:"provider"`
		Model    string `db:"model"`
		sums
	}
	if err := sel(&byModel, `SELECT provider, model, `+sumCols+` FROM usage_charges WHERE `+where+` GROUP BY provider, model`); err != nil {
		return r, err
	}
	var tools []struct {
		Surface string `db:"surface"`
		Tool    string `db:"tool"`
		Calls   int64  `db:"calls"`
		Errors  int64  `db:"errors"`
		P50     int64  `db:"p50"`
		P95     int64  `db:"p95"`
	}
	if err := sel(&tools, `SELECT CASE action WHEN 'mcp.tool_call' THEN 'mcp' ELSE 'chat' END AS surface,
			COALESCE(details->>'tool', '') AS tool, count(*) AS calls, count(*) FILTER (WHERE outcome <> 'ok') AS errors,
			percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_us) AS p50,
			percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_us) AS p95
		FROM audit_log WHERE `+where+` AND action IN ('mcp.tool_call', 'chat.tool_call') GROUP BY 1, 2`); err != nil {
		return r, err
	}
	var clients []struct {
		UserID       string    `db:"user_id"`
		Auth         string    `db:"auth"`
		CredentialID string    `db:"credential_id"`
		Client       string    `db:"client"`
		Calls        int64     `db:"calls"`
		Errors       int64     `db:"errors"`
		Last         time.Time `db:"last"`
	}
	// The latest name a client gave, the greatest (in byte order) of
	// those given at the same moment.
	if err := sel(&clients, `SELECT user_id, auth, credential_id,
			COALESCE((array_agg(details->>'client' ORDER BY at DESC, (details->>'client') COLLATE "C" DESC)
				FILTER (WHERE COALESCE(details->>'client', '') <> ''))[1], '') AS client,
			count(*) FILTER (WHERE action = 'mcp.tool_call') AS calls,
			count(*) FILTER (WHERE action = 'mcp.tool_call' AND outcome <> 'ok') AS errors,
			max(at) AS last
		FROM audit_log WHERE `+where+` AND action IN ('mcp.tool_call', 'mcp.initialize') GROUP BY user_id, auth, credential_id`); err != nil {
		return r, err
	}
	var conns []struct {
		ID     string    `db:"id"`
		Name   string    `db:"name"`
		Calls  int64     `db:"calls"`
		Errors int64     `db:"errors"`
		P50    int64     `db:"p50"`
		P95    int64     `db:"p95"`
		Last   time.Time `db:"last"`
	}
	if err := sel(&conns, `SELECT COALESCE(target->>'ID', '') AS id, -- access.Entity's JSON
			COALESCE((array_agg(details->>'connection' ORDER BY at DESC, (details->>'connection') COLLATE "C" DESC)
				FILTER (WHERE COALESCE(details->>'connection', '') <> ''))[1], '') AS name,
			count(*) AS calls, count(*) FILTER (WHERE outcome <> 'ok') AS errors,
			percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_us) AS p50,
			percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_us) AS p95, max(at) AS last
		FROM audit_log WHERE `+where+` AND action = 'connection.remote_call' GROUP BY 1`); err != nil {
		return r, err
	}

	rows := map[string]*usage.UserRow{}
	user := func(id string, last time.Time) *usage.UserRow {
		u := rows[id]
		if u == nil {
			u = &usage.UserRow{UserID: id}
			rows[id] = u
		}
		if last.After(u.LastActive) {
			u.LastActive = last
		}
		return u
	}
	for _, x := range users {
		u := user(x.UserID, x.Last.UTC())
		u.ChatTurns, u.ChatErrors, u.MCPCalls, u.MCPErrors = x.ChatTurns, x.ChatErrors, x.MCPCalls, x.MCPErrors
		r.Total.ChatTurns += x.ChatTurns
		r.Total.MCPCalls += x.MCPCalls
	}
	for _, x := range byUser {
		u := user(x.UserID, x.Last.UTC())
		u.ModelCalls, u.Tokens, u.CostUSD = x.Calls, tokens(x.sums), usage.CostUSD(x.Cost)
	}
	for _, u := range rows {
		r.Users = append(r.Users, *u)
	}
	var cost int64
	for _, x := range byModel {
		r.Models = append(r.Models, usage.ModelRow{Provider: x.Provider, Model: x.Model, Calls: x.Calls, Tokens: tokens(x.sums), CostUSD: usage.CostUSD(x.Cost)})
		r.Total.ModelCalls += x.Calls
		r.Total.Tokens.Add(tokens(x.sums))
		cost += x.Cost
	}
	r.Total.CostUSD = usage.CostUSD(cost)
	ms := func(us int64) float64 { return usage.DurationMS(time.Duration(us) * time.Microsecond) }
	for _, x := range tools {
		r.Tools = append(r.Tools, usage.ToolRow{Surface: x.Surface, Tool: x.Tool, Calls: x.Calls, Errors: x.Errors,
			ErrorRate: usage.ErrorRate(x.Errors, x.Calls), P50MS: ms(x.P50), P95MS: ms(x.P95)})
	}
	for _, x := range clients {
		r.Clients = append(r.Clients, usage.ClientRow{UserID: x.UserID, Auth: access.AuthMethod(x.Auth), CredentialID: x.CredentialID,
			Client: x.Client, Calls: x.Calls, Errors: x.Errors, LastUsed: x.Last.UTC()})
	}
	for _, x := range conns {
		r.Connections = append(r.Connections, usage.ConnectionRow{ConnectionID: x.ID, Name: x.Name, Calls: x.Calls, Errors: x.Errors,
			P50MS: ms(x.P50), P95MS: ms(x.P95), LastUsed: x.Last.UTC()})
	}
	r.Sort()
	return r, nil
}

// SetBudget implements [usage.Budgets].
func (s *UsageStore) SetBudget(ctx context.Context, b usage.Budget) error {
	return write(ctx, s.db, "pgstore.UsageStore.SetBudget", nil, `INSERT INTO usage_budgets (team_id, user_id, period, tokens, set_by, set_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (team_id, user_id, period) DO UPDATE SET tokens = EXCLUDED.tokens, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at`,
		b.TeamID, b.UserID, string(b.Period), b.Tokens, b.SetBy, b.SetAt.UTC())
}

// DeleteBudget implements [usage.Budgets].
func (s *UsageStore) DeleteBudget(ctx context.Context, teamID, userID string, period usage.Period) error {
	return execOne(ctx, s.db, "pgstore.UsageStore.DeleteBudget", askbi.Errorf(askbi.NotFound, "budget not found"),
		`DELETE FROM usage_budgets WHERE team_id = $1 AND user_id = $2 AND period = $3`, teamID, userID, string(period))
}

// TeamBudgets implements [usage.Budgets].
func (s *UsageStore) TeamBudgets(ctx context.Context, teamID string) ([]usage.Budget, error) {
	type row struct {
		TeamID string    `db:"team_id"`
		UserID string    `db:"user_id"`
		Period string    `db:"period"`
		Tokens int64     `db:"tokens"`
		SetBy  string    `db:"set_by"`
		SetAt  time.Time `db:"set_at"`
	}
	out, err := selectRows(ctx, s.db, "pgstore.UsageStore.TeamBudgets", func(r row) usage.Budget {
		return usage.Budget{TeamID: r.TeamID, UserID: r.UserID, Period: usage.Period(r.Period), Tokens: r.Tokens, SetBy: r.SetBy, SetAt: r.SetAt.UTC()}
	}, `SELECT team_id, user_id, period, tokens, set_by, set_at FROM usage_budgets WHERE team_id = $1`, teamID)
	if err != nil {
		return nil, err
	}
	usage.SortBudgets(out)
	return out, nil
}
