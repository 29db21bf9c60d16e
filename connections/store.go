package connections

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/seal"
)

// Store keeps connections and their tools. Every change to a connection,
// its tools and their approvals goes through Update, which holds the
// connection's lock (a row lock in a database) from its read to its
// write, so concurrent edits, approvals and discovery merges never
// overwrite each other, also across processes sharing the store.
// Update's function does no network I/O: tools are listed and tokens
// renewed before the lock is taken, and the lock is held for the write
// alone (one refresh at a time is package signin's lease, not the
// lock). While it runs only that connection waits: Get and List answer
// what was stored before, and other connections' Updates go on.
// Implementations must be safe for concurrent use; [connectionstest.Run]
// proves one.
type Store interface {
	// Create stores a new connection. Conflict when its ID exists or its
	// team has a connection of the same name (case-insensitive).
	Create(ctx context.Context, s State) error
	// Get returns one connection with its tools, or NotFound.
	Get(ctx context.Context, id string) (State, error)
	// List returns the connections of team teamID (every team's for ""),
	// with their tools, by name then ID.
	List(ctx context.Context, teamID string) ([]State, error)
	// Update reads connection id under its lock, lets fn change it, and
	// writes the result in the same transaction. fn must not call the
	// Store. An error from fn is returned and nothing is written. fn may
	// not change ID, TeamID or CreatedAt (they are kept as stored).
	// NotFound for an unknown id; Conflict when the new name is taken in
	// the team.
	Update(ctx context.Context, id string, fn func(*State) error) (State, error)
	// Delete removes a connection and its tools. NotFound when unknown.
	Delete(ctx context.Context, id string) error
}

// MemoryStore is an in-memory Store for tests and the embedded default.
// Each connection has a lock of its own, held by Update and Delete; one
// mutex guards the map only for the moment of a read or a write. It is
// safe for concurrent use and returns copies.
type MemoryStore struct {
	mu    sync.Mutex
	conns map[string]State
	rows  map[string]*rowLock
}

// rowLock is one connection's lock, kept while anyone holds or waits
// for it.
type rowLock struct {
	mu    sync.Mutex
	users int
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{conns: map[string]State{}, rows: map[string]*rowLock{}}
}

// lockRow takes connection id's lock and returns its release.
func (m *MemoryStore) lockRow(id string) func() {
	m.mu.Lock()
	l := m.rows[id]
	if l == nil {
		l = &rowLock{}
		m.rows[id] = l
	}
	l.users++
	m.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		m.mu.Lock()
		if l.users--; l.users == 0 {
			delete(m.rows, id)
		}
		m.mu.Unlock()
	}
}

var _ Store = (*MemoryStore)(nil)

func errNotFound() error { return askbi.Errorf(askbi.NotFound, "connection not found") }

func errNameTaken() error {
	return askbi.Errorf(askbi.Conflict, "name: the team already has a connection with this name")
}

func (m *MemoryStore) nameTaken(teamID, name, except string) bool {
	for id, s := range m.conns {
		if id != except && s.TeamID == teamID && strings.EqualFold(s.Name, name) {
			return true
		}
	}
	return false
}

// Create implements Store.
func (m *MemoryStore) Create(_ context.Context, s State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.conns[s.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "connection already exists")
	}
	if m.nameTaken(s.TeamID, s.Name, "") {
		return errNameTaken()
	}
	m.conns[s.ID] = cloneState(s)
	return nil
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, id string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.conns[id]
	if !ok {
		return State{}, errNotFound()
	}
	return cloneState(s), nil
}

// List implements Store.
func (m *MemoryStore) List(_ context.Context, teamID string) ([]State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []State{}
	for _, s := range m.conns {
		if teamID == "" || s.TeamID == teamID {
			out = append(out, cloneState(s))
		}
	}
	slices.SortFunc(out, func(a, b State) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Update implements Store. fn runs under the connection's lock only, so
// a slow fn holds up no other connection.
func (m *MemoryStore) Update(_ context.Context, id string, fn func(*State) error) (State, error) {
	defer m.lockRow(id)()
	m.mu.Lock()
	cur, ok := m.conns[id]
	m.mu.Unlock()
	if !ok {
		return State{}, errNotFound()
	}
	next := cloneState(cur)
	if err := fn(&next); err != nil {
		return State{}, err
	}
	next.ID, next.TeamID, next.CreatedAt = cur.ID, cur.TeamID, cur.CreatedAt
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nameTaken(next.TeamID, next.Name, id) {
		return State{}, errNameTaken()
	}
	m.conns[id] = cloneState(next)
	return next, nil
}

// Delete implements Store. It waits for the connection's Update, as a
// database's DELETE waits for the row lock.
func (m *MemoryStore) Delete(_ context.Context, id string) error {
	defer m.lockRow(id)()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.conns[id]; !ok {
		return errNotFound()
	}
	delete(m.conns, id)
	return nil
}

// cloneState deep-copies s through JSON of its parts, so no caller shares
// a slice or pointer with the store.
func cloneState(s State) State {
	out := s
	out.Token = seal.Box{KeyID: s.Token.KeyID, Nonce: slices.Clone(s.Token.Nonce), Ciphertext: slices.Clone(s.Token.Ciphertext)}
	if s.Discovery.Error != nil {
		e := *s.Discovery.Error
		out.Discovery.Error = &e
	}
	out.SignIn = cloneSignIn(s.SignIn)
	out.Tools = make([]Tool, len(s.Tools))
	for i, t := range s.Tools {
		out.Tools[i] = cloneTool(t)
	}
	return out
}

func cloneTool(t Tool) Tool {
	t.InputSchema = slices.Clone(t.InputSchema)
	cp := func(b *bool) *bool {
		if b == nil {
			return nil
		}
		v := *b
		return &v
	}
	t.Hints = Hints{ReadOnly: cp(t.Hints.ReadOnly), Destructive: cp(t.Hints.Destructive), Idempotent: cp(t.Hints.Idempotent), OpenWorld: cp(t.Hints.OpenWorld)}
	return t
}

func cloneSignIn(si *SignIn) *SignIn {
	if si == nil {
		return nil
	}
	c := *si
	c.Scopes, c.StepUp = slices.Clone(si.Scopes), slices.Clone(si.StepUp)
	if si.Error != nil {
		e := *si.Error
		c.Error = &e
	}
	return &c
}
