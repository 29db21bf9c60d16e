package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("PGTEST_HELPER_DIR"); dir != "" {
		helperProcess(dir)
		return
	}
	Main(m)
}

func TestMustDatabase(t *testing.T) {
	a, b := MustDB(t), MustDB(t)
	if _, err := a.Exec(`CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	var names [2]string
	var tables [2]int
	for i, db := range []*sqlx.DB{a, b} {
		if err := db.Get(&names[i], `SELECT current_database()`); err != nil {
			t.Fatal(err)
		}
		if err := db.Get(&tables[i], `SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'`); err != nil {
			t.Fatal(err)
		}
	}
	if names[0] == names[1] {
		t.Errorf("both tests got database %s", names[0])
	}
	if diff := cmp.Diff([2]int{1, 0}, tables); diff != "" {
		t.Errorf("a table leaked between databases (-want +got):\n%s", diff)
	}
}

func TestMustDatabaseDropped(t *testing.T) {
	s := mustServer(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		// Closed only after the database is dropped: an open session must
		// not keep it alive.
		var held *sqlx.Conn
		t.Cleanup(func() {
			if held != nil {
				held.Close()
			}
		})
		db := MustDB(t)
		if err := db.Get(&name, `SELECT current_database()`); err != nil {
			t.Fatal(err)
		}
		var err error
		if held, err = db.Connx(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
	var exists bool
	if err := s.admin.QueryRow(`SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

// TestExternalServer uses the shared cluster the way ASKBI_TEST_DATABASE_URL
// would be used.
func TestExternalServer(t *testing.T) {
	own := mustServer(t)
	if own.cluster == nil {
		t.Skip("already running on " + EnvDatabaseURL)
	}
	s, err := newServer(t.Context(), own.cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := s.createDatabase(t.Context(), "askbi_external_test")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	err = db.Get(&name, `SELECT current_database()`)
	db.Close()
	if err != nil || name != "askbi_external_test" {
		t.Errorf("current_database() = %q, %v; want askbi_external_test", name, err)
	}
	if err := s.dropDatabase(t.Context(), "askbi_external_test"); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	// Closing an external server must leave that server running.
	if err := own.admin.Ping(); err != nil {
		t.Errorf("the shared cluster stopped: %v", err)
	}
}

func TestVerdict(t *testing.T) {
	notInstalled := fmt.Errorf("pgtest: %w: no initdb", ErrNotInstalled)
	tests := []struct {
		name     string
		err      error
		required bool
		skip     bool
		msg      string
	}{
		{"not installed", notInstalled, false, true, "SKIPPING: PostgreSQL not installed; install it or set ASKBI_TEST_DATABASE_URL (pgtest: PostgreSQL is not installed: no initdb)"},
		{"not installed but required", notInstalled, true, false, "pgtest: ASKBI_REQUIRE_POSTGRES=1 but pgtest: PostgreSQL is not installed: no initdb"},
		{"broken", errors.New("initdb: out of disk"), false, false, "pgtest: initdb: out of disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			skip, msg := verdict(tc.err, tc.required)
			type result struct {
				Skip bool
				Msg  string
			}
			if diff := cmp.Diff(result{tc.skip, tc.msg}, result{skip, msg}); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, pid bool, mtime time.Time) {
		if err := os.MkdirAll(filepath.Join(dir, name, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if pid {
			if err := os.WriteFile(filepath.Join(dir, name, "data", "postmaster.pid"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	mk(tmpPrefix+"stale", false, old)
	mk(tmpPrefix+"running", true, old)
	mk(tmpPrefix+"starting", false, time.Now())
	mk("other-stale", false, old)
	removeStale(dir, time.Minute)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{tmpPrefix + "running", tmpPrefix + "starting", "other-stale"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("folders left (-want +got):\n%s", diff)
	}
}

func TestStartNotInstalled(t *testing.T) {
	_, err := Start(t.Context(), t.TempDir(), &Options{BinDir: t.TempDir()})
	if !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Start = %v, want ErrNotInstalled", err)
	}
}

// serverDir returns a new folder the server user can reach.
func serverDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "pgtest-start-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "cluster")
}

// TestStartReuse starts a persistent cluster with a password, stops it and
// starts it again on the same folder.
func TestStartReuse(t *testing.T) {
	mustServer(t) // skips where PostgreSQL is not installed
	dir := serverDir(t)
	opts := &Options{Password: "s3cret'", NoSync: true}
	c, err := Start(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	if err := c.CreateDatabase(t.Context(), "keep"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(t.Context(), "keep"); err != nil {
		t.Fatalf("CreateDatabase is not idempotent: %v", err)
	}
	mustExec(t, c.URL("keep"), `CREATE TABLE kept (x int)`, `INSERT INTO kept VALUES (42)`)

	// The password is required.
	wrong := strings.Replace(c.URL("keep"), "s3cret%27", "wrong", 1)
	err = mustOpen(t, wrong).Ping()
	if pqErr, ok := errors.AsType[*pq.Error](err); !ok || pqErr.Code != "28P01" {
		t.Errorf("connecting with a wrong password: %v, want invalid_password", err)
	}

	pid := c.proc.Pid
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postgres (pid %d) still exists after Stop: %v", pid, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	_, err = Start(t.Context(), dir, &Options{Password: "other", NoSync: true})
	if err == nil || !strings.Contains(err.Error(), "another password") {
		t.Errorf("Start with another password = %v, want an error about the password", err)
	}

	c, err = Start(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	var x int
	if err := mustOpen(t, c.URL("keep")).Get(&x, `SELECT x FROM kept`); err != nil || x != 42 {
		t.Errorf("after restart: x = %d, %v; want 42", x, err)
	}
}

func TestStartUnreachableDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the folder to another user")
	}
	mustServer(t) // skips where PostgreSQL is not installed
	_, err := Start(t.Context(), filepath.Join(t.TempDir(), "cluster"), nil)
	if err == nil || !strings.Contains(err.Error(), "the postgres user cannot reach") {
		t.Errorf("Start = %v, want an error saying the postgres user cannot reach the folder", err)
	}
}

// TestClusterDiesWithParent kills a process that started a cluster and
// checks that the server goes away too.
func TestClusterDiesWithParent(t *testing.T) {
	mustServer(t) // skips where PostgreSQL is not installed
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PGTEST_HELPER_DIR="+serverDir(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper said %q", line)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(time.Minute)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postgres (pid %d) outlived the process that started it", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// helperProcess starts a cluster in dir, prints its pid and waits to be
// killed.
func helperProcess(dir string) {
	c, err := Start(context.Background(), dir, &Options{NoSync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(c.proc.Pid)
	time.Sleep(time.Hour)
}

func mustOpen(t *testing.T, dsn string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	db := mustOpen(t, dsn)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// pgCtl runs pg_ctl on c's data directory as the server user.
func pgCtl(t *testing.T, c *Cluster, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(c.binDir, "pg_ctl"), append(args, "-D", filepath.Join(c.dir, "data"))...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// postmasterPID returns the PID in c's postmaster.pid, or 0.
func postmasterPID(c *Cluster) int {
	b, _ := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// TestStopAfterOutsideRestart: PostgreSQL restarted by pg_ctl outside the
// process that started it is another postmaster. Start uses it while it
// runs, and Stop stops it (by data directory), so nothing is orphaned and
// the next Start works.
func TestStopAfterOutsideRestart(t *testing.T) {
	mustServer(t) // skips where PostgreSQL is not installed
	dir := serverDir(t)
	opts := &Options{Password: "pw", NoSync: true}
	c, err := Start(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	if out, err := pgCtl(t, c, "restart", "-m", "fast", "-w", "-l", filepath.Join(c.dir, "data", "outside.log")); err != nil {
		t.Fatalf("pg_ctl restart: %v\n%s", err, out)
	}
	outside := postmasterPID(c)
	if outside == 0 || outside == c.proc.Pid {
		t.Fatalf("postmaster after the restart = %d, want a new one (was %d)", outside, c.proc.Pid)
	}

	// A second Start while it runs (the owner was killed) uses it.
	again, err := Start(t.Context(), dir, opts)
	if err != nil {
		t.Fatalf("Start with a postmaster running on the folder: %v", err)
	}
	if err := mustOpen(t, again.URL("postgres")).Ping(); err != nil {
		t.Errorf("the running postmaster, as Start returned it: %v", err)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// pg_ctl stop waits for the lock file to go; the process itself may
	// take a moment more to exit and be reaped.
	for deadline := time.Now().Add(30 * time.Second); alive(outside); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(outside, syscall.SIGKILL)
			t.Fatalf("the restarted postmaster (pid %d) outlived Stop", outside)
		}
	}
	if out, err := pgCtl(t, c, "status"); err == nil {
		t.Errorf("pg_ctl status after Stop: server running\n%s", out)
	}
	c, err = Start(t.Context(), dir, opts)
	if err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
}

// TestStartStaleLock: a postmaster.pid left by a dead postmaster, even one
// whose PID now belongs to another process, does not stop the next Start.
func TestStartStaleLock(t *testing.T) {
	mustServer(t) // skips where PostgreSQL is not installed
	dir := serverDir(t)
	first, err := Start(t.Context(), dir, &Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	c := first
	t.Cleanup(func() { first.Stop() })
	lock := filepath.Join(dir, "data", "postmaster.pid")
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	c.proc.Kill() // kill -9: the lock file stays
	<-c.exited
	c.Stop()
	// The dead postmaster's PID reused by an unrelated process of the
	// server's user (postgres itself ignores a PID it may not signal).
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	lines := strings.SplitN(string(b), "\n", 2)
	if err := os.WriteFile(lock, []byte(strconv.Itoa(other.Process.Pid)+"\n"+lines[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		chown(lock, c.cred)
	}
	c, err = Start(t.Context(), dir, &Options{NoSync: true})
	if err != nil {
		t.Fatalf("Start with a stale postmaster.pid: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	if err := mustOpen(t, c.URL("postgres")).Ping(); err != nil {
		t.Errorf("after recovering the stale lock: %v", err)
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

// TestProxy: a pool through a Proxy reads the database; once it is cut,
// the pool's open connections and new ones fail while a direct
// connection keeps working; after Restore the same pool reads again.
func TestProxy(t *testing.T) {
	dbURL := MustDatabase(t)
	p, viaProxy := MustProxy(t, dbURL)
	direct, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	proxied, err := sqlx.Open("postgres", viaProxy)
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()
	read := func(db *sqlx.DB) error {
		var n int
		return db.Get(&n, `SELECT 1`)
	}
	if err := read(proxied); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	for i := range 3 { // the open connection, then new ones
		if err := read(proxied); err == nil {
			t.Fatalf("read %d through the cut proxy succeeded", i+1)
		}
	}
	if err := read(direct); err != nil {
		t.Errorf("a direct connection while the proxy is cut: %v", err)
	}
	p.Restore()
	if err := read(proxied); err != nil {
		t.Errorf("through the restored proxy: %v", err)
	}
}
