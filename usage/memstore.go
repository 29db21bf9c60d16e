package usage

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// MemoryOptions configures a MemoryStore. The zero value is valid.
type MemoryOptions struct {
	// MaxEntries and MaxCharges are how many audit entries and charges
	// it keeps: the newest. Default 100,000 each.
	MaxEntries, MaxCharges int
}

// MemoryStore is the in-memory [Ledger] and [Budgets]: one process's,
// for tests, the embedded default and a host without a database. It
// keeps the newest entries and charges (MemoryOptions). It is safe for
// concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	entries ring[access.AuditEntry]
	charges ring[Charge]
	budgets map[budgetKey]Budget
}

type budgetKey struct {
	team, user string
	period     Period
}

// NewMemoryStore returns an empty store. o may be nil.
func NewMemoryStore(o *MemoryOptions) *MemoryStore {
	var opts MemoryOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100000
	}
	if opts.MaxCharges <= 0 {
		opts.MaxCharges = 100000
	}
	return &MemoryStore{entries: ring[access.AuditEntry]{max: opts.MaxEntries}, charges: ring[Charge]{max: opts.MaxCharges},
		budgets: map[budgetKey]Budget{}}
}

// ring keeps the newest max items.
type ring[T any] struct {
	max   int
	items []T
	next  int // where the next item goes once full: the oldest
}

func (r *ring[T]) add(v T) {
	if len(r.items) < r.max {
		r.items = append(r.items, v)
		return
	}
	r.items[r.next] = v
	r.next = (r.next + 1) % r.max
}

// Record implements [Ledger] (and [access.AuditSink]). It never fails.
func (m *MemoryStore) Record(_ context.Context, e access.AuditEntry) error {
	e.Details = maps.Clone(e.Details)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries.add(e)
	return nil
}

// Charge implements [Ledger]. It never fails.
func (m *MemoryStore) Charge(_ context.Context, c Charge) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.charges.add(c)
	return nil
}

// Spent implements [Ledger].
func (m *MemoryStore) Spent(_ context.Context, teamID, userID string, since time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, c := range m.charges.items {
		if c.TeamID == teamID && (userID == "" || c.UserID == userID) && !c.Time.Before(since) {
			n += c.Tokens.Total()
		}
	}
	return n, nil
}

// Report implements [Ledger].
func (m *MemoryStore) Report(_ context.Context, teamID string, q Query) (Report, error) {
	in := func(team, user string, t time.Time) bool {
		return team == teamID && (q.UserID == "" || user == q.UserID) && !t.Before(q.From) && t.Before(q.To)
	}
	m.mu.Lock()
	var entries []access.AuditEntry
	for _, e := range m.entries.items {
		if in(e.TeamID, e.UserID, e.Time) {
			entries = append(entries, e)
		}
	}
	var charges []Charge
	for _, c := range m.charges.items {
		if in(c.TeamID, c.UserID, c.Time) {
			charges = append(charges, c)
		}
	}
	m.mu.Unlock()
	return summarize(teamID, q, entries, charges), nil
}

