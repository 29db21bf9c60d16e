// Package mysqltest gives tests a throwaway MariaDB, as package pgtest
// gives them a PostgreSQL.
//
// A test package calls Main from TestMain; each test that needs a database
// calls [MustDatabase] or [MustDB] and gets a fresh, empty database of its
// own, dropped when the test ends:
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
//
//	func TestX(t *testing.T) {
//		dsn := mysqltest.MustDatabase(t)
//		...
//	}
//
// The first such call starts one server for the whole test binary from the
// installed MariaDB binaries (mariadb-install-db and mariadbd; Debian's
// mariadb-server), in a temporary folder, listening on a Unix socket in
// that folder only (no TCP port), with a root user without password; Main
// stops it and removes the folder. Packages whose tests never ask pay
// nothing. With ASKBI_TEST_MYSQL_DSN set (a go-sql-driver DSN of a user
// that may create databases and users, on MySQL 8 or MariaDB), no server
// is started and the databases are created on that server instead.
//
// Where MariaDB is not installed, the tests that need it are skipped with a
// loud "SKIPPING" message, or fail when ASKBI_REQUIRE_MARIADB=1 (for CI).
package mysqltest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
)

// Environment variables read by the test harness.
const (
	EnvDSN            = "ASKBI_TEST_MYSQL_DSN"
	EnvRequireMariaDB = "ASKBI_REQUIRE_MARIADB"
)

var (
	serverOnce sync.Once
	shared     *server
	sharedErr  error
	skipOnce   sync.Once
	dbSeq      atomic.Int64
)

// Runner is what Main runs: a *testing.M, or what [Wrap] returns.
type Runner interface{ Run() int }

// Main runs the tests of m, stops the server if one was started, and
// exits with the tests' status. Call it from TestMain.
func Main(m Runner) {
	os.Exit(Wrap(m).Run())
}

// Wrap returns m, whose Run also stops the server once m's tests ran: for
// a package that also needs another harness's Main, such as
// pgtest.Main(mysqltest.Wrap(m)).
func Wrap(m Runner) Runner { return wrapped{m} }

type wrapped struct{ m Runner }

func (w wrapped) Run() int {
	code := w.m.Run()
	if shared != nil {
		if err := shared.close(); err != nil {
			fmt.Fprintf(os.Stderr, "mysqltest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// MustDatabase creates a fresh, empty database for tb and returns its
// go-sql-driver DSN, for a user with every privilege (root, when
// mysqltest started the server). The database is dropped when tb ends,
// after the sessions still using it are killed.
func MustDatabase(tb testing.TB) string {
	tb.Helper()
	s := mustServer(tb)
	name := strings.ToLower(fmt.Sprintf("askbi_test_%d_%s", dbSeq.Add(1), rand.Text()[:8]))
	if _, err := s.admin.ExecContext(tb.Context(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		tb.Fatalf("mysqltest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.dropDatabase(ctx, name); err != nil {
			tb.Errorf("mysqltest: drop database %s: %v", name, err)
		}
	})
	cfg := s.base.Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}

// MustDB opens a fresh database from [MustDatabase] with the "mysql"
// driver and closes it when tb ends.
func MustDB(tb testing.TB) *sqlx.DB {
	tb.Helper()
	db, err := sqlx.Open("mysql", MustDatabase(tb))
	if err != nil {
		tb.Fatalf("mysqltest: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Version returns the server's version, such as
// "10.11.19-MariaDB-0+deb12u1", for a test to say what it ran on.
func Version(tb testing.TB) string {
	tb.Helper()
	return mustServer(tb).version
}

// sharedServer starts the shared server on first use.
func sharedServer() (*server, error) {
	serverOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared, sharedErr = newServer(ctx, os.Getenv(EnvDSN))
	})
	return shared, sharedErr
}

// mustServer starts the shared server on first use, and skips or fails tb
// when it is unavailable.
func mustServer(tb testing.TB) *server {
	tb.Helper()
	s, err := sharedServer()
	if err == nil {
		return s
	}
	skip, msg := verdict(err, os.Getenv(EnvRequireMariaDB) == "1")
	if !skip {
		tb.Fatal(msg)
	}
	skipOnce.Do(func() { fmt.Fprintf(os.Stderr, "mysqltest: %s\n", msg) })
	tb.Skip(msg)
	return nil
}

// verdict says how a test ends when the server could not start: skipped
// when MariaDB is not installed and not required, failed otherwise.
func verdict(err error, required bool) (skip bool, msg string) {
	switch {
	case !errors.Is(err, ErrNotInstalled):
		return false, fmt.Sprintf("mysqltest: %v", err)
	case required:
		return false, fmt.Sprintf("mysqltest: %s=1 but %v", EnvRequireMariaDB, err)
	}
	return true, fmt.Sprintf("SKIPPING: MariaDB not installed; install mariadb-server or set %s (%v)", EnvDSN, err)
}

// server is where test databases are created: a MariaDB of our own, or
// the server at ASKBI_TEST_MYSQL_DSN.
type server struct {
	proc    *process // nil for an external server
	base    *mysql.Config
	admin   *sqlx.DB
	version string
}

// newServer connects to dsn, or starts a server when it is empty.
func newServer(ctx context.Context, dsn string) (_ *server, err error) {
	s := &server{}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.close())
		}
	}()
	if dsn == "" {
		if s.proc, err = start(ctx); err != nil {
			return s, err
		}
		dsn = s.proc.dsn()
	}
	if s.base, err = mysql.ParseDSN(dsn); err != nil {
		return s, fmt.Errorf("%s: %w", EnvDSN, err)
	}
	s.base.DBName = ""
	if s.admin, err = sqlx.Open("mysql", s.base.FormatDSN()); err != nil {
		return s, err
	}
	return s, s.admin.GetContext(ctx, &s.version, "SELECT VERSION()")
}

// dropDatabase kills the sessions on database name, then drops it.
func (s *server) dropDatabase(ctx context.Context, name string) error {
	var ids []int64
	if err := s.admin.SelectContext(ctx, &ids, "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", name); err != nil {
		return err
	}
	for _, id := range ids {
		_, _ = s.admin.ExecContext(ctx, fmt.Sprintf("KILL %d", id)) // gone already is fine
	}
	_, err := s.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	return err
}

// close disconnects and stops the server.
func (s *server) close() error {
	var errs []error
	if s.admin != nil {
		errs = append(errs, s.admin.Close())
	}
	if s.proc != nil {
		errs = append(errs, s.proc.stop())
	}
	return errors.Join(errs...)
}
