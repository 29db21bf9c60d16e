package pgstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
)

// DemoStore keeps what the reference server's demo hands out, so that
// every instance on one database hands out the same: product sessions,
// and the demo's credentials, each claimed once. It is safe for
// concurrent use, in one process and across processes.
type DemoStore struct {
	db *sqlx.DB
}

// NewDemoStore returns a [DemoStore] on a migrated database.
func NewDemoStore(db *sqlx.DB) *DemoStore { return &DemoStore{db: db} }

// CreateSession stores a session of user in team under hash, the SHA-256
// of its token. Storing one that exists changes nothing.
func (s *DemoStore) CreateSession(ctx context.Context, hash []byte, team, user string) error {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO sessions (hash, team_id, user_id) VALUES ($1, $2, $3)
		ON CONFLICT (hash) DO NOTHING`, hash, team, user); err != nil {
		return internal("pgstore.DemoStore.CreateSession", err)
	}
	return nil
}

// Session returns the team and user of the session stored under hash, or
// NotFound.
func (s *DemoStore) Session(ctx context.Context, hash []byte) (team, user string, err error) {
	var row struct {
		Team string `db:"team_id"`
		User string `db:"user_id"`
	}
	err = s.db.GetContext(ctx, &row, `SELECT team_id, user_id FROM sessions WHERE hash = $1`, hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", askbi.Errorf(askbi.NotFound, "no such session")
	}
	if err != nil {
		return "", "", internal("pgstore.DemoStore.Session", err)
	}
	return row.Team, row.User, nil
}

// Secret returns the value stored under name, or NotFound.
func (s *DemoStore) Secret(ctx context.Context, name string) (string, error) {
	var v string
	err := s.db.GetContext(ctx, &v, `SELECT value FROM demo_secrets WHERE name = $1`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", askbi.Errorf(askbi.NotFound, "no such secret")
	}
	if err != nil {
		return "", internal("pgstore.DemoStore.Secret", err)
	}
	return v, nil
}

// Claim stores value under name unless a value is there, and returns
// the value stored: value, or the one another caller stored first.
func (s *DemoStore) Claim(ctx context.Context, name, value string) (string, error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO demo_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		name, value); err != nil {
		return "", internal("pgstore.DemoStore.Claim", err)
	}
	return s.Secret(ctx, name)
}

// Replace stores value under name in place of old, unless another caller
// replaced old first, and returns the value stored.
func (s *DemoStore) Replace(ctx context.Context, name, old, value string) (string, error) {
	if _, err := s.db.ExecContext(ctx, `UPDATE demo_secrets SET value = $3, updated_at = now() WHERE name = $1 AND value = $2`,
		name, old, value); err != nil {
		return "", internal("pgstore.DemoStore.Replace", err)
	}
	return s.Secret(ctx, name)
}
