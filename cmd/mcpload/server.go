package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/lib/pq"

	"github.com/askbi/askbi/internal/haproxy"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/internal/proccpu"
)

// instance is one running reference-server process.
type instance struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// target is the reference server under load: its process, the
// PostgreSQL cluster it uses, and what the credentials file says.
type target struct {
	dir     string
	cluster *pgtest.Cluster
	pgData  string
	proc    *exec.Cmd
	exited  chan struct{}
	debug   string // base URL of -debug-addr
	monitor *sql.DB
	// others are the instances besides the first (-instances), and lb the
	// HAProxy in front of all of them; the figures are the first's.
	others []instance
	lb     *haproxy.Proxy
	// roleCPU is the backends' CPU by role when the statements were
	// reset (-statements).
	roleCPU map[string]time.Duration
	creds   struct {
		BaseURL    string `json:"base_url"`
		MCPURL     string `json:"mcp_url"`
		Warehouse  string `json:"warehouse_database_url"`
		Principals []struct {
			Name   string   `json:"name"`
			Scopes []string `json:"scopes"`
			APIKey string   `json:"api_key"`
		} `json:"principals"`
	}
}

// startTarget starts a PostgreSQL cluster in a new folder, builds the
// reference server (unless bin is set) and starts it on that cluster
// (-database-url) with its debug endpoint, a rate limit that does not
// get in the way of the load, and extra flags. With instances above 1 it
// starts that many on the one database, behind HAProxy, whose URL is
// their -public-url.
func startTarget(ctx context.Context, bin string, extra []string, instances int) (_ *target, err error) {
	t := &target{}
	if t.dir, err = os.MkdirTemp("", "mcpload-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			t.stop()
		}
	}()
	// The postgres system user must reach the cluster folder.
	if err := os.Chmod(t.dir, 0o711); err != nil {
		return nil, err
	}
	t.cluster, err = pgtest.Start(ctx, filepath.Join(t.dir, "pg"), &pgtest.Options{Password: rand.Text()})
	if err != nil {
		return nil, err
	}
	t.pgData = filepath.Join(t.dir, "pg", "data")
	if err := t.cluster.CreateDatabase(ctx, "askbi"); err != nil {
		return nil, err
	}
	if t.monitor, err = sql.Open("postgres", t.cluster.URL("postgres")); err != nil {
		return nil, err
	}
	t.monitor.SetMaxOpenConns(1)
	if pgStatements {
		if _, err := t.monitor.ExecContext(ctx, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"); err != nil {
			return nil, err
		}
		if err := t.pgCtl("restart", "-m", "fast", "-w"); err != nil {
			return nil, err
		}
		if _, err := t.monitor.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return nil, err
		}
	}

	if bin == "" {
		bin = filepath.Join(t.dir, "refserver")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/refserver")
		build.Dir, build.Stdout, build.Stderr = moduleRoot(), os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build the reference server: %w", err)
		}
	}
	debugAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	common := []string{"-database-url", t.cluster.URL("askbi"), "-data-dir", filepath.Join(t.dir, "data"),
		"-demo-sign-in=false", "-rate", "1000000", "-rate-burst", "1000000"}
	var lbAddr string
	if instances > 1 {
		if lbAddr, err = haproxy.Listen(); err != nil {
			return nil, err
		}
		common = append(common, "-public-url", "http://"+lbAddr)
	}
	var addrs []string
	for i := range max(instances, 1) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs = append(addrs, addr)
		args := append([]string{"-addr", addr}, common...)
		if i == 0 {
			args = append(args, "-debug-addr", debugAddr)
		}
		cmd, exited, err := t.launch(ctx, bin, append(args, extra...), i)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			t.proc, t.exited = cmd, exited
		} else {
			t.others = append(t.others, instance{cmd, exited})
		}
	}
	t.debug = "http://" + debugAddr
	if instances > 1 {
		if t.lb, err = haproxy.Start(ctx, t.dir, lbAddr, addrs); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// launch starts instance i of the reference server with args and waits
// until it serves; the first also writes the credentials file.
func (t *target) launch(ctx context.Context, bin string, args []string, i int) (*exec.Cmd, chan struct{}, error) {
	credsPath := filepath.Join(t.dir, fmt.Sprintf("creds-%d.json", i))
	cmd := exec.Command(bin, append(args, "-credentials-file", credsPath)...)
	logf, err := os.Create(filepath.Join(t.dir, fmt.Sprintf("refserver-%d.log", i)))
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	addr := args[1] // -addr
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			return nil, nil, fmt.Errorf("the reference server exited; see %s", logf.Name())
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if b, err := os.ReadFile(credsPath); err == nil && json.Unmarshal(b, &t.creds) == nil && t.creds.MCPURL != "" {
			if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return cmd, exited, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("the reference server did not start within 90 s; see %s", logf.Name())
		}
	}
}

