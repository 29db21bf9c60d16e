// Package pgtest gives tests a throwaway PostgreSQL, and the reference
// server its private cluster.
//
// A test package calls Main from TestMain; each test that needs a database
// calls [MustDatabase] or [MustDB] and gets a fresh, empty database of its own,
// dropped when the test ends:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		db := pgtest.MustDB(t)
//		...
//	}
//
// The first such call starts one cluster for the whole test binary, from the
// installed binaries, in a temporary folder on a free loopback port; Main
// stops it and removes the folder. Packages whose tests never ask pay
// nothing. With ASKBI_TEST_DATABASE_URL set (a postgres:// URL of a role
// that may create databases), no cluster is started and the databases are
// created on that server instead.
//
// Where PostgreSQL is not installed, the tests that need it are skipped with
// a loud "SKIPPING" message, or fail when ASKBI_REQUIRE_POSTGRES=1 (for CI).
//
// [MustProxy] puts a proxy in front of a database that a test cuts and
// restores, to take the database away from one client (a process under
// test) while the others keep it.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Environment variables read by the test harness.
const (
	EnvDatabaseURL     = "ASKBI_TEST_DATABASE_URL"
	EnvRequirePostgres = "ASKBI_REQUIRE_POSTGRES"
)

var (
	serverOnce sync.Once
	shared     *server
	sharedErr  error
	skipOnce   sync.Once
	dbSeq      atomic.Int64
)

