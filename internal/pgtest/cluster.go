package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lib/pq"
)

// ErrNotInstalled reports that no PostgreSQL server binaries were found.
// Start wraps it; match it with errors.Is.
var ErrNotInstalled = errors.New("PostgreSQL is not installed")

// Superuser is the name of the superuser role of clusters made by Start.
const Superuser = "postgres"

// Options configures Start. The zero value is valid.
type Options struct {
	// Port is the loopback TCP port to listen on. Zero picks a free port.
	Port int
	// BinDir is the folder holding initdb and postgres. Empty searches PATH,
	// then /usr/lib/postgresql/*/bin (newest version first).
	BinDir string
	// Password is the superuser's password. Empty means trust
	// authentication: any local user can connect as the superuser, which is
	// fine for tests but not on a shared machine. It only takes effect when
	// Start creates the cluster; later starts must pass the same password.
	Password string
	// NoSync turns off fsync, synchronous_commit and full_page_writes. It
	// makes tests fast; a machine crash may then corrupt the cluster.
	NoSync bool
	// Statements loads pg_stat_statements where the installation has it,
	// so tests can count the statements a call costs (a database then
	// runs CREATE EXTENSION pg_stat_statements to read them).
	Statements bool
}

// Cluster is a PostgreSQL server started by Start. It listens only on
// 127.0.0.1, with Unix sockets off. Its methods are safe for concurrent use.
type Cluster struct {
	dir      string
	binDir   string
	cred     *syscall.Credential
	port     int
	password string
	proc     *os.Process   // nil when Start found the server running
	exited   chan struct{} // closed when proc has exited
	logPath  string
}

// Start starts a cluster whose files live in dir: it runs initdb when
// dir holds no cluster yet and reuses the existing one otherwise. When the
// process runs as root, the server runs as the "postgres" system user, which
// must be able to reach dir.
//
// The server stops when Stop is called, and also when the process that
// started it dies. Start wraps [ErrNotInstalled] when the binaries are
// missing; other errors include the server's log output.
//
// A postmaster.pid left by a postmaster that died (killed, or the machine
// stopped) is removed first, also when its PID now belongs to another
// process. When a postmaster is still running on dir (one restarted by
// pg_ctl outside the process that started it, and orphaned since), Start
// uses it, on the port it listens on, and Stop stops it.
func Start(ctx context.Context, dir string, opts *Options) (*Cluster, error) {
	if opts == nil {
		opts = &Options{}
	}
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir, cred); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initdb(ctx, binDir, dir, cred, opts); err != nil {
			return nil, err
		}
	}
	c := &Cluster{dir: dir, binDir: binDir, cred: cred, password: opts.Password, logPath: filepath.Join(dir, "postgres.log")}
	port, running, err := checkLock(data)
	if err != nil {
		return nil, err
	}
	if running {
		c.port = port
		if err := c.ping(ctx); err != nil {
			return nil, fmt.Errorf("pgtest: a postgres already runs on %s (port %d) and does not answer: %w", data, port, err)
		}
		return c, nil
	}
	// A free port can be taken between our probe and the server's bind, so
	// retry a few times when the port was ours to choose. After a
	// postmaster was killed (-9), its backends may hold its shared memory
	// for a moment more: postgres then refuses to start, and a retry a
	// little later starts it.
	binds, waitShared := 0, time.Now().Add(10*time.Second)
	for {
		port := opts.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		err = c.start(ctx, binDir, port, cred, opts.NoSync, opts.Statements)
		switch {
		case err == nil:
			return c, nil
		case opts.Port == 0 && binds < 4 && strings.Contains(err.Error(), "could not bind"):
			binds++
		case strings.Contains(err.Error(), "pre-existing shared memory block") && time.Now().Before(waitShared):
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(200 * time.Millisecond):
			}
			if _, _, lerr := checkLock(data); lerr != nil {
				return nil, lerr
			}
		default:
			return nil, err
		}
	}
}

// URL returns a lib/pq connection URL for the superuser on database dbname.
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	if c.password != "" {
		u.User = url.UserPassword(Superuser, c.password)
	}
	return u.String()
}

// CreateDatabase creates database name unless it exists.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	return createDatabase(ctx, db, name)
}

// Stop shuts the server down (fast mode: open sessions are ended) and waits
// for it to exit. It stops the postmaster running on the cluster's data
// directory (pg_ctl stop -D), which is not the process Start ran when
// PostgreSQL was restarted since. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop() error {
	data := filepath.Join(c.dir, "data")
	if _, running, err := checkLock(data); err == nil && running {
		cmd := exec.Command(filepath.Join(c.binDir, "pg_ctl"), "stop", "-D", data, "-m", "fast", "-w", "-t", "60")
		cmd.Dir = c.dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			if _, running, _ := checkLock(data); running {
				return fmt.Errorf("pgtest: pg_ctl stop: %w\n%s", err, out)
			}
		}
	}
	if c.proc == nil {
		return nil
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL} {
		if err := c.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("pgtest: stop postgres: %w", err)
		}
		select {
		case <-c.exited:
			return nil
		case <-time.After(30 * time.Second):
		}
	}
	return errors.New("pgtest: postgres did not exit after SIGKILL")
}