// summarize builds the report of entries and charges, those of teamID
// in q, as [Ledger.Report] documents it.
func summarize(teamID string, q Query, entries []access.AuditEntry, charges []Charge) Report {
	r := Report{TeamID: teamID, From: q.From, To: q.To, UserID: q.UserID}
	users := map[string]*UserRow{}
	user := func(id string, t time.Time) *UserRow {
		u := users[id]
		if u == nil {
			u = &UserRow{UserID: id}
			users[id] = u
		}
		if t.After(u.LastActive) {
			u.LastActive = t
		}
		return u
	}
	type toolKey struct{ surface, tool string }
	tools := map[toolKey]*ToolRow{}
	toolTimes := map[toolKey][]float64{}
	type clientKey struct {
		user string
		auth access.AuthMethod
		cred string
	}
	clients := map[clientKey]*ClientRow{}
	clientSeen := map[clientKey]time.Time{} // the latest initialize's time
	conns := map[string]*ConnectionRow{}
	connTimes := map[string][]float64{}
	connSeen := map[string]time.Time{}
	later := func(t, seen time.Time, name, have string) bool {
		return t.After(seen) || t.Equal(seen) && name > have
	}
	for _, e := range entries {
		failed := e.Outcome != access.OutcomeOK
		switch e.Action {
		case access.ActionChatTurn:
			u := user(e.UserID, e.Time)
			u.ChatTurns++
			r.Total.ChatTurns++
			if failed {
				u.ChatErrors++
			}
		case access.ActionMCPToolCall, access.ActionChatToolCall:
			k := toolKey{"chat", e.Details["tool"]}
			if e.Action == access.ActionMCPToolCall {
				k.surface = "mcp"
				u := user(e.UserID, e.Time)
				u.MCPCalls++
				r.Total.MCPCalls++
				if failed {
					u.MCPErrors++
				}
				ck := clientKey{e.UserID, e.Auth, e.CredentialID}
				c := clients[ck]
				if c == nil {
					c = &ClientRow{UserID: e.UserID, Auth: e.Auth, CredentialID: e.CredentialID}
					clients[ck] = c
				}
				c.Calls++
				if failed {
					c.Errors++
				}
				if e.Time.After(c.LastUsed) {
					c.LastUsed = e.Time
				}
				if name := e.Details["client"]; name != "" && later(e.Time, clientSeen[ck], name, c.Client) {
					c.Client, clientSeen[ck] = name, e.Time
				}
			}
			t := tools[k]
			if t == nil {
				t = &ToolRow{Surface: k.surface, Tool: k.tool}
				tools[k] = t
			}
			t.Calls++
			if failed {
				t.Errors++
			}
			toolTimes[k] = append(toolTimes[k], DurationMS(e.Duration))
		case access.ActionMCPInitialize:
			ck := clientKey{e.UserID, e.Auth, e.CredentialID}
			c := clients[ck]
			if c == nil {
				c = &ClientRow{UserID: e.UserID, Auth: e.Auth, CredentialID: e.CredentialID}
				clients[ck] = c
			}
			if e.Time.After(c.LastUsed) {
				c.LastUsed = e.Time
			}
			if name := e.Details["client"]; name != "" && later(e.Time, clientSeen[ck], name, c.Client) {
				c.Client, clientSeen[ck] = name, e.Time
			}
		case access.ActionRemoteCall:
			id := e.Target.ID
			c := conns[id]
			if c == nil {
				c = &ConnectionRow{ConnectionID: id}
				conns[id] = c
			}
			c.Calls++
			if failed {
				c.Errors++
			}
			if e.Time.After(c.LastUsed) {
				c.LastUsed = e.Time
			}
			if name := e.Details["connection"]; later(e.Time, connSeen[id], name, c.Name) {
				c.Name, connSeen[id] = name, e.Time
			}
			connTimes[id] = append(connTimes[id], DurationMS(e.Duration))
		}
	}
	type modelKey struct{ provider, model string }
	models := map[modelKey]*ModelRow{}
	modelCost := map[modelKey]int64{}
	userCost := map[string]int64{}
	var totalCost int64
	for _, c := range charges {
		u := user(c.UserID, c.Time)
		u.ModelCalls++
		u.Tokens.Add(c.Tokens)
		userCost[c.UserID] += c.CostMicros
		k := modelKey{c.Provider, c.Model}
		m := models[k]
		if m == nil {
			m = &ModelRow{Provider: c.Provider, Model: c.Model}
			models[k] = m
		}
		m.Calls++
		m.Tokens.Add(c.Tokens)
		modelCost[k] += c.CostMicros
		r.Total.ModelCalls++
		r.Total.Tokens.Add(c.Tokens)
		totalCost += c.CostMicros
	}
	r.Total.CostUSD = CostUSD(totalCost)
	for id, u := range users {
		u.CostUSD = CostUSD(userCost[id])
		r.Users = append(r.Users, *u)
	}
	for k, t := range tools {
		ms := toolTimes[k]
		slices.Sort(ms)
		t.ErrorRate, t.P50MS, t.P95MS = ErrorRate(t.Errors, t.Calls), Percentile(ms, 0.5), Percentile(ms, 0.95)
		r.Tools = append(r.Tools, *t)
	}
	for k, m := range models {
		m.CostUSD = CostUSD(modelCost[k])
		r.Models = append(r.Models, *m)
	}
	for _, c := range clients {
		r.Clients = append(r.Clients, *c)
	}
	for id, c := range conns {
		ms := connTimes[id]
		slices.Sort(ms)
		c.P50MS, c.P95MS = Percentile(ms, 0.5), Percentile(ms, 0.95)
		r.Connections = append(r.Connections, *c)
	}
	r.Sort()
	return r
}

// SetBudget implements [Budgets].
func (m *MemoryStore) SetBudget(_ context.Context, b Budget) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.budgets[budgetKey{b.TeamID, b.UserID, b.Period}] = b
	return nil
}

// DeleteBudget implements [Budgets].
func (m *MemoryStore) DeleteBudget(_ context.Context, teamID, userID string, period Period) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := budgetKey{teamID, userID, period}
	if _, ok := m.budgets[k]; !ok {
		return askbi.Errorf(askbi.NotFound, "budget not found")
	}
	delete(m.budgets, k)
	return nil
}

// TeamBudgets implements [Budgets].
func (m *MemoryStore) TeamBudgets(_ context.Context, teamID string) ([]Budget, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Budget{}
	for k, b := range m.budgets {
		if k.team == teamID {
			out = append(out, b)
		}
	}
	SortBudgets(out)
	return out, nil
}

// SortBudgets puts budgets in the order [Budgets.TeamBudgets] lists
// them: the team's first, then by user ID, each day before month.
func SortBudgets(bs []Budget) {
	rank := func(p Period) int {
		if p == Day {
			return 0
		}
		return 1
	}
	slices.SortFunc(bs, func(a, b Budget) int {
		if a.UserID != b.UserID {
			if a.UserID < b.UserID {
				return -1
			}
			return 1
		}
		return rank(a.Period) - rank(b.Period)
	})
}
