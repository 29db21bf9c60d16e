package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/haproxy"
	"github.com/askbi/askbi/internal/pgtest"
)

// mustProxy starts HAProxy on addr in front of backends, or skips loudly
// where it is not installed (fails when ASKBI_REQUIRE_HAPROXY=1).
func mustProxy(t *testing.T, addr string, backends []string) *haproxy.Proxy {
	t.Helper()
	p, err := haproxy.Start(t.Context(), t.TempDir(), addr, backends)
	if errors.Is(err, haproxy.ErrNotInstalled) {
		msg := "SKIPPING: " + err.Error()
		if os.Getenv("ASKBI_REQUIRE_HAPROXY") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return p
}

// retrying sends a request until it gets an answer that is not a
// transient refusal: a closed or refused connection, or 502, 503 or 504
// (an instance died or drains), as a careful client does. It returns the
// last answer and how many tries it took.
func retrying(c *http.Client, req func() *http.Request) (status int, body []byte, tries int, err error) {
	for tries = 1; ; tries++ {
		resp, err := c.Do(req())
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		transient := err != nil || status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
		if !transient || tries == 20 {
			return status, body, tries, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBehindHAProxy: three instances on one database behind HAProxy take
// a mixed load (MCP tool calls, memory adds, and one approval approved 60
// times at once), and one instance is killed (kill -9) in the middle.
// Clients that retry on a closed connection or a 502/503 all succeed; the
// approval runs its call once, and every caller gets its receipt; no
// memory add that was answered 201 is lost.
func TestBehindHAProxy(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	proxyAddr, err := haproxy.Listen()
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + proxyAddr
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir(), "-public-url", public, "-rate", "1000", "-rate-burst", "10000"}
	bin := MustBinary(t)
	var procs []*proc
	var backends []string
	for range 3 {
		addr, err := haproxy.Listen()
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, MustStart(t, bin, nil, append(args, "-addr", addr)...))
		backends = append(backends, addr)
	}
	lb := mustProxy(t, proxyAddr, backends)
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	front := procs[1] // its client reaches the proxy: base_url is the public URL
	if front.URL != lb.URL {
		t.Fatalf("the instances' base URL is %s, want the proxy's %s", front.URL, lb.URL)
	}
	hc := &http.Client{Timeout: time.Minute}

	// The approval, asked for before the load, and the catalog's DELETE
	// statements counted.
	alice := front.session(t, "alice")
	conv := front.MustConversation(t, alice)
	e := front.MustStartDelete(t, alice, conv)
	deletes := mustCountDeletes(t, db)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mcpCalls, mcpRetried atomic.Int64
	var failures []string
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// MCP clients, one per principal.
	for _, who := range []string{"alice", "bob", "vic", "carol"} {
		key, dataset := front.apiKey(t, who), map[string]string{"carol": "ds_tickets"}[who]
		if dataset == "" {
			dataset = "ds_weekly_signups"
		}
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tool, args := "run_dataset", map[string]any{"dataset_id": dataset}
				if i%3 == 0 {
					tool, args = "search_workspace", map[string]any{"query": "signups"}
				}
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
				status, b, tries, err := retrying(hc, func() *http.Request {
					r, _ := http.NewRequest("POST", lb.URL+"/mcp", bytes.NewReader(body))
					r.Header.Set("Authorization", "Bearer "+key)
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("Accept", "application/json, text/event-stream")
					return r
				})
				mcpCalls.Add(1)
				if tries > 1 {
					mcpRetried.Add(1)
				}
				if err != nil || status != http.StatusOK || bytes.Contains(b, []byte(`"isError":true`)) {
					fail("%s %s: %d %.200s %v (after %d tries)", who, tool, status, b, err, tries)
				}
			}
		})
	}
	// Memory adds: every one answered 201 must be there afterwards.
	answered := map[string][]string{}
	for _, who := range []string{"bob", "vic"} {
		tok := front.session(t, who)
		wg.Go(func() {
			for i := 0; i < 40; i++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("%s note %d", who, i)
				body, _ := json.Marshal(map[string]string{"text": text})
				status, b, _, err := retrying(hc, func() *http.Request {
					r, _ := http.NewRequest("POST", lb.URL+"/ai/memory", bytes.NewReader(body))
					r.Header.Set("Authorization", "Bearer "+tok)
					r.Header.Set("Content-Type", "application/json")
					return r
				})
				switch {
				case err == nil && status == http.StatusCreated:
					mu.Lock()
					answered[who] = append(answered[who], text)
					mu.Unlock()
				case err == nil && strings.Contains(string(b), `"too_large"`): // a retry of an add that was stored
				default:
					fail("%s memory add: %d %.200s %v", who, status, b, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}

	time.Sleep(3 * time.Second)
	// The approval, 60 times at once, while one instance is killed.
	approve := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID + "/approve"
	approveBody, _ := json.Marshal(map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments})
	receipts := make([][]byte, 60)
	var awg sync.WaitGroup
	for i := range receipts {
		awg.Go(func() {
			status, b, tries, err := retrying(hc, func() *http.Request {
				r, _ := http.NewRequest("POST", lb.URL+approve, bytes.NewReader(approveBody))
				r.Header.Set("Authorization", "Bearer "+alice)
				r.Header.Set("Content-Type", "application/json")
				return r
			})
			if err != nil || status != http.StatusOK {
				fail("approve %d: %d %.200s %v (after %d tries)", i, status, b, err, tries)
			}
			receipts[i] = b
		})
	}
	time.Sleep(200 * time.Millisecond)
	procs[0].kill()
	killed := time.Now()
	awg.Wait()
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d MCP calls, %d of them retried after the kill at %s", mcpCalls.Load(), mcpRetried.Load(), killed.Format("15:04:05.000"))

	for _, f := range failures {
		t.Error(f)
	}
	var first *ask.ToolEvent
	for i, b := range receipts {
		var out struct{ Events []ask.Event }
		json.Unmarshal(b, &out)
		var got *ask.ToolEvent
		for _, ev := range out.Events {
			if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "delete_dashboard" {
				got = ev.Tool
			}
		}
		switch {
		case got == nil:
			t.Errorf("approve %d: no receipt of delete_dashboard in %.300s", i, b)
		case first == nil:
			first = got
		case got.Summary != first.Summary || !bytes.Equal(got.Result, first.Result):
			t.Errorf("approve %d saw receipt %+v, another saw %+v", i, got, first)
		}
	}
	if n := deletes(); n != 2 {
		t.Errorf("the catalog saw %d DELETE statements, want 2: the approved call ran once", n)
	}
	for who, texts := range answered {
		var list struct{ Items []struct{ Text string } }
		front.MustDo(t, http.StatusOK, "GET", "/ai/memory", front.session(t, who), nil, &list)
		stored := map[string]bool{}
		for _, it := range list.Items {
			stored[it.Text] = true
		}
		for _, text := range texts {
			if !stored[text] {
				t.Errorf("memory %q was answered 201 and is gone", text)
			}
		}
		t.Logf("%s: %d adds answered, %d memories stored", who, len(texts), len(list.Items))
	}
}
