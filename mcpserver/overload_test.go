package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
)

// blockingSource holds every query until its context ends or release is
// closed, and reports when each query started and ended.
type blockingSource struct {
	started chan struct{}
	ended   chan error
	release chan struct{}
}

func newBlockingSource() *blockingSource {
	return &blockingSource{started: make(chan struct{}, 64), ended: make(chan error, 64), release: make(chan struct{})}
}

// mustCancel fails t unless the next query to end ends cancelled within
// d of what (the cause it names).
func (s *blockingSource) mustCancel(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-s.ended:
		if err == nil {
			t.Fatal("the query finished instead of being cancelled")
		}
	case <-time.After(d):
		t.Fatalf("the query still runs %s after %s", d, what)
	}
}

func (b *blockingSource) Query(ctx context.Context, q dataexec.Query) (*dataexec.Table, error) {
	b.started <- struct{}{}
	select {
	case <-b.release:
		b.ended <- nil
		return &dataexec.Table{Columns: []string{"week", "signups"}, Rows: [][]any{{"2026-11-02", int64(1)}}}, nil
	case <-ctx.Done():
		b.ended <- ctx.Err()
		return nil, ctx.Err()
	}
}

// serve starts a second MCP server over e's workspace with authn, opts
// and executor options, and returns its URL.
func (e *env) serve(t *testing.T, authn access.TokenLookup, opts *mcpserver.Options, xo *dataexec.Options) string {
	t.Helper()
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source, "conn_globex": e.source}, xo)
	gate := access.NewGate(e.checker, access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000}))
	if authn == nil {
		authn = e.keys.Verify
	}
	hs := httptest.NewServer(mcpserver.New(exec, gate, authn, opts))
	t.Cleanup(hs.Close)
	return hs.URL
}

// post sends one JSON-RPC body with token and returns the answer and its
// body.
func post(t *testing.T, ctx context.Context, url, token, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(mcpRequest(ctx, url, token, body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

const runSignups = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_signups","refresh":true}}}`

// runSignupsWithout is runSignups without week w: another query, where
// two identical ones at once would share one (single flight).
func runSignupsWithout(w string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_dataset","arguments":{"dataset_id":"ds_signups","refresh":true,` +
		`"filters":[{"field":"week","op":"ne","value":"` + w + `"}]}}}`
}

// rpcError is the JSON-RPC error of an answer the HTTP layer refused.
type rpcError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Code       string `json:"code"`
			Message    string `json:"message"`
			RetryAfter int    `json:"retry_after"`
		} `json:"data"`
	} `json:"error"`
}

// TestAuthenticationUnavailable: while the credential store is down,
// /mcp answers 503 with Retry-After and a JSON-RPC error with code
// unavailable, and logs the outage once and its end once.
func TestAuthenticationUnavailable(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	var down atomic.Bool
	authn := func(ctx context.Context, tok string) (access.Principal, error) {
		if down.Load() {
			return access.Principal{}, askbi.Errorf(askbi.Unavailable, "the database is unavailable")
		}
		return e.keys.Verify(ctx, tok)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) }), nil))
	url := e.serve(t, authn, &mcpserver.Options{Logger: log}, nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	down.Store(true)
	for range 5 {
		resp, body := post(t, context.Background(), url, token, list)
		var re rpcError
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &re) != nil || re.Error.Data.Code != "unavailable" {
			t.Fatalf("while down: %d %v %s; want 503, Retry-After and a JSON-RPC error with code unavailable", resp.StatusCode, resp.Header, body)
		}
	}
	down.Store(false)
	for range 3 {
		if resp, body := post(t, context.Background(), url, token, list); resp.StatusCode != http.StatusOK {
			t.Fatalf("after recovery: %d %s", resp.StatusCode, body)
		}
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n, m := strings.Count(out, "level=ERROR"), strings.Count(out, "authentication recovered"); n != 1 || m != 1 {
		t.Errorf("logged %d ERROR lines and %d recoveries for one outage of 5 requests, want 1 and 1:\n%s", n, m, out)
	}
}

// downKeyStore is a key store that fails with unavailable while down.
type downKeyStore struct {
	access.KeyStore
	down *atomic.Bool
}

func (s downKeyStore) ByPrefix(ctx context.Context, prefix string) (access.Key, error) {
	if s.down.Load() {
		return access.Key{}, askbi.Errorf(askbi.Unavailable, "the database is unavailable")
	}
	return s.KeyStore.ByPrefix(ctx, prefix)
}