// start runs the postmaster and waits until it accepts connections.
func (c *Cluster) start(ctx context.Context, binDir string, port int, cred *syscall.Credential, noSync, statements bool) error {
	args := []string{
		"-D", filepath.Join(c.dir, "data"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "unix_socket_directories=",
		"-c", "logging_collector=off",
	}
	if noSync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if _, err := os.Stat(filepath.Join(binDir, "..", "lib", "pg_stat_statements.so")); statements && err == nil {
		args = append(args, "-c", "shared_preload_libraries=pg_stat_statements")
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	logStart, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(binDir, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// Its own process group keeps a terminal's Ctrl-C away from it: the
		// owner decides when it stops.
		Setpgid: true,
		// Without this, a test binary killed by -timeout would leave the
		// server running. SIGINT is a fast, clean shutdown.
		Pdeathsig: syscall.SIGINT,
	}
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, so
		// that thread must live as long as the server does.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.proc, c.exited, c.port = cmd.Process, exited, port

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return c.awaitReady(ctx, exited, logStart)
}

// ping checks that the server accepts the superuser.
func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// awaitReady waits until the postmaster just started accepts connections.
func (c *Cluster) awaitReady(ctx context.Context, exited chan struct{}, logStart int64) error {
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if pqErr, ok := errors.AsType[*pq.Error](err); ok && pqErr.Code.Class() == "28" {
			_ = c.Stop()
			c.proc = nil
			return fmt.Errorf("pgtest: postgres refused the superuser (was the cluster made with another password?): %w", err)
		}
		select {
		case <-exited:
			c.proc = nil
			return fmt.Errorf("pgtest: postgres exited during startup:\n%s", c.logSince(logStart))
		case <-ctx.Done():
			_ = c.Stop()
			c.proc = nil
			return fmt.Errorf("pgtest: postgres did not accept connections: %w\n%s", ctx.Err(), c.logSince(logStart))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkLock reads the postmaster.pid of data directory data. It reports
// the port of a postmaster running on data, or removes a stale lock: one
// whose PID is gone, or belongs to a process that is not a postmaster of
// data (PIDs are reused after a crash; a postmaster's working directory is
// its data directory). No lock file is no server.
func checkLock(data string) (port int, running bool, err error) {
	path := filepath.Join(data, "postmaster.pid")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	lines := strings.Split(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	if pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || cwd == data {
			// A live postmaster of data, or one we cannot inspect (no
			// /proc): leave the decision to postgres.
			if len(lines) > 3 {
				port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
			}
			return port, err == nil, nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, false, fmt.Errorf("pgtest: remove the stale %s: %w", path, err)
	}
	return 0, false, nil
}

// logSince returns the server log written after offset, at most its last 8 KiB.
func (c *Cluster) logSince(offset int64) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	b = b[min(offset, int64(len(b))):]
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

func initdb(ctx context.Context, binDir, dir string, cred *syscall.Credential, opts *Options) error {
	args := []string{"-D", filepath.Join(dir, "data"), "-U", Superuser, "-E", "UTF8", "--locale=C"}
	if opts.Password == "" {
		args = append(args, "-A", "trust")
	} else {
		pwfile := filepath.Join(dir, "pwfile")
		if err := os.WriteFile(pwfile, []byte(opts.Password+"\n"), 0o600); err != nil {
			return err
		}
		defer os.Remove(pwfile)
		if err := chown(pwfile, cred); err != nil {
			return err
		}
		args = append(args, "-A", "scram-sha-256", "--pwfile", pwfile)
	}
	if opts.NoSync {
		args = append(args, "--no-sync")
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = dir // the server user may not be able to enter ours
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out.String())
	}
	return nil
}

// findBinDir returns the folder holding initdb and postgres.
func findBinDir(dir string) (string, error) {
	if dir != "" {
		if hasServer(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("pgtest: %w: no initdb and postgres in %s", ErrNotInstalled, dir)
	}
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// Debian links the binaries into PATH; postgres must come from the
		// same installation as initdb.
		if p, err = filepath.EvalSymlinks(p); err == nil {
			candidates = append(candidates, filepath.Dir(p))
		}
	}
	for _, d := range append(candidates, debianBinDirs()...) {
		if hasServer(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("pgtest: %w: no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin", ErrNotInstalled)
}

// debianBinDirs returns /usr/lib/postgresql/*/bin, newest version first.
func debianBinDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	return dirs
}

// hasServer reports whether dir holds executable initdb and postgres.
func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// serverCredential returns the identity to run the server as: nil (this
// process's own) unless running as root, which PostgreSQL refuses.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: PostgreSQL refuses to run as root and there is no postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// prepareDir creates dir for the server user and checks that this user can
// reach it.
func prepareDir(dir string, cred *syscall.Credential) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := chown(dir, cred); err != nil {
		return err
	}
	if cred == nil {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		var bit os.FileMode = 0o001
		switch {
		case st.Uid == cred.Uid:
			bit = 0o100
		case st.Gid == cred.Gid:
			bit = 0o010
		}
		if fi.Mode().Perm()&bit == 0 {
			return fmt.Errorf("pgtest: the postgres user cannot reach %s because %s is not searchable for it; use a folder outside it", dir, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func chown(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return os.Chown(path, int(cred.Uid), int(cred.Gid))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createDatabase creates database name through db unless it exists.
func createDatabase(ctx context.Context, db *sql.DB, name string) error {
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	// template0 is never connected to, so concurrent creations do not fail
	// with "source database is being accessed by other users".
	_, err := db.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)+" TEMPLATE template0")
	if pqErr, ok := errors.AsType[*pq.Error](err); ok && pqErr.Code == "42P04" { // duplicate_database: created concurrently
		return nil
	}
	return err
}
