// Package pgstore keeps the state askbi owns (API keys, conversations,
// approvals, memory, remote MCP connections, OAuth grants) and the reference
// server's workspace catalog in
// PostgreSQL, on sqlx and lib/pq. Schema changes are embedded SQL migrations applied in order by
// Migrate.
//
// Each store passes the same exported conformance suite as its in-memory
// counterpart, e.g. accesstest.RunKeyStore.
package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/internal/pgpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLock is the advisory-lock key that serializes Migrate across
// processes sharing one database.
const migrateLock = 0x61736b6269 // "askbi"

// Open connects to the database at url (a lib/pq URL or DSN) and applies
// pending migrations. The pool opens at most maxConns connections and keeps
// them idle for reuse; zero means 16.
func Open(ctx context.Context, url string, maxConns int) (*sqlx.DB, error) {
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, err
	}
	pgpool.Size(db.DB, maxConns)
	if err := Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Migrate applies the embedded migrations that have not run yet, each in its
// own transaction, under a transaction-scoped advisory lock so concurrent
// processes apply each migration once.
func Migrate(ctx context.Context, db *sqlx.DB) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = Transact(ctx, db, func(tx *sqlx.Tx) error {
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return err
			}
			var done bool
			if err := tx.GetContext(ctx, &done, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE name = $1)`, name); err != nil {
				return err
			}
			if done {
				return nil
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name) VALUES ($1)`, name)
			return err
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", strings.TrimPrefix(name, "migrations/"), err)
		}
	}
	return nil
}

// Transact runs fn in a transaction, committing when fn returns nil and
// rolling back otherwise.
func Transact(ctx context.Context, db *sqlx.DB, fn func(tx *sqlx.Tx) error) (err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback()
			panic(p)
		}
		if err != nil {
			tx.Rollback()
			return
		}
		err = tx.Commit()
	}()
	return fn(tx)
}

func isUniqueViolation(err error) bool {
	_, ok := uniqueViolation(err)
	return ok
}

// uniqueViolation reports whether err is a unique violation, and of
// which constraint.
func uniqueViolation(err error) (constraint string, ok bool) {
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == "23505" {
		return pe.Constraint, true
	}
	return "", false
}

// execer runs statements: a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// write runs an INSERT or UPDATE, answering conflict when a unique key
// is taken and an Internal error (for op) for any other failure.
func write(ctx context.Context, db execer, op string, conflict error, query string, args ...any) error {
	_, err := db.ExecContext(ctx, query, args...)
	switch {
	case isUniqueViolation(err):
		return conflict
	case err != nil:
		return internal(op, err)
	}
	return nil
}

// execOne runs a statement meant to touch one row, and returns notFound
// when it touched none.
func execOne(ctx context.Context, db execer, op string, notFound error, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return internal(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return internal(op, err)
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// internal wraps a database error so its text stays out of user messages;
// a database that cannot be reached is Unavailable.
// getRow reads the one row query finds and converts it with conv: notFound
// when there is none. It is the read of one record of every store here.
func getRow[R, T any](ctx context.Context, db sqlx.QueryerContext, op string, notFound error, conv func(R) T, query string, args ...any) (T, error) {
	var r R
	err := sqlx.GetContext(ctx, db, &r, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, notFound
	}
	if err != nil {
		var zero T
		return zero, internal(op, err)
	}
	return conv(r), nil
}

// selectRows reads the rows query finds, each converted with conv.
func selectRows[R, T any](ctx context.Context, db sqlx.QueryerContext, op string, conv func(R) T, query string, args ...any) ([]T, error) {
	var rows []R
	if err := sqlx.SelectContext(ctx, db, &rows, query, args...); err != nil {
		return nil, internal(op, err)
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out, nil
}

func internal(op string, err error) error {
	if pgsource.ServerClosed(err) {
		return &askbi.Error{Code: askbi.Unavailable, Op: op, Message: "the database is unavailable; try again shortly", Err: err}
	}
	return &askbi.Error{Code: askbi.Internal, Op: op, Err: err}
}
