package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/memory"
)

// MemoryStore is a [memory.Store] in PostgreSQL. Rows hold only what package
// memory seals: key ID, nonce, ciphertext and the character count. Every
// query is scoped by (team, user); Add and Update take a transaction-scoped
// advisory lock per (team, user) before counting and summing, so the limits
// hold across every process sharing the database. It is safe for
// concurrent use.
type MemoryStore struct {
	db *sqlx.DB
}

// NewMemoryStore returns a [MemoryStore] on a migrated database.
func NewMemoryStore(db *sqlx.DB) *MemoryStore { return &MemoryStore{db: db} }

type memoryRow struct {
	ID         string    `db:"id"`
	KeyID      string    `db:"key_id"`
	Nonce      []byte    `db:"nonce"`
	Ciphertext []byte    `db:"ciphertext"`
	Chars      int       `db:"chars"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
}

func (r memoryRow) sealed() memory.Sealed {
	return memory.Sealed{ID: r.ID, KeyID: r.KeyID, Nonce: r.Nonce, Ciphertext: r.Ciphertext, Chars: r.Chars,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

const memoryColumns = `id, key_id, nonce, ciphertext, chars, created_at, updated_at`

// List implements [memory.Store].
func (s *MemoryStore) List(ctx context.Context, o memory.Owner) ([]memory.Sealed, error) {
	var rows []memoryRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+memoryColumns+` FROM memories
		WHERE team_id = $1 AND user_id = $2 ORDER BY created_at, id`, o.TeamID, o.UserID)
	if err != nil {
		return nil, internal("pgstore.MemoryStore.List", err)
	}
	out := make([]memory.Sealed, len(rows))
	for i, r := range rows {
		out[i] = r.sealed()
	}
	return out, nil
}

// Add implements [memory.Store].
func (s *MemoryStore) Add(ctx context.Context, o memory.Owner, item memory.Sealed, limits memory.Limits) error {
	return s.locked(ctx, "pgstore.MemoryStore.Add", o, func(tx *sqlx.Tx) error {
		var usage struct {
			Count int `db:"count"`
			Total int `db:"total"`
		}
		if err := tx.GetContext(ctx, &usage, `SELECT count(*) AS count, COALESCE(sum(chars), 0) AS total
			FROM memories WHERE team_id = $1 AND user_id = $2`, o.TeamID, o.UserID); err != nil {
			return err
		}
		if err := limits.CheckAdd(usage.Count, usage.Total, item.Chars); err != nil {
			return err
		}
		return write(ctx, tx, "pgstore.MemoryStore.Add", askbi.Errorf(askbi.Conflict, "memory already exists"),
			`INSERT INTO memories (team_id, user_id, `+memoryColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			o.TeamID, o.UserID, item.ID, item.KeyID, item.Nonce, item.Ciphertext, item.Chars, item.CreatedAt, item.UpdatedAt)
	})
}

// Update implements [memory.Store].
func (s *MemoryStore) Update(ctx context.Context, o memory.Owner, item memory.Sealed, limits memory.Limits) (memory.Sealed, error) {
	var out memoryRow
	err := s.locked(ctx, "pgstore.MemoryStore.Update", o, func(tx *sqlx.Tx) error {
		var usage struct {
			Old   sql.NullInt64 `db:"old"`
			Total int           `db:"total"`
		}
		if err := tx.GetContext(ctx, &usage, `SELECT sum(chars) FILTER (WHERE id = $3) AS old, COALESCE(sum(chars), 0) AS total
			FROM memories WHERE team_id = $1 AND user_id = $2`, o.TeamID, o.UserID, item.ID); err != nil {
			return err
		}
		if !usage.Old.Valid {
			return memoryNotFound()
		}
		if err := limits.CheckEdit(usage.Total, int(usage.Old.Int64), item.Chars); err != nil {
			return err
		}
		err := tx.GetContext(ctx, &out, `UPDATE memories
			SET key_id = $4, nonce = $5, ciphertext = $6, chars = $7, updated_at = $8
			WHERE id = $3 AND team_id = $1 AND user_id = $2 RETURNING `+memoryColumns,
			o.TeamID, o.UserID, item.ID, item.KeyID, item.Nonce, item.Ciphertext, item.Chars, item.UpdatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return memoryNotFound() // deleted since the sum
		}
		return err
	})
	if err != nil {
		return memory.Sealed{}, err
	}
	return out.sealed(), nil
}

// Delete implements [memory.Store].
func (s *MemoryStore) Delete(ctx context.Context, o memory.Owner, id string) error {
	return execOne(ctx, s.db, "pgstore.MemoryStore.Delete", memoryNotFound(),
		`DELETE FROM memories WHERE id = $1 AND team_id = $2 AND user_id = $3`, id, o.TeamID, o.UserID)
}

// DeleteAll implements [memory.Store].
func (s *MemoryStore) DeleteAll(ctx context.Context, o memory.Owner) (int, error) {
	const op = "pgstore.MemoryStore.DeleteAll"
	res, err := s.db.ExecContext(ctx, `DELETE FROM memories WHERE team_id = $1 AND user_id = $2`, o.TeamID, o.UserID)
	if err != nil {
		return 0, internal(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, internal(op, err)
	}
	return int(n), nil
}

// locked runs fn in a transaction holding the owner's advisory lock, which
// PostgreSQL releases at commit or rollback. The key is a 64-bit hash of the
// length-prefixed owner, so a collision only makes two owners wait for each
// other. An *askbi.Error from fn passes through; any other error is
// Internal.
func (s *MemoryStore) locked(ctx context.Context, op string, o memory.Owner, fn func(tx *sqlx.Tx) error) error {
	key := fmt.Sprintf("askbi.memory/%d/%s/%s", len(o.TeamID), o.TeamID, o.UserID)
	err := Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key); err != nil {
			return err
		}
		return fn(tx)
	})
	var ae *askbi.Error
	if err == nil || errors.As(err, &ae) {
		return err
	}
	return internal(op, err)
}

func memoryNotFound() error { return askbi.Errorf(askbi.NotFound, "memory not found") }