// stop stops the server, then the cluster by its data folder: after a
// pg_ctl restart the postmaster is no longer the process pgtest started.
func (t *target) stop() {
	if t.lb != nil {
		t.lb.Stop()
	}
	for _, o := range t.others {
		o.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, o := range t.others {
		<-o.exited
	}
	if t.proc != nil && t.proc.Process != nil {
		t.proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-t.exited:
		case <-time.After(15 * time.Second):
			t.proc.Process.Kill()
			<-t.exited
		}
	}
	if t.monitor != nil {
		t.monitor.Close()
	}
	if t.cluster != nil {
		t.pgCtl("stop", "-m", "fast", "-w")
		t.cluster.Stop()
	}
	if t.dir != "" && os.Getenv("MCPLOAD_KEEP") == "" {
		os.RemoveAll(t.dir)
	}
}

// pgCtl runs pg_ctl on the cluster's data folder, as the postgres user
// when this process is root, logging the restarted server to a file (a
// daemon holding our pipe would keep the command from returning).
func (t *target) pgCtl(args ...string) error {
	bin, err := pgBin("pg_ctl")
	if err != nil {
		return err
	}
	args = append([]string{"-D", t.pgData, "-l", filepath.Join(t.dir, "pg", "restart.log")}, args...)
	cmd := exec.Command(bin, args...)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// pgBin finds a PostgreSQL program on PATH or in Debian's folders.
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) == 0 {
		return "", fmt.Errorf("%s not found", name)
	}
	return matches[len(matches)-1], nil
}

// snapshot is one reading of the server's resources.
type snapshot struct {
	Goroutines int
	HeapMB     float64 // Go heap in use after a GC
	RSSMB      float64
	PeakRSSMB  float64 // VmHWM: the process's peak RSS since start (or the last reset)
	OpenFiles  int
	DBConns    int // backends on the server's database (pg_stat_activity)
}

func (s snapshot) String() string {
	return fmt.Sprintf("goroutines %d, Go heap %.1f MB, RSS %.1f MB (peak %.1f), open files %d, database connections %d",
		s.Goroutines, s.HeapMB, s.RSSMB, s.PeakRSSMB, s.OpenFiles, s.DBConns)
}

