package mysqltest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrNotInstalled reports that no MariaDB server binaries were found.
// The harness wraps it; match it with errors.Is.
var ErrNotInstalled = errors.New("MariaDB is not installed")

const tmpPrefix = "askbi-mysqltest-"

// serverFlags are the settings of a test server, at install and at start:
// small and fast (no durability), utf8mb4, a Unix socket and no TCP.
var serverFlags = []string{
	"--innodb-log-file-size=8M",
	"--innodb-buffer-pool-size=64M",
	"--innodb-flush-log-at-trx-commit=0",
	"--innodb-doublewrite=0",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_general_ci",
	"--skip-name-resolve",
}

// process is a MariaDB server started by start.
type process struct {
	dir    string // removed by stop
	socket string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// dsn is root's DSN over the socket (root has no password).
func (p *process) dsn() string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", p.socket
	return cfg.FormatDSN()
}

// start installs and starts a server in a new temporary folder, from the
// installed binaries. When the process runs as root, the server runs as
// the "mysql" system user.
func start(ctx context.Context) (_ *process, err error) {
	serverBin, installBin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, runAs, err := serverCredential()
	if err != nil {
		return nil, err
	}
	removeStale(os.TempDir(), time.Minute)
	dir, err := os.MkdirTemp("", tmpPrefix)
	if err != nil {
		return nil, err
	}
	p := &process{dir: dir, socket: filepath.Join(dir, "mysqld.sock"), log: filepath.Join(dir, "error.log")}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.stop())
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return p, err
		}
	}
	data := filepath.Join(dir, "data")
	install := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db"}, serverFlags...)
	if runAs != "" {
		install = append(install, "--user="+runAs)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, installBin, install...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = &out, &out, dir
	if err := cmd.Run(); err != nil {
		return p, fmt.Errorf("mysqltest: %s: %w\n%s", filepath.Base(installBin), err, out.String())
	}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--socket=" + p.socket, "--skip-networking",
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--log-error=" + p.log}, serverFlags...)
	if runAs != "" {
		args = append(args, "--user="+runAs)
	}
	if err := p.run(serverBin, args); err != nil {
		return p, err
	}
	return p, p.awaitReady(ctx)
}

// run starts the server process.
func (p *process) run(bin string, args []string) error {
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = p.dir
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group keeps a terminal's Ctrl-C away from it.
		Setpgid: true,
		// A test binary killed by -timeout must not leave it running.
		Pdeathsig: syscall.SIGKILL,
	}
	started := make(chan error, 1)
	p.exited = make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that forked the child exits, so
		// that thread must live as long as the server does.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		p.cmd = nil
		return fmt.Errorf("mysqltest: start %s: %w", filepath.Base(bin), err)
	}
	return nil
}

// awaitReady waits until the server accepts root on its socket.
func (p *process) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", p.dsn())
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		if err := db.PingContext(ctx); err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("mysqltest: the server exited during startup:\n%s", p.tail())
		case <-ctx.Done():
			return fmt.Errorf("mysqltest: the server did not accept connections: %w\n%s", ctx.Err(), p.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop shuts the server down (SIGTERM: a clean shutdown, then SIGKILL)
// and removes its folder.
func (p *process) stop() error {
	var errs []error
	if p.cmd != nil {
		errs = append(errs, p.signal())
	}
	return errors.Join(append(errs, os.RemoveAll(p.dir))...)
}

// signal ends the server: SIGTERM, a clean shutdown, then SIGKILL when
// it takes longer than 30 seconds.
func (p *process) signal() error {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("mysqltest: stop the server: %w", err)
		}
		select {
		case <-p.exited:
			return nil
		case <-time.After(30 * time.Second):
		}
	}
	return errors.New("mysqltest: the server did not exit after SIGKILL")
}

// tail returns the last 8 KiB of the server's error log.
func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-8<<10):])
}

// findBinaries returns the server and the install program: mariadbd and
// mariadb-install-db (or their older names mysqld and mysql_install_db,
// when they are MariaDB's) on PATH, in /usr/sbin or /usr/bin.
func findBinaries() (server, install string, err error) {
	find := func(names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin"} {
				if fi, err := os.Stat(filepath.Join(d, n)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return filepath.Join(d, n)
				}
			}
		}
		return ""
	}
	server, install = find("mariadbd", "mysqld"), find("mariadb-install-db", "mysql_install_db")
	if server == "" || install == "" {
		return "", "", fmt.Errorf("mysqltest: %w: no mariadbd and mariadb-install-db on PATH or in /usr/sbin, /usr/bin", ErrNotInstalled)
	}
	out, err := exec.Command(server, "--version").Output()
	if err != nil || !strings.Contains(string(out), "MariaDB") {
		return "", "", fmt.Errorf("mysqltest: %w: %s is not MariaDB's server (%s); for MySQL set %s", ErrNotInstalled, server, strings.TrimSpace(string(out)), EnvDSN)
	}
	return server, install, nil
}

// serverCredential returns the identity to run the server as when this
// process runs as root (the server refuses root): the "mysql" system
// user, as a credential to chown with and the name for --user.
func serverCredential() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, "", fmt.Errorf("mysqltest: MariaDB refuses to run as root and there is no mysql user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, "", err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, "", err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, u.Username, nil
}

// removeStale deletes the server folders under dir that test binaries
// killed before Main could clean up left behind (their servers died with
// them: Pdeathsig): those whose server no longer runs, untouched for
// longer than age, as a new one may still be installing.
func removeStale(dir string, age time.Duration) {
	folders, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*"))
	for _, f := range folders {
		if b, err := os.ReadFile(filepath.Join(f, "mysqld.pid")); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
		}
		if fi, err := os.Stat(f); err == nil && time.Since(fi.ModTime()) > age {
			_ = os.RemoveAll(f)
		}
	}
}
