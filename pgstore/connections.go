package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/seal"
)

// ConnectionStore is a [connections.Store] in PostgreSQL. Update holds the
// connection row's lock (SELECT ... FOR UPDATE) from its read to its
// write, in one transaction, so of concurrent updates of one connection,
// across processes too, each sees the one before.
type ConnectionStore struct {
	db *sqlx.DB
}

// NewConnectionStore returns a [ConnectionStore] on a migrated database.
func NewConnectionStore(db *sqlx.DB) *ConnectionStore { return &ConnectionStore{db: db} }

var _ connections.Store = (*ConnectionStore)(nil)

const connColumns = `id, team_id, name, url, auth, has_token, token_key_id, token_nonce, token_ciphertext, active,
	tool_focus, discovery, version, created_at, updated_at, provider, setup_conversation, sign_in`

type connRow struct {
	ID              string    `db:"id"`
	TeamID          string    `db:"team_id"`
	Name            string    `db:"name"`
	URL             string    `db:"url"`
	Auth            string    `db:"auth"`
	HasToken        bool      `db:"has_token"`
	TokenKeyID      string    `db:"token_key_id"`
	TokenNonce      []byte    `db:"token_nonce"`
	TokenCiphertext []byte    `db:"token_ciphertext"`
	Active          bool      `db:"active"`
	ToolFocus       string    `db:"tool_focus"`
	Discovery       []byte    `db:"discovery"`
	Version         int64     `db:"version"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
	Provider        string    `db:"provider"`
	SetupConv       string    `db:"setup_conversation"`
	SignIn          []byte    `db:"sign_in"`
}

func (r connRow) state() (connections.State, error) {
	st := connections.State{Record: connections.Record{
		Connection: connections.Connection{ID: r.ID, TeamID: r.TeamID, Name: r.Name, URL: r.URL, Auth: connections.Auth(r.Auth),
			HasToken: r.HasToken, Active: r.Active, ToolFocus: r.ToolFocus, Version: r.Version,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()},
		Token: seal.Box{KeyID: r.TokenKeyID, Nonce: r.TokenNonce, Ciphertext: r.TokenCiphertext}, SetupConversation: r.SetupConv}}
	st.Provider = r.Provider
	if err := json.Unmarshal(r.Discovery, &st.Discovery); err != nil {
		return st, err
	}
	if len(r.SignIn) > 0 && string(r.SignIn) != "null" {
		var si connections.SignIn
		if err := json.Unmarshal(r.SignIn, &si); err != nil {
			return st, err
		}
		st.SignIn = normalizeSignIn(&si)
	}
	st.Discovery.At = st.Discovery.At.UTC()
	if e := st.Discovery.Error; e != nil {
		e.At = e.At.UTC()
	}
	return st, nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func connArgs(st connections.State) ([]any, error) {
	disc, err := json.Marshal(st.Discovery)
	if err != nil {
		return nil, err
	}
	var signIn any
	if st.SignIn != nil {
		b, err := json.Marshal(st.SignIn)
		if err != nil {
			return nil, err
		}
		signIn = string(b)
	}
	return []any{st.ID, st.TeamID, st.Name, st.URL, string(st.Auth), st.HasToken, st.Token.KeyID, nilIfEmpty(st.Token.Nonce),
		nilIfEmpty(st.Token.Ciphertext), st.Active, st.ToolFocus, string(disc), st.Version, st.CreatedAt, st.UpdatedAt,
		st.Provider, st.SetupConversation, signIn}, nil
}

func errConnNotFound() error { return askbi.Errorf(askbi.NotFound, "connection not found") }

func errConnName() error {
	return askbi.Errorf(askbi.Conflict, "name: the team already has a connection with this name")
}

// Create implements [connections.Store].
func (s *ConnectionStore) Create(ctx context.Context, st connections.State) error {
	const op = "pgstore.ConnectionStore.Create"
	args, err := connArgs(st)
	if err != nil {
		return internal(op, err)
	}
	return Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO mcp_connections (`+connColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`, args...)
		switch c, taken := uniqueViolation(err); {
		case taken && c == "mcp_connections_pkey":
			return askbi.Errorf(askbi.Conflict, "connection already exists")
		case taken:
			return errConnName()
		case err != nil:
			return internal(op, err)
		}
		return writeTools(ctx, tx, st.ID, st.Tools)
	})
}

// writeTools replaces the tools of connection id, in order.
func writeTools(ctx context.Context, tx *sqlx.Tx, id string, tools []connections.Tool) error {
	const op = "pgstore.ConnectionStore.writeTools"
	if _, err := tx.ExecContext(ctx, `DELETE FROM mcp_tools WHERE connection_id = $1`, id); err != nil {
		return internal(op, err)
	}
	// Batches keep each statement well under PostgreSQL's 65,535
	// parameters whatever the tool count.
	const batch = 500
	for from := 0; from < len(tools); from += batch {
		part := tools[from:min(from+batch, len(tools))]
		var q strings.Builder
		q.WriteString(`INSERT INTO mcp_tools (connection_id, name, position, allowed, doc) VALUES `)
		args := make([]any, 0, 5*len(part))
		for i, t := range part {
			doc, err := json.Marshal(t)
			if err != nil {
				return internal(op, err)
			}
			if i > 0 {
				q.WriteByte(',')
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5)
			args = append(args, id, t.Name, from+i, t.Access.Allowed, string(doc))
		}
		if err := write(ctx, tx, op, askbi.Errorf(askbi.Conflict, "a tool is listed twice"), q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

type queryer interface {
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// readTools returns the tools of the given connections, by connection.
func readTools(ctx context.Context, db queryer, ids []string) (map[string][]connections.Tool, error) {
	var rows []struct {
		ConnectionID string `db:"connection_id"`
		Doc          []byte `db:"doc"`
	}
	if err := db.SelectContext(ctx, &rows, `SELECT connection_id, doc FROM mcp_tools WHERE connection_id = ANY($1)
		ORDER BY connection_id, position`, pq.Array(ids)); err != nil {
		return nil, err
	}
	out := map[string][]connections.Tool{}
	for _, r := range rows {
		var t connections.Tool
		if err := json.Unmarshal(r.Doc, &t); err != nil {
			return nil, err
		}
		t.Access.ApprovedAt = t.Access.ApprovedAt.UTC()
		out[r.ConnectionID] = append(out[r.ConnectionID], t)
	}
	return out, nil
}

func (s *ConnectionStore) load(ctx context.Context, db interface {
	queryer
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}, id string, lock bool) (connections.State, error) {
	q := `SELECT ` + connColumns + ` FROM mcp_connections WHERE id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	var r connRow
	err := db.GetContext(ctx, &r, q, id)
	if errors.Is(err, sql.ErrNoRows) {
		return connections.State{}, errConnNotFound()
	}
	if err != nil {
		return connections.State{}, err
	}
	st, err := r.state()
	if err != nil {
		return st, err
	}
	tools, err := readTools(ctx, db, []string{id})
	if err != nil {
		return st, err
	}
	st.Tools = orNoTools(tools[id])
	return st, nil
}