// snapshot reads goroutines and the heap (after a GC) from the debug
// endpoint, RSS and open files from /proc, and connections from
// pg_stat_activity.
func (t *target) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	body, err := get(t.debug + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return s, err
	}
	first, _, _ := strings.Cut(body, "\n")
	if _, err := fmt.Sscanf(first, "goroutine profile: total %d", &s.Goroutines); err != nil {
		return s, fmt.Errorf("goroutine profile: %q", first)
	}
	if body, err = get(t.debug + "/debug/pprof/heap?gc=1&debug=1"); err != nil {
		return s, err
	}
	if v, ok := field(body, "# HeapAlloc = "); ok {
		s.HeapMB = float64(v) / 1e6
	}
	s.RSSMB, s.PeakRSSMB = t.rss()
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", t.proc.Process.Pid))
	s.OpenFiles = len(fds)
	err = t.monitor.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = 'askbi' AND pid <> pg_backend_pid()`).Scan(&s.DBConns)
	if err != nil {
		s.DBConns = -1
	}
	return s, nil
}

// rss returns the process's VmRSS and VmHWM in MB.
func (t *target) rss() (rss, peak float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", t.proc.Process.Pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb float64
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %f kB", &kb); n == 1 {
			rss = kb / 1000
		}
		if n, _ := fmt.Sscanf(sc.Text(), "VmHWM: %f kB", &kb); n == 1 {
			peak = kb / 1000
		}
	}
	return rss, peak
}

// settleRSS waits until the server's RSS has stopped falling (the Go
// runtime returns freed memory to the system gradually, and the start
// peaks at several hundred MB), at most limit, so that a "before" RSS is
// the server's resting size.
func (t *target) settleRSS(limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, _ := t.rss()
	for time.Now().Before(deadline) {
		time.Sleep(5 * time.Second)
		now, _ := t.rss()
		if last-now < 2 {
			return
		}
		last = now
	}
}

// resetPeak resets VmHWM, so the next reading is the peak from now on.
func (t *target) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", t.proc.Process.Pid), []byte("5"), 0)
}

func field(body, prefix string) (int64, bool) {
	i := strings.Index(body, prefix)
	if i < 0 {
		return 0, false
	}
	rest, _, _ := strings.Cut(body[i+len(prefix):], "\n")
	v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
	return v, err == nil
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), err
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// moduleRoot is the folder of the askbi go.mod.
func moduleRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "."
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

var errNoKey = errors.New("no principal with the scopes needed")

// key returns the API key of the named principal.
func (t *target) key(name string) (string, error) {
	for _, p := range t.creds.Principals {
		if p.Name == name {
			return p.APIKey, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNoKey, name)
}

// resetStatements clears pg_stat_statements (-statements) and notes the
// CPU time of every backend by role.
func (t *target) resetStatements(ctx context.Context) error {
	if _, err := t.monitor.ExecContext(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
		return err
	}
	var err error
	t.roleCPU, err = t.backendCPU(ctx)
	return err
}

// backendCPU is the CPU time of the live backends, by role.
func (t *target) backendCPU(ctx context.Context) (map[string]time.Duration, error) {
	rows, err := t.monitor.QueryContext(ctx, `SELECT pid, coalesce(usename, backend_type) FROM pg_stat_activity`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cpu := map[string]time.Duration{}
	for rows.Next() {
		var pid int
		var role string
		if err := rows.Scan(&pid, &role); err != nil {
			return nil, err
		}
		cpu[role] += proccpu.Of(pid, false)
	}
	return cpu, rows.Err()
}

// printStatements prints the statements PostgreSQL ran since
// resetStatements, the most time first, with their count and time per
// tool call (calls of them).
func (t *target) printStatements(ctx context.Context, calls int) error {
	rows, err := t.monitor.QueryContext(ctx, `SELECT s.calls, s.total_exec_time + s.total_plan_time, coalesce(d.datname, ''), s.query
		FROM pg_stat_statements s LEFT JOIN pg_database d ON d.oid = s.dbid
		WHERE s.query NOT LIKE '%pg_stat_statements%' ORDER BY 2 DESC LIMIT 25`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Printf("PostgreSQL statements during the load (pg_stat_statements), per tool call of %d:\n", calls)
	var total float64
	for rows.Next() {
		var n int64
		var ms float64
		var db, q string
		if err := rows.Scan(&n, &ms, &db, &q); err != nil {
			return err
		}
		total += ms
		q = strings.Join(strings.Fields(q), " ")
		if len(q) > 110 {
			q = q[:110] + "…"
		}
		fmt.Printf("  %6.2f × %6.3f ms  %-8s %s\n", float64(n)/float64(max(calls, 1)), ms/float64(max(n, 1)), db, q)
	}
	fmt.Printf("  statement time per tool call, planning included: %.3f ms\n", total/float64(max(calls, 1)))
	if err := rows.Err(); err != nil {
		return err
	}
	after, err := t.backendCPU(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("PostgreSQL CPU per tool call by role (backends alive throughout):")
	for role, c := range after {
		if d := c - t.roleCPU[role]; d > 0 {
			fmt.Printf(" %s %.3f ms;", role, float64(d)/float64(time.Millisecond)/float64(max(calls, 1)))
		}
	}
	fmt.Println()
	return nil
}
