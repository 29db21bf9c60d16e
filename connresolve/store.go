package connresolve

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/seal"
)

// Auth is how askbi authenticates to a remote MCP server.
type Auth string

// Auth kinds. An OAuth connection signs in through its server's
// authorization server (StartOAuth, CompleteOAuth) and keeps the tokens
// sealed.
const (
	AuthNone   Auth = "none"
	AuthBearer Auth = "bearer"
	AuthOAuth  Auth = "oauth"
)

// Connection is a team's connection to a remote MCP server (Streamable
// HTTP), as every response shows it: never its token, only HasToken.
type Connection struct {
	ID       string `json:"id"`
	TeamID   string `json:"team_id"`
	Name     string `json:"name"`
	URL      string `json:"url"`
	Auth     Auth   `json:"auth"`
	HasToken bool   `json:"has_token"` // a bearer token, or OAuth tokens of a completed sign-in
	// Provider is the verified provider (package connresolve) the
	// connection was set up for, such as "PostHog"; "" for one set up by
	// hand.
	Provider string `json:"provider,omitempty"`
	// SignIn is where an OAuth connection's sign-in stands; nil for other
	// auth kinds.
	SignIn *SignIn `json:"sign_in,omitempty"`
	// Active is true once a discovery succeeded on the current URL; the
	// catalog shows the connection inactive until then.
	Active bool `json:"active"`
	// ToolFocus is the saved question a list of more than 250 tools is
	// matched against (the user's question, or one the admin typed).
	ToolFocus string    `json:"tool_focus,omitempty"`
	Discovery Discovery `json:"discovery"`
	// Version increases with every change of the connection or its tools.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SignInState is where an OAuth connection's sign-in stands.
type SignInState string

// Sign-in states.
const (
	// SignInNeeded: never signed in, or the tokens stopped working (a
	// failed refresh, a refused token): the connection is inactive until
	// a sign-in completes.
	SignInNeeded SignInState = "needed"
	// SignedIn: the tokens of a completed sign-in are kept, sealed.
	SignedIn SignInState = "signed_in"
)

// SignIn is an OAuth connection's sign-in, as shown: no token, no client
// secret.
type SignIn struct {
	State SignInState `json:"state"`
	// Issuer is the authorization server of the current tokens.
	Issuer string `json:"issuer,omitempty"`
	// Scopes are the scopes asked for (and granted, where the server
	// says).
	Scopes []string  `json:"scopes,omitempty"`
	At     time.Time `json:"at,omitzero"` // the last completed sign-in
	// StepUp are scopes the server asked for that the grant lacks: the
	// next sign-in requests them too (never silently).
	StepUp []string `json:"step_up,omitempty"`
	// Error is why the last sign-in, start or refresh failed.
	Error *ErrorInfo `json:"error,omitempty"`
}

// Discovery is what the last tool discovery found.
type Discovery struct {
	At time.Time `json:"at,omitzero"`
	// Tools counts the usable tools the server listed, Shown those in the
	// selection (all of them up to 250), Omitted the rest. Tool focus
	// applies only when Omitted > 0.
	Tools   int `json:"tools"`
	Shown   int `json:"shown"`
	Omitted int `json:"omitted"`
	// Excluded counts the tools that failed the schema safety checks; it
	// never triggers Tool focus.
	Excluded int `json:"excluded"`
	// LeftOut counts the tools the server listed past the most a
	// discovery keeps (Options.MaxTools): not kept, not shown; the kept
	// ones are those approved before and the best matches of Tool focus.
	// Unread is set when the list ran on past the pages or bytes a
	// discovery reads (Options.MaxPages, MaxListBytes): how many more
	// tools there are is not known. A large count alone never fails a
	// discovery.
	LeftOut int  `json:"left_out"`
	Unread  bool `json:"unread,omitempty"`
	// Stale is set when the server said its tool list changed
	// (notifications/tools/list_changed) since this listing: the next
	// call lists the tools again, whatever the listing's age.
	Stale bool `json:"stale,omitempty"`
	// Error is the last attempt's failure, when it failed; the tool list
	// and approvals from before stay.
	Error *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo is a failure as it is kept and shown: its code and safe
// message.
type ErrorInfo struct {
	Code    askbi.Code `json:"code"`
	Message string     `json:"message"`
	At      time.Time  `json:"at"`
}

// Hints are a remote tool's MCP annotations, untrusted: nil is missing.
type Hints struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"open_world,omitempty"`
}

// Tool is one discovered remote tool with its approval. Everything but
// Access comes from the remote server and is untrusted.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"` // capped at 1,000 characters
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Hints       Hints           `json:"hints"`
	// Class is dataexec.ClassFromAnnotations of Hints: missing means
	// unknown, treated as destructive.
	Class dataexec.Class `json:"class"`
	// SchemaHash and DescriptionHash are SHA-256 (hex) of the canonical
	// input schema and of the description.
	SchemaHash      string `json:"schema_hash"`
	DescriptionHash string `json:"description_hash"`
	// Present is false when the last discovery no longer listed the tool;
	// it is kept, with its approval, in case it comes back.
	Present bool `json:"present"`
	// Selected is true when the tool is in the shown selection.
	Selected bool `json:"selected"`
	// Excluded says why the schema safety checks excluded the tool; ""
	// when it passed. An excluded tool keeps no approval.
	Excluded string `json:"excluded,omitempty"`
	Access   Access `json:"access"`
}

// Access is an admin's decision on one tool: one switch that enables it
// for Ask and for datasets alike, and what was approved.
type Access struct {
	Allowed bool `json:"allowed"`
	// What the approval saw: the class, schema and description.
	ApprovedClass           dataexec.Class `json:"approved_class,omitempty"`
	ApprovedSchemaHash      string         `json:"approved_schema_hash,omitempty"`
	ApprovedDescriptionHash string         `json:"approved_description_hash,omitempty"`
	ApprovedBy              string         `json:"approved_by,omitempty"`
	ApprovedAt              time.Time      `json:"approved_at,omitzero"`
	// Reapprove says why a change that widens what the tool may do
	// (annotations now mutating, destructive or unknown; a changed input
	// schema) turned the approval off; "" when none did.
	Reapprove string `json:"reapprove,omitempty"`
	// DescriptionChanged is set when the description changed since the
	// approval: shown, never blocking.
	DescriptionChanged bool `json:"description_changed,omitempty"`
}

// ToolState is where a tool stands, as the connection page shows it.
type ToolState string

// Tool states.
const (
	ToolOff       ToolState = "off"       // not approved (new tools start here)
	ToolAllowed   ToolState = "allowed"   // usable by Ask and datasets
	ToolBlocked   ToolState = "blocked"   // marked destructive: cannot be allowed
	ToolReapprove ToolState = "reapprove" // a widening change turned it off
	ToolExcluded  ToolState = "excluded"  // failed the schema safety checks
	ToolRemoved   ToolState = "removed"   // no longer listed by the server
)

// State returns where t stands.
func (t Tool) State() ToolState {
	switch {
	case t.Excluded != "":
		return ToolExcluded
	case !t.Present:
		return ToolRemoved
	case t.Class == dataexec.ClassDestructive:
		return ToolBlocked
	case t.Access.Reapprove != "":
		return ToolReapprove
	case t.Access.Allowed:
		return ToolAllowed
	}
	return ToolOff
}

// Usable reports whether Ask and datasets may use t now.
func (t Tool) Usable() bool { return t.State() == ToolAllowed }

// Fingerprint identifies what t may do: its input schema and class. An
// approval of a remote call binds it, so a call approved before a
// widening change cannot run after it.
func (t Tool) Fingerprint() string {
	return hashHex([]byte(t.SchemaHash + "|" + string(t.Class)))[:32]
}

// Record is a connection as stored: the Connection and its sealed token.
type Record struct {
	Connection
	// Token is the bearer token, or for OAuth the sign-in (client
	// registration, tokens), sealed with seal.Seal (KeyID "" when none),
	// bound to the team and connection ID.
	Token seal.Box
	// SetupConversation is the Ask conversation the connection was set up
	// from, if any: repeated "Connect" clicks there reuse it.
	SetupConversation string
}

// State is a connection with its discovered tools, in discovery order.
type State struct {
	Record
	Tools []Tool
}

// Tool returns the tool called name.
func (s *State) Tool(name string) (*Tool, bool) {
	i := slices.IndexFunc(s.Tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return nil, false
	}
	return &s.Tools[i], true
}

// Store keeps connections and their tools. Every change to a connection,
// its tools and their approvals goes through Update, which holds the
// connection's lock (a row lock in a database) from its read to its
// write, so concurrent edits, approvals and discovery merges never
// overwrite each other, also across processes sharing the store.
// Update's function does no network I/O: the service lists tools and
// renews tokens before it takes the lock, and holds the lock for the
// write alone (one refresh at a time is OAuthOptions.Leases' job, not
// the lock's). While it runs only that connection waits: Get and List
// answer what was stored before, and other connections' Updates go on.
// Implementations must be safe for concurrent use; connresolvetest.Run
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
