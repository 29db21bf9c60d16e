package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// BenchmarkServerRSS runs the reference server as a child process on its
// private PostgreSQL and measures its memory from /proc: start-rss-MB
// once it answers, peak-rss-MB (VmHWM) after the load. Each op is one wave
// of 32 concurrent MCP explore_data previews of a 20,000-row table of
// 3 KB rows (capped by the executor), split between alice (Acme) and carol
// (Globex) so that the default rate limit (burst 120 per key) lets three
// waves through:
//
//	go test -run '^$' -bench ServerRSS -benchtime 3x ./examples/refserver
func BenchmarkServerRSS(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "refserver")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// The private cluster may run as the postgres user, who must reach
	// its folder: b.TempDir is private to us.
	dataDir, err := os.MkdirTemp("", "askbi-rss-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	if err := os.Chmod(dataDir, 0o711); err != nil {
		b.Fatal(err)
	}
	credsFile := filepath.Join(dir, "creds.json")
	ctx, cancel := context.WithCancel(context.Background())
	// The overload bounds are lifted so that every preview of a wave
	// runs (the pool queues them): the worst case for memory.
	cmd := exec.CommandContext(ctx, bin, "-addr", addr, "-data-dir", filepath.Join(dataDir, "data"), "-credentials-file", credsFile,
		"-max-queries-per-principal", "64", "-max-queries-per-team", "64", "-max-queries-per-source", "64", "-mcp-max-in-flight", "64")
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }() // SIGINT: the server stops its cluster
	var creds credentials
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if raw, err := os.ReadFile(credsFile); err == nil && json.Unmarshal(raw, &creds) == nil {
			if resp, err := http.Get("http://" + addr + "/"); err == nil {
				resp.Body.Close()
				break
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logFile.Name())
			b.Fatalf("the reference server did not start:\n%s", out)
		}
	}
	if creds.WarehouseDatabaseURL == "" {
		b.Skip("SKIPPING BenchmarkServerRSS: the reference server runs on in-memory state (no PostgreSQL installed)")
	}
	time.Sleep(2 * time.Second) // let start-up garbage be collected
	start := procStatusKB(b, cmd.Process.Pid, "VmRSS")
	wh := sqlx.MustOpen("postgres", creds.WarehouseDatabaseURL)
	wh.MustExec(`CREATE TABLE warehouse.wide AS SELECT g AS id, repeat(md5(g::text), 96) AS body FROM generate_series(1, 20000) g`)
	wh.Close()
	keys := map[string]string{}
	for _, p := range creds.Principals {
		keys[p.Name] = p.APIKey
	}
	callers := []struct{ key, conn string }{{keys["alice"], "conn_acme_wh"}, {keys["carol"], "conn_globex_wh"}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	call := func(i int) error {
		c := callers[i%len(callers)]
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explore_data","arguments":{"operation":"preview","connection_id":%q,"sql":"SELECT * FROM warehouse.wide ORDER BY id"}}}`, c.conn)
		req, _ := http.NewRequest("POST", creds.MCPURL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), `"rows"`) || strings.Contains(string(out), `"isError":true`) {
			return fmt.Errorf("status %d: %.300s", resp.StatusCode, out)
		}
		return nil
	}
	for b.Loop() {
		var wg sync.WaitGroup
		errs := make(chan error, 32)
		for i := range 32 {
			wg.Go(func() {
				if err := call(i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(start)/1024, "start-rss-MB")
	b.ReportMetric(float64(procStatusKB(b, cmd.Process.Pid, "VmHWM"))/1024, "peak-rss-MB")
}

// procStatusKB reads a kB field of /proc/pid/status.
func procStatusKB(b testing.TB, pid int, field string) int {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
