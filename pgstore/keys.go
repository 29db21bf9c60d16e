package pgstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// KeyStore is an [access.KeyStore] in PostgreSQL. The stored row holds the
// key's SHA-256, never the secret.
type KeyStore struct {
	db *sqlx.DB
}

// NewKeyStore returns a [KeyStore] on a migrated database.
func NewKeyStore(db *sqlx.DB) *KeyStore { return &KeyStore{db: db} }

type keyRow struct {
	ID          string         `db:"id"`
	Prefix      string         `db:"prefix"`
	Hash        []byte         `db:"hash"`
	Name        string         `db:"name"`
	UserID      string         `db:"user_id"`
	TeamID      string         `db:"team_id"`
	Scopes      pq.StringArray `db:"scopes"`
	AllProjects bool           `db:"all_projects"`
	ProjectIDs  pq.StringArray `db:"project_ids"`
	CreatedAt   time.Time      `db:"created_at"`
	LastUsedAt  sql.NullTime   `db:"last_used_at"`
	RevokedAt   sql.NullTime   `db:"revoked_at"`
}

func (r keyRow) key() access.Key {
	k := access.Key{
		ID: r.ID, Prefix: r.Prefix, Hash: r.Hash, Name: r.Name,
		UserID: r.UserID, TeamID: r.TeamID, CreatedAt: r.CreatedAt.UTC(),
		// A NULL time scans as the zero time, which the Key reads as unset.
		LastUsedAt: r.LastUsedAt.Time.UTC(), RevokedAt: r.RevokedAt.Time.UTC(),
	}
	for _, s := range r.Scopes {
		k.Scopes = append(k.Scopes, access.Scope(s))
	}
	if r.AllProjects {
		k.Projects = access.AllProjects()
	} else {
		k.Projects = access.ProjectSet(r.ProjectIDs...)
	}
	return k
}

const keyColumns = `id, prefix, hash, name, user_id, team_id, scopes, all_projects, project_ids, created_at, last_used_at, revoked_at`

// Create implements [access.KeyStore].
func (s *KeyStore) Create(ctx context.Context, k access.Key) error {
	ids := k.Projects.IDs
	if k.Projects.All {
		ids = nil
	}
	return write(ctx, s.db, "pgstore.KeyStore.Create", askbi.Errorf(askbi.Conflict, "API key already exists"),
		`INSERT INTO api_keys (`+keyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		k.ID, k.Prefix, k.Hash, k.Name, k.UserID, k.TeamID, scopeStrings(k.Scopes),
		k.Projects.All, orEmpty(ids), k.CreatedAt, nullTime(k.LastUsedAt), nullTime(k.RevokedAt))
}

// ByPrefix implements [access.KeyStore].
func (s *KeyStore) ByPrefix(ctx context.Context, prefix string) (access.Key, error) {
	return getRow(ctx, s.db, "pgstore.KeyStore.ByPrefix", errKeyNotFound(), keyRow.key,
		`SELECT `+keyColumns+` FROM api_keys WHERE prefix = $1`, prefix)
}

// List implements [access.KeyStore].
func (s *KeyStore) List(ctx context.Context, teamID, userID string) ([]access.Key, error) {
	return selectRows(ctx, s.db, "pgstore.KeyStore.List", keyRow.key, `SELECT `+keyColumns+` FROM api_keys
		WHERE team_id = $1 AND user_id = $2 ORDER BY created_at DESC, id DESC`, teamID, userID)
}

// Revoke implements [access.KeyStore].
func (s *KeyStore) Revoke(ctx context.Context, id string, t time.Time) error {
	// The notification reaches every instance's key cache (Listen) when
	// the revocation commits.
	return execOne(ctx, s.db, "pgstore.KeyStore.Revoke", errKeyNotFound(),
		`WITH r AS (UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING id)
		 SELECT pg_notify('`+ChangesChannel+`', 'key:' || id) FROM r`, id, t)
}

// Touch implements [access.KeyStore].
func (s *KeyStore) Touch(ctx context.Context, id string, t time.Time) error {
	return execOne(ctx, s.db, "pgstore.KeyStore.Touch", errKeyNotFound(), `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, id, t)
}

func errKeyNotFound() error { return askbi.Errorf(askbi.NotFound, "API key not found") }

func nullTime(t time.Time) sql.NullTime { return sql.NullTime{Time: t, Valid: !t.IsZero()} }