// TestAuthenticationOutageLogsOnce: while the key store is down, a key
// the cache still answers is served, and that says nothing about the
// store: alternating it with a key the store must answer logs the
// outage once, not an outage and a recovery per request. The recovery
// is logged once, when the store answers again, and a second outage is
// logged again.
func TestAuthenticationOutageLogsOnce(t *testing.T) {
	e := newEnv(t, nil, "")
	var down atomic.Bool
	keys := access.NewKeys(downKeyStore{KeyStore: access.NewMemoryKeyStore(), down: &down}, e.dir, nil)
	owner, err := e.checker.Live(context.Background(), access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	key := func() string {
		secret, _, err := keys.Create(context.Background(), owner, access.KeyRequest{Name: "k", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	cached, uncached, later := key(), key(), key()
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) }), nil))
	url := e.serve(t, keys.Verify, &mcpserver.Options{Logger: log}, nil)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	want := func(token string, status int) {
		t.Helper()
		if resp, body := post(t, context.Background(), url, token, list); resp.StatusCode != status {
			t.Fatalf("status %d %.200s, want %d", resp.StatusCode, body, status)
		}
	}
	counts := func() (errors, recoveries int) {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(logs.String(), "level=ERROR"), strings.Count(logs.String(), "authentication recovered")
	}
	want(cached, http.StatusOK) // now in the key cache

	down.Store(true)
	for range 5 {
		want(cached, http.StatusOK)
		want(uncached, http.StatusServiceUnavailable)
	}
	if n, m := counts(); n != 1 || m != 0 {
		t.Errorf("during the outage: %d ERROR lines and %d recoveries, want 1 and 0:\n%s", n, m, logs.String())
	}
	down.Store(false)
	want(cached, http.StatusOK)
	if n, m := counts(); n != 1 || m != 0 {
		t.Errorf("a cached key after the store is back: %d ERROR lines and %d recoveries, want 1 and 0", n, m)
	}
	want(uncached, http.StatusOK)
	want(cached, http.StatusOK)
	if n, m := counts(); n != 1 || m != 1 {
		t.Errorf("after the store answered: %d ERROR lines and %d recoveries, want 1 and 1:\n%s", n, m, logs.String())
	}
	down.Store(true)
	want(later, http.StatusServiceUnavailable)
	want(cached, http.StatusOK)
	want(later, http.StatusServiceUnavailable)
	if n, m := counts(); n != 2 || m != 1 {
		t.Errorf("a second outage: %d ERROR lines and %d recoveries, want 2 and 1:\n%s", n, m, logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestClientHangUpCancelsTheQuery: a client that hangs up mid-call
// cancels the source query, although the go-sdk detaches the handler's
// context from the request. The 5 s bound is generous and far below the
// executor's 15 s deadline, which would end the query otherwise.
func TestClientHangUpCancelsTheQuery(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := e.serve(t, nil, nil, nil)
	ctx, hangUp := context.WithCancel(context.Background())
	go func() {
		if resp, err := http.DefaultClient.Do(mcpRequest(ctx, url, token, runSignups)); err == nil {
			resp.Body.Close()
		}
	}()
	<-src.started
	hangUp()
	src.mustCancel(t, 5*time.Second, "the client hung up")
}

// TestInFlightBound: past MaxInFlight requests of one principal, the next
// is refused at once with 429, Retry-After and code rate_limited; another
// principal is still served, and so is the first once its calls end.
func TestInFlightBound(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	alice2 := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	carol := e.MustKey(t, "carol", "globex", access.AllProjects(), access.AllScopes...)
	url := e.serve(t, nil, &mcpserver.Options{MaxInFlight: 2}, nil)
	var wg sync.WaitGroup
	for i, tok := range []string{alice, alice2} {
		wg.Add(1)
		go func() { defer wg.Done(); post(t, context.Background(), url, tok, runSignupsWithout(fmt.Sprint(i))) }()
		<-src.started
	}
	resp, body := post(t, context.Background(), url, alice, runSignups)
	var re rpcError
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || json.Unmarshal(body, &re) != nil || re.Error.Data.Code != "rate_limited" {
		t.Errorf("third call of alice = %d %v %s; want 429, Retry-After 1, rate_limited", resp.StatusCode, resp.Header, body)
	}
	if resp, body := post(t, context.Background(), url, carol, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("carol while alice is at her bound = %d %s", resp.StatusCode, body)
	}
	close(src.release)
	wg.Wait()
	if resp, body := post(t, context.Background(), url, alice, runSignups); resp.StatusCode != http.StatusOK {
		t.Errorf("alice after her calls ended = %d %s", resp.StatusCode, body)
	}
}

// TestBusySourceRetryAfter: a call past the executor's concurrency bound
// is a rate_limited tool result with retry_after, and its HTTP answer
// carries Retry-After.
func TestBusySourceRetryAfter(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := e.serve(t, nil, nil, &dataexec.Options{Concurrency: dataexec.ConcurrencyOptions{MaxPerPrincipal: 1}})
	done := make(chan struct{})
	go func() { defer close(done); post(t, context.Background(), url, alice, runSignups) }()
	<-src.started
	resp, body := post(t, context.Background(), url, alice, runSignupsWithout("x"))
	var res struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Code       string `json:"code"`
				RetryAfter int    `json:"retry_after"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil || !res.Result.IsError || res.Result.StructuredContent.Code != "rate_limited" ||
		res.Result.StructuredContent.RetryAfter != 1 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("second call = %d %v %s; want a rate_limited tool result with retry_after 1 and Retry-After: 1", resp.StatusCode, resp.Header, body)
	}
	close(src.release)
	<-done
}

// TestHostileBodies: a 10 MB body is refused with 413 and deeply nested
// JSON with 400, and the server keeps serving.
func TestHostileBodies(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	reader := e.MustKey(t, "alice", "acme", access.AllProjects(), access.ScopeDataRead)
	url := e.serve(t, nil, nil, nil)
	before := e.source.calls
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":"` + strings.Repeat("a", 10<<20) + `"}}}`
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_workspace","arguments":{"query":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}}}`
	for _, tok := range []string{token, reader} { // reader's calls pass the step-up check's own read
		if resp, body := post(t, context.Background(), url, tok, huge); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("10 MB body = %d %.200s, want 413", resp.StatusCode, body)
		}
		if resp, body := post(t, context.Background(), url, tok, deep); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("deeply nested body = %d %.200s, want 400", resp.StatusCode, body)
		}
	}
	if e.source.calls != before {
		t.Errorf("hostile bodies ran %d queries", e.source.calls-before)
	}
	if resp, body := post(t, context.Background(), url, token, runSignups); resp.StatusCode != http.StatusOK {
		t.Errorf("a normal call afterwards = %d %s", resp.StatusCode, body)
	}
}