// Main runs the tests of m, stops the cluster if one was started, and exits
// with the tests' status. Call it from TestMain. m is a *testing.M, or
// another harness's wrapper of one (mysqltest.Wrap).
func Main(m interface{ Run() int }) {
	code := m.Run()
	if shared != nil {
		if err := shared.close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// MainExamples is Main for a package whose runnable Examples use
// [ExampleDatabase]: it starts the server first, and where PostgreSQL is not
// installed and not required it skips the Examples (their output needs a
// database) with the loud SKIPPING line the tests print.
func MainExamples(m *testing.M) {
	flag.Parse()
	if _, err := sharedServer(); err != nil {
		skip, msg := verdict(err, os.Getenv(EnvRequirePostgres) == "1")
		if !skip {
			fmt.Fprintln(os.Stderr, msg)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "pgtest: %s: the Examples are skipped\n", msg)
		flag.Set("test.skip", "^Example")
	}
	Main(m)
}

// ExampleDatabase is [MustDatabase] for a runnable Example, which has no
// testing.TB: it panics when the database cannot be made ([MainExamples]
// skips the Examples where PostgreSQL is missing), and the database lives
// until Main stops the cluster.
func ExampleDatabase() string {
	s, err := sharedServer()
	if err != nil {
		panic(err)
	}
	name := fmt.Sprintf("askbi_example_%d_%s", dbSeq.Add(1), strings.ToLower(rand.Text()[:8]))
	dsn, err := s.createDatabase(context.Background(), name)
	if err != nil {
		panic(err)
	}
	return dsn
}

// MustDatabase creates a fresh, empty database for tb and returns its lib/pq
// URL (postgres://...?sslmode=disable), with superuser rights when pgtest
// started the cluster. The database is dropped when tb ends, even with
// sessions still open.
func MustDatabase(tb testing.TB) string {
	tb.Helper()
	s := mustServer(tb)
	name := fmt.Sprintf("askbi_test_%d_%s", dbSeq.Add(1), rand.Text()[:8])
	name = strings.ToLower(name)
	dsn, err := s.createDatabase(tb.Context(), name)
	if err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.dropDatabase(ctx, name); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return dsn
}

// MustDB opens a fresh database from [MustDatabase] with the "postgres"
// driver and closes it when tb ends.
func MustDB(tb testing.TB) *sqlx.DB {
	tb.Helper()
	db, err := sqlx.Open("postgres", MustDatabase(tb))
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// sharedServer starts the shared server on first use.
func sharedServer() (*server, error) {
	serverOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := newServer(ctx, os.Getenv(EnvDatabaseURL))
		if err != nil {
			sharedErr = err
			return
		}
		shared = s
	})
	return shared, sharedErr
}

// mustServer starts the shared server on first use, and skips or fails tb
// when it is unavailable.
func mustServer(tb testing.TB) *server {
	tb.Helper()
	if s, err := sharedServer(); err == nil {
		return s
	}
	skip, msg := verdict(sharedErr, os.Getenv(EnvRequirePostgres) == "1")
	if !skip {
		tb.Fatal(msg)
	}
	skipOnce.Do(func() { fmt.Fprintf(os.Stderr, "pgtest: %s\n", msg) })
	tb.Skip(msg)
	return nil
}

// verdict says how a test ends when the server could not start: skipped
// when PostgreSQL is not installed and not required, failed otherwise.
func verdict(err error, required bool) (skip bool, msg string) {
	switch {
	case !errors.Is(err, ErrNotInstalled):
		return false, fmt.Sprintf("pgtest: %v", err)
	case required:
		return false, fmt.Sprintf("pgtest: %s=1 but %v", EnvRequirePostgres, err)
	}
	return true, fmt.Sprintf("SKIPPING: PostgreSQL not installed; install it or set %s (%v)", EnvDatabaseURL, err)
}

const tmpPrefix = "askbi-pgtest-"

// removeStale deletes the cluster folders under dir that test binaries
// killed before Main could clean up left behind (their servers stopped when
// they died): those without a running server (no postmaster.pid) and
// untouched for longer than age, as a new one may still be in initdb.
func removeStale(dir string, age time.Duration) {
	folders, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*"))
	for _, f := range folders {
		if _, err := os.Stat(filepath.Join(f, "data", "postmaster.pid")); err == nil {
			continue
		}
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > age {
			_ = os.RemoveAll(f)
		}
	}
}

// server is where test databases are created: a cluster of our own, or the
// server at ASKBI_TEST_DATABASE_URL.
type server struct {
	cluster *Cluster // nil for an external server
	tmp     string   // the cluster's folder, removed on close
	base    url.URL  // server URL; a database's URL replaces its path
	admin   *sql.DB
}

// newServer connects to serverURL, or starts a cluster when it is empty.
func newServer(ctx context.Context, serverURL string) (_ *server, err error) {
	s := &server{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.close())
		}
	}()
	if serverURL == "" {
		removeStale(os.TempDir(), time.Minute)
		// The folder is created 0700 under the world-searchable temp folder
		// and handed to the server user when running as root.
		if s.tmp, err = os.MkdirTemp("", tmpPrefix); err != nil {
			return s, err
		}
		if s.cluster, err = Start(ctx, s.tmp, &Options{NoSync: true, Statements: true}); err != nil {
			return s, err
		}
		serverURL = s.cluster.URL("postgres")
	}
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return s, fmt.Errorf("%s must be a postgres:// URL", EnvDatabaseURL)
	}
	s.base = *u
	if s.admin, err = sql.Open("postgres", serverURL); err != nil {
		return s, err
	}
	return s, s.admin.PingContext(ctx)
}

// createDatabase creates database name and returns its URL.
func (s *server) createDatabase(ctx context.Context, name string) (string, error) {
	if err := createDatabase(ctx, s.admin, name); err != nil {
		return "", err
	}
	u := s.base
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

func (s *server) dropDatabase(ctx context.Context, name string) error {
	_, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
	return err
}

// close disconnects, stops the cluster and removes its folder.
func (s *server) close() error {
	var errs []error
	if s.admin != nil {
		errs = append(errs, s.admin.Close())
	}
	if s.cluster != nil {
		errs = append(errs, s.cluster.Stop())
	}
	if s.tmp != "" {
		errs = append(errs, os.RemoveAll(s.tmp))
	}
	return errors.Join(errs...)
}