func orNoTools(t []connections.Tool) []connections.Tool {
	if t == nil {
		return []connections.Tool{}
	}
	return t
}

// Get implements [connections.Store].
func (s *ConnectionStore) Get(ctx context.Context, id string) (connections.State, error) {
	st, err := s.load(ctx, s.db, id, false)
	if err != nil && askbi.ErrorCode(err) != askbi.NotFound {
		return st, internal("pgstore.ConnectionStore.Get", err)
	}
	return st, err
}

// List implements [connections.Store].
func (s *ConnectionStore) List(ctx context.Context, teamID string) ([]connections.State, error) {
	const op = "pgstore.ConnectionStore.List"
	var rows []connRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+connColumns+` FROM mcp_connections
		WHERE $1 = '' OR team_id = $1 ORDER BY name COLLATE "C", id`, teamID)
	if err != nil {
		return nil, internal(op, err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	tools, err := readTools(ctx, s.db, ids)
	if err != nil {
		return nil, internal(op, err)
	}
	out := make([]connections.State, 0, len(rows))
	for _, r := range rows {
		st, err := r.state()
		if err != nil {
			return nil, internal(op, err)
		}
		st.Tools = orNoTools(tools[r.ID])
		out = append(out, st)
	}
	return out, nil
}

// Update implements [connections.Store].
func (s *ConnectionStore) Update(ctx context.Context, id string, fn func(*connections.State) error) (connections.State, error) {
	const op = "pgstore.ConnectionStore.Update"
	var out connections.State
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		cur, err := s.load(ctx, tx, id, true)
		if err != nil {
			if askbi.ErrorCode(err) == askbi.NotFound {
				return err
			}
			return internal(op, err)
		}
		next := cur
		next.Tools = append([]connections.Tool(nil), cur.Tools...)
		if err := fn(&next); err != nil {
			return err
		}
		next.ID, next.TeamID, next.CreatedAt = cur.ID, cur.TeamID, cur.CreatedAt
		args, err := connArgs(next)
		if err != nil {
			return internal(op, err)
		}
		if err := write(ctx, tx, op, errConnName(), `UPDATE mcp_connections SET name = $3, url = $4, auth = $5, has_token = $6,
			token_key_id = $7, token_nonce = $8, token_ciphertext = $9, active = $10, tool_focus = $11, discovery = $12,
			version = $13, updated_at = $15, provider = $16, setup_conversation = $17, sign_in = $18
			WHERE id = $1 AND team_id = $2 AND created_at = $14`, args...); err != nil {
			return err
		}
		if err := writeTools(ctx, tx, id, next.Tools); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return connections.State{}, err
	}
	// What was written, read back as Get reads it.
	out.Tools = orNoTools(out.Tools)
	return normalize(out), nil
}

