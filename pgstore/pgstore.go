package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/internal/pgpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLock is the advisory-lock key that serializes Migrate across
// processes sharing one database.
const migrateLock = 0x61736b6269 // "askbi"

// Options configures Open. A nil *Options is valid; each zero field
// means its default.
type Options struct {
	// MaxConns bounds the pool's open connections, all kept idle for
	// reuse. Default 16 (keep twice the pools' sizes within the server's
	// max_connections).
	MaxConns int
	// Rate is the budget of the shared rate limiter (DB.RateLimiter).
	// Default access.DefaultRate per second, access.DefaultBurst at once.
	Rate *access.RateOptions
	// Logger hears of what a store could not write in the background
	// (DB.Usage's audit entries). Default slog.Default().
	Logger *slog.Logger
}

// DB is askbi's state in one PostgreSQL database, migrated: a store for
// each SDK interface, the limits every instance on the database shares,
// and the change feed between them. Its fields are safe for concurrent
// use, across processes too.
type DB struct {
	// SQL is the pool every store uses.
	SQL *sqlx.DB
	url string

	Keys        *KeyStore        // access.KeyStore
	Ask         ask.Stores       // conversations, turns, context, tool runs, approvals, receipts
	Memory      *MemoryStore     // memory.Store
	OAuth       *OAuthStore      // oauth.Store of the MCP server's authorization server
	Tasks       *TaskStore       // mcpserver.TaskStore: the MCP server's tasks
	Connections *ConnectionStore // connections.Store
	Flows       *FlowStore       // signin.FlowStore
	// Catalog and Directory are a workspace catalog and a team directory
	// for a host without its own (the reference server's demo).
	Catalog   *Catalog
	Directory *Directory
	// Demo keeps a demo's sessions and credentials (the reference server).
	Demo *DemoStore
	// Usage is the usage view's ledger and the token budgets
	// (usage.Ledger, usage.Budgets): the audit log, written in batches,
	// and the usage records. Close writes what it holds.
	Usage *UsageStore

	// RateLimiter is one budget a principal across instances
	// (access.NewFallbackRateLimiter keeps one per process through an
	// outage); Leases holds concurrency bounds across instances
	// (dataexec.ConcurrencyOptions.Shared, ask.Options.TurnSlots);
	// ConnectionChanges stops the chat turns using a changed connection
	// on every instance (connections.Options.Publish, and Listen).
	RateLimiter       *RateLimiter
	Leases            *Leases
	ConnectionChanges *ConnectionChanges
}

// Open connects to the database at url (a lib/pq URL or DSN), applies the
// pending migrations (Migrate) and returns its stores. Close it when done.
func Open(ctx context.Context, url string, o *Options) (*DB, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		return nil, err
	}
	pgpool.Size(db.DB, opts.MaxConns)
	if err := Migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return &DB{SQL: db, url: url,
		Keys: NewKeyStore(db), Ask: NewAskStores(db), Memory: NewMemoryStore(db), OAuth: NewOAuthStore(db), Tasks: NewTaskStore(db),
		Connections: NewConnectionStore(db), Flows: NewFlowStore(db),
		Catalog: NewCatalog(db), Directory: NewDirectory(db), Demo: NewDemoStore(db), Usage: NewUsageStore(db, opts.Logger),
		RateLimiter: NewRateLimiter(db, opts.Rate), Leases: NewLeases(db), ConnectionChanges: NewConnectionChanges(db),
	}, nil
}

// Close writes the audit entries DB.Usage holds and closes the pool.
func (db *DB) Close() error {
	uerr := db.Usage.Close()
	if err := db.SQL.Close(); err != nil {
		return err
	}
	return uerr
}

// Listen keeps this instance's caches in step with what the other
// instances on the database change, until ctx ends: a revoked key leaves
// keys' cache, a catalog or member change makes db's Catalog and
// Directory read again, and a connection changed elsewhere stops the
// chat turns that use it ([ConnectionChanges.Forward] to conns: a
// service's connections.Records); a lost listening connection forgets
// all of it on the reconnect. keys and conns may be nil. It returns once
// listening has started.
func (db *DB) Listen(ctx context.Context, log *slog.Logger, keys *access.Keys, conns interface{ Changed(teamID string) }) error {
	forget := ForgetCaches(keys, db.Catalog, db.Directory)
	var forward func(Change)
	if conns != nil {
		forward = db.ConnectionChanges.Forward(conns)
	}
	// While changes arrive, the catalog and the directory answer from
	// what they read last (Catalog.Follow): no round trip a request for
	// what did not change.
	follow := func(on bool) {
		db.Catalog.Follow(on)
		db.Directory.Follow(on)
	}
	err := Listen(ctx, db.url, log, func(c Change) {
		if c.Down {
			follow(false)
			return
		}
		forget(c)
		if forward != nil {
			forward(c)
		}
		if c.Missed {
			follow(true)
		}
	})
	if err == nil {
		follow(true)
		context.AfterFunc(ctx, func() { follow(false) })
	}
	return err
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
		err = migrateOne(ctx, db, name, body)
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", strings.TrimPrefix(name, "migrations/"), err)
		}
	}
	return nil
}

// migrateOne applies one migration unless it ran already. A transaction
// that lost a race on a catalog row to another session (a GRANT on every
// table of the schema, say: PostgreSQL refuses the second writer with
// "tuple concurrently updated" rather than wait) or a deadlock rolled
// back whole, so it runs again, a few times.
func migrateOne(ctx context.Context, db *sqlx.DB, name string, body []byte) error {
	for try := 1; ; try++ {
		err := Transact(ctx, db, func(tx *sqlx.Tx) error {
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
		if err == nil || !LostCatalogRace(err) || try == 5 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		}
	}
}

// LostCatalogRace reports whether err is PostgreSQL's refusal of a change
// to a catalog row another transaction changed at the same time ("tuple
// concurrently updated": concurrent GRANTs, ALTER ROLE, DDL on one
// table), or a deadlock: either rolled the transaction back, and a
// statement that sets the catalog to the same end may run again.
func LostCatalogRace(err error) bool {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "40P01" || pe.Code == "XX000" && strings.Contains(pe.Message, "tuple concurrently updated")
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
