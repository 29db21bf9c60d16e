package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// OAuthStore is an [oauth.Store] in PostgreSQL (migration 0005). Codes and
// tokens are rows keyed by the SHA-256 of their signature; single use is
// one conditional UPDATE, so it holds across processes.
type OAuthStore struct {
	db *sqlx.DB
}

// NewOAuthStore returns an [OAuthStore] on a migrated database.
func NewOAuthStore(db *sqlx.DB) *OAuthStore { return &OAuthStore{db: db} }

var _ oauth.Store = (*OAuthStore)(nil)

func scopeStrings(scopes []access.Scope) pq.StringArray {
	out := make(pq.StringArray, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

func scopesFrom(a pq.StringArray) []access.Scope {
	var out []access.Scope
	for _, s := range a {
		out = append(out, access.Scope(s))
	}
	return out
}

func orEmpty(a []string) pq.StringArray {
	if a == nil {
		return pq.StringArray{}
	}
	return a
}

// CreateClient implements [oauth.Store].
func (s *OAuthStore) CreateClient(ctx context.Context, c oauth.Client) error {
	return write(ctx, s.db, "pgstore.OAuthStore.CreateClient", askbi.Errorf(askbi.Conflict, "client already exists"),
		`INSERT INTO oauth_clients (id, secret_hash, auth_method, name, redirect_uris, scopes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.ID, c.SecretHash, c.AuthMethod, c.Name, orEmpty(c.RedirectURIs), scopeStrings(c.Scopes), c.CreatedAt)
}

// Client implements [oauth.Store].
func (s *OAuthStore) Client(ctx context.Context, id string) (oauth.Client, error) {
	var r struct {
		ID           string         `db:"id"`
		SecretHash   []byte         `db:"secret_hash"`
		AuthMethod   string         `db:"auth_method"`
		Name         string         `db:"name"`
		RedirectURIs pq.StringArray `db:"redirect_uris"`
		Scopes       pq.StringArray `db:"scopes"`
		CreatedAt    time.Time      `db:"created_at"`
	}
	err := s.db.GetContext(ctx, &r, `SELECT id, secret_hash, auth_method, name, redirect_uris, scopes, created_at FROM oauth_clients WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return oauth.Client{}, askbi.Errorf(askbi.NotFound, "client not found")
	}
	if err != nil {
		return oauth.Client{}, internal("pgstore.OAuthStore.Client", err)
	}
	return oauth.Client{ID: r.ID, SecretHash: r.SecretHash, AuthMethod: r.AuthMethod, Name: r.Name,
		RedirectURIs: r.RedirectURIs, Scopes: scopesFrom(r.Scopes), CreatedAt: r.CreatedAt.UTC()}, nil
}

// CreateRequest implements [oauth.Store].
func (s *OAuthStore) CreateRequest(ctx context.Context, r oauth.Request) error {
	return write(ctx, s.db, "pgstore.OAuthStore.CreateRequest", askbi.Errorf(askbi.Conflict, "request already exists"),
		`INSERT INTO oauth_requests (id, client_id, user_id, csrf_hash, query, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.ID, r.ClientID, r.UserID, orBytes(r.CSRFHash), r.Query, r.ExpiresAt)
}

func orBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// TakeRequest implements [oauth.Store]: one DELETE ... RETURNING, so two
// takes cannot both succeed.
func (s *OAuthStore) TakeRequest(ctx context.Context, id string, now time.Time) (oauth.Request, error) {
	var r struct {
		ID        string    `db:"id"`
		ClientID  string    `db:"client_id"`
		UserID    string    `db:"user_id"`
		CSRFHash  []byte    `db:"csrf_hash"`
		Query     string    `db:"query"`
		ExpiresAt time.Time `db:"expires_at"`
	}
	err := s.db.GetContext(ctx, &r, `DELETE FROM oauth_requests WHERE id = $1 AND expires_at > $2
		RETURNING id, client_id, user_id, csrf_hash, query, expires_at`, id, now)
	if errors.Is(err, sql.ErrNoRows) {
		return oauth.Request{}, askbi.Errorf(askbi.NotFound, "authorization request not found or expired")
	}
	if err != nil {
		return oauth.Request{}, internal("pgstore.OAuthStore.TakeRequest", err)
	}
	return oauth.Request{ID: r.ID, ClientID: r.ClientID, UserID: r.UserID, CSRFHash: r.CSRFHash, Query: r.Query, ExpiresAt: r.ExpiresAt.UTC()}, nil
}

type grantRow struct {
	ID          string         `db:"id"`
	ClientID    string         `db:"client_id"`
	UserID      string         `db:"user_id"`
	TeamID      string         `db:"team_id"`
	Scopes      pq.StringArray `db:"scopes"`
	AllProjects bool           `db:"all_projects"`
	ProjectIDs  pq.StringArray `db:"project_ids"`
	CreatedAt   time.Time      `db:"created_at"`
	RevokedAt   sql.NullTime   `db:"revoked_at"`
}

func (r grantRow) grant() oauth.Grant {
	g := oauth.Grant{ID: r.ID, ClientID: r.ClientID, UserID: r.UserID, TeamID: r.TeamID, Scopes: scopesFrom(r.Scopes),
		CreatedAt: r.CreatedAt.UTC(), RevokedAt: r.RevokedAt.Time.UTC()}
	if r.AllProjects {
		g.Projects = access.AllProjects()
	} else {
		g.Projects = access.ProjectSet(r.ProjectIDs...)
	}
	return g
}

const grantColumns = `id, client_id, user_id, team_id, scopes, all_projects, project_ids, created_at, revoked_at`

// CreateGrant implements [oauth.Store].
func (s *OAuthStore) CreateGrant(ctx context.Context, g oauth.Grant) error {
	ids := g.Projects.IDs
	if g.Projects.All {
		ids = nil
	}
	return write(ctx, s.db, "pgstore.OAuthStore.CreateGrant", askbi.Errorf(askbi.Conflict, "grant already exists"),
		`INSERT INTO oauth_grants (`+grantColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		g.ID, g.ClientID, g.UserID, g.TeamID, scopeStrings(g.Scopes), g.Projects.All, orEmpty(ids), g.CreatedAt, nullTime(g.RevokedAt))
}

// Grant implements [oauth.Store].
func (s *OAuthStore) Grant(ctx context.Context, id string) (oauth.Grant, error) {
	return getRow(ctx, s.db, "pgstore.OAuthStore.Grant", errGrantNotFound(), grantRow.grant,
		`SELECT `+grantColumns+` FROM oauth_grants WHERE id = $1`, id)
}

// Grants implements [oauth.Store].
func (s *OAuthStore) Grants(ctx context.Context, userID string) ([]oauth.Grant, error) {
	return selectRows(ctx, s.db, "pgstore.OAuthStore.Grants", grantRow.grant, `SELECT `+grantColumns+` FROM oauth_grants
		WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id DESC`, userID)
}

// RevokeGrant implements [oauth.Store], in one transaction.
func (s *OAuthStore) RevokeGrant(ctx context.Context, id string, t time.Time) error {
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		if err := execOne(ctx, tx, "pgstore.OAuthStore.RevokeGrant", errGrantNotFound(),
			`UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, t); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE grant_id = $1`, id); err != nil {
			return internal("pgstore.OAuthStore.RevokeGrant", err)
		}
		return nil
	})
	return err
}

// CreateToken implements [oauth.Store].
func (s *OAuthStore) CreateToken(ctx context.Context, t oauth.Token) error {
	return write(ctx, s.db, "pgstore.OAuthStore.CreateToken", askbi.Errorf(askbi.Conflict, "token already exists"),
		`INSERT INTO oauth_tokens (token_hash, kind, grant_id, client_id, scopes, audience, redirect_uri, challenge, challenge_method,
			requested_at, expires_at, used_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		t.Hash, string(t.Kind), t.GrantID, t.ClientID, scopeStrings(t.Scopes), orEmpty(t.Audience), t.RedirectURI, t.Challenge,
		t.ChallengeMethod, t.RequestedAt, t.ExpiresAt, nullTime(t.UsedAt))
}

// Token implements [oauth.Store].
func (s *OAuthStore) Token(ctx context.Context, hash []byte) (oauth.Token, error) {
	var r struct {
		Hash            []byte         `db:"token_hash"`
		Kind            string         `db:"kind"`
		GrantID         string         `db:"grant_id"`
		ClientID        string         `db:"client_id"`
		Scopes          pq.StringArray `db:"scopes"`
		Audience        pq.StringArray `db:"audience"`
		RedirectURI     string         `db:"redirect_uri"`
		Challenge       string         `db:"challenge"`
		ChallengeMethod string         `db:"challenge_method"`
		RequestedAt     time.Time      `db:"requested_at"`
		ExpiresAt       time.Time      `db:"expires_at"`
		UsedAt          sql.NullTime   `db:"used_at"`
	}
	err := s.db.GetContext(ctx, &r, `SELECT token_hash, kind, grant_id, client_id, scopes, audience, redirect_uri, challenge,
		challenge_method, requested_at, expires_at, used_at FROM oauth_tokens WHERE token_hash = $1`, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return oauth.Token{}, errTokenNotFound()
	}
	if err != nil {
		return oauth.Token{}, internal("pgstore.OAuthStore.Token", err)
	}
	return oauth.Token{Hash: r.Hash, Kind: oauth.TokenKind(r.Kind), GrantID: r.GrantID, ClientID: r.ClientID,
		Scopes: scopesFrom(r.Scopes), Audience: r.Audience, RedirectURI: r.RedirectURI, Challenge: r.Challenge,
		ChallengeMethod: r.ChallengeMethod, RequestedAt: r.RequestedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(), UsedAt: r.UsedAt.Time.UTC()}, nil
}

// UseToken implements [oauth.Store]: the UPDATE only matches an unused
// row, so of concurrent uses one wins.
func (s *OAuthStore) UseToken(ctx context.Context, hash []byte, t time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE oauth_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL`, hash, t)
	if err != nil {
		return internal("pgstore.OAuthStore.UseToken", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := s.Token(ctx, hash); err != nil {
		return err
	}
	return askbi.Errorf(askbi.Conflict, "token already used")
}

// DeleteTokens implements [oauth.Store].
func (s *OAuthStore) DeleteTokens(ctx context.Context, grantID string, kind oauth.TokenKind) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE grant_id = $1 AND kind = $2`, grantID, string(kind)); err != nil {
		return internal("pgstore.OAuthStore.DeleteTokens", err)
	}
	return nil
}

// Purge implements [oauth.Store]: the retention step, in one transaction.
func (s *OAuthStore) Purge(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		for _, q := range []string{
			`DELETE FROM oauth_requests WHERE expires_at <= $1`,
			`DELETE FROM oauth_tokens WHERE expires_at <= $1`,
			`DELETE FROM oauth_grants g WHERE (revoked_at IS NOT NULL OR NOT EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = g.id)) AND $1::timestamptz IS NOT NULL`,
		} {
			res, err := tx.ExecContext(ctx, q, now)
			if err != nil {
				return internal("pgstore.OAuthStore.Purge", err)
			}
			k, _ := res.RowsAffected()
			n += int(k)
		}
		return nil
	})
	return n, err
}

func errGrantNotFound() error { return askbi.Errorf(askbi.NotFound, "grant not found") }
func errTokenNotFound() error { return askbi.Errorf(askbi.NotFound, "token not found") }