// normalize gives a state the form reading it back would: times in UTC,
// empty byte slices nil, tools as JSON decodes them.
func normalize(st connections.State) connections.State {
	st.CreatedAt, st.UpdatedAt, st.Discovery.At = st.CreatedAt.UTC(), st.UpdatedAt.UTC(), st.Discovery.At.UTC()
	st.Token.Nonce, st.Token.Ciphertext = nilIfEmpty(st.Token.Nonce), nilIfEmpty(st.Token.Ciphertext)
	if e := st.Discovery.Error; e != nil {
		c := *e
		c.At = c.At.UTC()
		st.Discovery.Error = &c
	}
	if st.SignIn != nil {
		b, _ := json.Marshal(st.SignIn)
		var si connections.SignIn
		json.Unmarshal(b, &si)
		st.SignIn = normalizeSignIn(&si)
	}
	for i, t := range st.Tools {
		b, _ := json.Marshal(t)
		var back connections.Tool
		json.Unmarshal(b, &back)
		back.Access.ApprovedAt = back.Access.ApprovedAt.UTC()
		st.Tools[i] = back
	}
	return st
}

// Delete implements [connections.Store].
func (s *ConnectionStore) Delete(ctx context.Context, id string) error {
	return execOne(ctx, s.db, "pgstore.ConnectionStore.Delete", errConnNotFound(), `DELETE FROM mcp_connections WHERE id = $1`, id)
}

func normalizeSignIn(si *connections.SignIn) *connections.SignIn {
	si.At = si.At.UTC()
	if si.Error != nil {
		si.Error.At = si.Error.At.UTC()
	}
	return si
}

// FlowStore is a [signin.FlowStore] in PostgreSQL: TakeFlow is one
// DELETE ... RETURNING, so a flow is taken once across processes.
type FlowStore struct {
	db *sqlx.DB
}

// NewFlowStore returns a [FlowStore] on a migrated database.
func NewFlowStore(db *sqlx.DB) *FlowStore { return &FlowStore{db: db} }

var _ signin.FlowStore = (*FlowStore)(nil)

const flowColumns = `id, connection_id, team_id, user_id, conversation_id, secret_key_id, secret_nonce, secret_ciphertext, created_at, expires_at`

type flowRow struct {
	ID             string    `db:"id"`
	ConnectionID   string    `db:"connection_id"`
	TeamID         string    `db:"team_id"`
	UserID         string    `db:"user_id"`
	ConversationID string    `db:"conversation_id"`
	KeyID          string    `db:"secret_key_id"`
	Nonce          []byte    `db:"secret_nonce"`
	Ciphertext     []byte    `db:"secret_ciphertext"`
	CreatedAt      time.Time `db:"created_at"`
	ExpiresAt      time.Time `db:"expires_at"`
}

// CreateFlow implements [signin.FlowStore].
func (s *FlowStore) CreateFlow(ctx context.Context, f signin.Flow) error {
	const op = "pgstore.FlowStore.CreateFlow"
	return write(ctx, s.db, op, askbi.Errorf(askbi.Conflict, "flow already exists"), `INSERT INTO mcp_oauth_flows (`+flowColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, f.ID, f.ConnectionID, f.TeamID, f.UserID, f.ConversationID,
		f.Secret.KeyID, f.Secret.Nonce, f.Secret.Ciphertext, f.CreatedAt, f.ExpiresAt)
}

// TakeFlow implements [signin.FlowStore].
func (s *FlowStore) TakeFlow(ctx context.Context, id string) (signin.Flow, error) {
	var r flowRow
	err := s.db.GetContext(ctx, &r, `DELETE FROM mcp_oauth_flows WHERE id = $1 RETURNING `+flowColumns, id)
	if errors.Is(err, sql.ErrNoRows) {
		return signin.Flow{}, askbi.Errorf(askbi.NotFound, "flow not found")
	}
	if err != nil {
		return signin.Flow{}, internal("pgstore.FlowStore.TakeFlow", err)
	}
	return signin.Flow{ID: r.ID, ConnectionID: r.ConnectionID, TeamID: r.TeamID, UserID: r.UserID, ConversationID: r.ConversationID,
		Secret: seal.Box{KeyID: r.KeyID, Nonce: r.Nonce, Ciphertext: r.Ciphertext}, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC()}, nil
}

// PurgeFlows implements [signin.FlowStore].
func (s *FlowStore) PurgeFlows(ctx context.Context, t time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_oauth_flows WHERE expires_at < $1`, t)
	if err != nil {
		return 0, internal("pgstore.FlowStore.PurgeFlows", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
