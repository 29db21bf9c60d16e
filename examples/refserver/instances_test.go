package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
)

// The tests in this file run the reference server as real processes: each
// test builds the binary once (the build cache makes later builds a link)
// and starts its processes with their own addresses on one shared
// -database-url.

// MustBinary builds the reference server into a folder of tb's and
// returns its path.
func MustBinary(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "refserver")
	if out, err := exec.Command("go", "build", "-o", path, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}

// proc is one running reference-server process.
type proc struct {
	chattest.Client
	cmd    *exec.Cmd
	creds  credentials
	stderr *bytes.Buffer
	done   chan struct{}
}

// MustStart starts the reference server binary bin on a free port with args (and
// -addr, -credentials-file) and waits until it serves.
func MustStart(tb testing.TB, bin string, env []string, args ...string) *proc {
	tb.Helper()
	p, err := start(tb, bin, env, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// start is MustStart for any goroutine: it returns what went wrong.
func start(tb testing.TB, bin string, env []string, args ...string) (*proc, error) {
	credsFile := filepath.Join(tb.TempDir(), "creds.json")
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-credentials-file", credsFile}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = &syncWriter{w: p.stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 100) // the startup lines; later ones are dropped
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		cmd.Wait()
	}()
	tb.Cleanup(func() { p.stop() })
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case line := <-lines:
			if !strings.Contains(line, "credentials: "+credsFile) {
				continue
			}
			b, err := os.ReadFile(credsFile)
			if err == nil {
				err = json.Unmarshal(b, &p.creds)
			}
			if err != nil {
				return nil, fmt.Errorf("credentials file: %v", err)
			}
			p.Client = chattest.Client{URL: p.creds.BaseURL, HTTP: &http.Client{Timeout: time.Minute}}
			// The process itself answers at the last -addr with a port;
			// base_url may be a load balancer's (-public-url).
			health := p.URL
			for i := range args[:max(len(args)-1, 0)] {
				if args[i] == "-addr" && !strings.HasSuffix(args[i+1], ":0") {
					health = "http://" + args[i+1]
				}
			}
			for range 200 {
				if resp, err := http.Get(health + "/healthz"); err == nil {
					resp.Body.Close()
					return p, nil
				}
				time.Sleep(20 * time.Millisecond)
			}
			return nil, fmt.Errorf("the server at %s does not answer", p.URL)
		case <-p.done:
			return nil, fmt.Errorf("refserver exited during startup:\n%s", p.stderrText())
		case <-timeout:
			return nil, fmt.Errorf("refserver did not start:\n%s", p.stderrText())
		}
	}
}

// stop ends the process with SIGTERM (a clean shutdown) and waits.
func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process with SIGKILL (kill -9) and waits.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) stderrText() string {
	w := p.cmd.Stderr.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.stderr.String()
}

// session returns the session token of the named demo principal on p.
func (p *proc) session(tb testing.TB, name string) string {
	tb.Helper()
	return MustPrincipal(tb, p.creds, name).SessionToken
}

// post sends a JSON request from any goroutine and returns the status
// and body.
func (p *proc) post(path, token string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", p.URL+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// mustCountDeletes counts the DELETE statements on the workspace catalog
// from now on, and returns a reader of the count. It counts with a
// sequence, since a DeleteDashboard that finds nothing rolls back and a
// sequence does not: one DeleteDashboard that runs issues two (the
// dashboard, then its charts).
func mustCountDeletes(t *testing.T, db *sqlx.DB) func() int64 {
	t.Helper()
	for _, q := range []string{
		`CREATE SEQUENCE test_catalog_deletes`,
		`CREATE FUNCTION test_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN PERFORM nextval('test_catalog_deletes'); RETURN NULL; END $$`,
		`CREATE TRIGGER test_count_delete AFTER DELETE ON catalog_entities
		 FOR EACH STATEMENT EXECUTE FUNCTION test_count_delete()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return func() int64 {
		t.Helper()
		var seq struct {
			LastValue int64 `db:"last_value"`
			IsCalled  bool  `db:"is_called"`
		}
		if err := db.Get(&seq, `SELECT last_value, is_called FROM test_catalog_deletes`); err != nil {
			t.Fatal(err)
		}
		if !seq.IsCalled {
			return 0
		}
		return seq.LastValue
	}
}

// MustTwoInstances starts two reference-server processes on one new
// database, one after the other, sharing a data folder (so they share the
// development memory key and OAuth secret, as instances behind one load
// balancer share ASKBI_MEMORY_KEY).
func MustTwoInstances(t *testing.T) (a, b *proc, db *sqlx.DB) {
	t.Helper()
	dbURL := pgtest.MustDatabase(t)
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir()}
	bin := MustBinary(t)
	a = MustStart(t, bin, nil, args...)
	b = MustStart(t, bin, nil, args...)
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return a, b, db
}

// TestTwoInstances runs two processes on one database.
func TestTwoInstances(t *testing.T) {
	a, b, db := MustTwoInstances(t)

	// An approval approved 100 times at once, half through each process,
	// runs its call once, and every caller gets the same receipt.
	t.Run("ApprovalOnce", func(t *testing.T) {
		tokA, tokB := a.session(t, "alice"), b.session(t, "alice")
		conv := a.MustConversation(t, tokA)
		e := a.MustStartDelete(t, tokA, conv)
		deletes := mustCountDeletes(t, db)
		path := "/ai/conversations/" + conv + "/approvals/" + e.Tool.ApprovalID + "/approve"
		body := map[string]any{"tool": "delete_dashboard", "arguments": e.Tool.Arguments}
		const n = 100
		type answer struct {
			status int
			body   []byte
			err    error
		}
		answers := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			p, tok := a, tokA
			if i%2 == 1 {
				p, tok = b, tokB
			}
			wg.Go(func() {
				// As a client should, retry a transient refusal (503 or
				// 429 under this load): it must not have used the
				// approval, so a retry still gets the one receipt.
				var r answer
				for try := 0; try < 10; try++ {
					r.status, r.body, r.err = p.post(path, tok, body)
					if r.err != nil || r.status != http.StatusServiceUnavailable && r.status != http.StatusTooManyRequests {
						break
					}
					time.Sleep(time.Second)
				}
				answers[i] = r
			})
		}
		wg.Wait()
		var first *ask.ToolEvent
		for i, r := range answers {
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("approve %d (process %d): %d %s %v", i, i%2, r.status, r.body, r.err)
				continue
			}
			var out struct{ Events []ask.Event }
			json.Unmarshal(r.body, &out)
			var got *ask.ToolEvent
			for _, ev := range out.Events {
				if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "delete_dashboard" {
					got = ev.Tool
				}
			}
			switch {
			case got == nil:
				t.Errorf("approve %d: no tool.completed for delete_dashboard in %s", i, r.body)
			case first == nil:
				first = got
			case got.Summary != first.Summary || !bytes.Equal(got.Result, first.Result) || got.State != first.State:
				t.Errorf("approve %d saw receipt %+v, approve before saw %+v", i, got, first)
			}
		}
		if n := deletes(); n != 2 {
			t.Errorf("the catalog saw %d DELETE statements, want 2: the call ran once", n)
		}
	})

	// The memory limits (50 per user) hold across both processes: 60
	// adds at once, half through each, store exactly 50.
	t.Run("MemoryLimits", func(t *testing.T) {
		tokA, tokB := a.session(t, "bob"), b.session(t, "bob")
		const n = 60
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			p, tok := a, tokA
			if i%2 == 1 {
				p, tok = b, tokB
			}
			wg.Go(func() {
				status, body, err := p.post("/ai/memory", tok, map[string]string{"text": fmt.Sprintf("Note %d", i)})
				if err != nil {
					t.Errorf("add %d: %v", i, err)
				}
				if status != http.StatusCreated && !strings.Contains(string(body), `"code":"too_large"`) {
					t.Errorf("add %d: %d %s, want 201 or too_large (the limit)", i, status, body)
				}
				statuses[i] = status
			})
		}
		wg.Wait()
		created := 0
		for _, s := range statuses {
			if s == http.StatusCreated {
				created++
			}
		}
		var list struct{ Items []json.RawMessage }
		b.MustDo(t, http.StatusOK, "GET", "/ai/memory", tokB, nil, &list)
		if created != 50 || len(list.Items) != 50 {
			t.Errorf("%d adds answered 201 and %d memories are stored, want 50 and 50", created, len(list.Items))
		}
	})

	// The per-principal rate limit is one limit across the processes on
	// the database: requests alternating between the two are refused
	// once the one budget (a burst of 120, then 10 per second) is spent,
	// not after two budgets' worth; and the refusal holds on both.
	t.Run("RateLimitShared", func(t *testing.T) {
		procs, toks := []*proc{a, b}, []string{a.session(t, "carol"), b.session(t, "carol")}
		ok := 0
		for i := 0; ; i++ {
			if i == 1000 {
				t.Fatal("1,000 requests in a row were never rate limited")
			}
			status, _, body := procs[i%2].Do(t, "GET", "/ai/memory", toks[i%2], nil)
			if status == http.StatusTooManyRequests {
				break
			}
			if status != http.StatusOK {
				t.Fatalf("request %d: %d %s", i, status, body)
			}
			ok++
		}
		if ok < 120 || ok > 160 {
			t.Errorf("%d requests alternating between the processes were served before the first 429; want the one burst of 120 and what refilled meanwhile, not two bursts", ok)
		}
		// Another user is not limited by carol's budget.
		if status, _, body := b.Do(t, "GET", "/ai/memory", b.session(t, "vic"), nil); status != http.StatusOK {
			t.Errorf("vic on B: %d %s, want 200", status, body)
		}
	})
}

// TestInstancesShareDemo: three instances started at the same moment on
// one database hand out the same demo credentials, claimed once; each
// accepts the others' sessions and keys; and an instance started later
// hands out the same ones again, revoking nothing the running ones
// handed out.
func TestInstancesShareDemo(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir()}
	bin := MustBinary(t)
	procs := make([]*proc, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { procs[i], errs[i] = start(t, bin, nil, args...) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	late := MustStart(t, bin, nil, args...)
	all := append(procs, late)
	for i, p := range all[1:] {
		if diff := cmp.Diff(all[0].creds.Principals, p.creds.Principals); diff != "" {
			t.Errorf("instance %d hands out other demo credentials than instance 0 (-0 +%d):\n%s", i+1, i+1, diff)
		}
	}
	for _, issuer := range all {
		for j, p := range all {
			if status, _, body := p.Do(t, "GET", "/ai/memory", issuer.session(t, "alice"), nil); status != http.StatusOK {
				t.Errorf("a session of %s on instance %d: %d %s", issuer.URL, j, status, body)
			}
			key := ""
			for _, c := range issuer.creds.Principals {
				if c.Name == "bob" {
					key = c.APIKey
				}
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
			if status, _, b := p.Do(t, "POST", "/mcp", key, json.RawMessage(body), "Accept", "application/json, text/event-stream"); status != http.StatusOK {
				t.Errorf("bob's key from %s on instance %d: %d %s", issuer.URL, j, status, b)
			}
		}
	}
}

// mcpPost sends one JSON-RPC request to p's /mcp with token, from any
// goroutine. An answer that is not a JSON-RPC answer is an error.
func (p *proc) mcpPost(token, method string, params any) (mcpAnswer, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest("POST", p.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		return mcpAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return mcpAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return mcpAnswer{}, err
	}
	a := mcpAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	var shape struct {
		Result, Error json.RawMessage
	}
	if err := json.Unmarshal(b, &shape); err != nil || len(shape.Result) == 0 && len(shape.Error) == 0 {
		return a, fmt.Errorf("not a JSON-RPC answer: %d %.300s", resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("answer %d %.300s: %v", resp.StatusCode, b, err)
	}
	return a, nil
}

// mcpCall calls tool on p's /mcp with token and returns the HTTP status
// and the answer's askbi error code ("" for a success). An answer that
// is not JSON-RPC fails t, but for the bearer check's 401, which the
// go-sdk answers in text.
func (p *proc) mcpCall(t *testing.T, token, tool string, args map[string]any) (int, string) {
	t.Helper()
	a, err := p.mcpPost(token, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil && a.status != http.StatusUnauthorized {
		t.Fatalf("%s on %s: %v", tool, p.URL, err)
	}
	return a.status, a.code()
}

// apiKey returns the API key of the named demo principal on p.
func (p *proc) apiKey(tb testing.TB, name string) string {
	tb.Helper()
	return MustPrincipal(tb, p.creds, name).APIKey
}

// TestRevocationEverywhere: a key revoked, a member removed or a role
// changed by any process on the database takes effect on every instance
// within 1 s, although each instance had just verified (and cached) the
// key: the revocation reaches the key caches by LISTEN/NOTIFY, and
// membership is read live.
func TestRevocationEverywhere(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir()}
	bin := MustBinary(t)
	var procs []*proc
	for range 3 {
		procs = append(procs, MustStart(t, bin, nil, args...))
	}
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := map[string]any{"dataset_id": "ds_weekly_signups"}
	preview := map[string]any{"dataset_id": "ds_weekly_signups", "chart_type": "line", "x_field": "week", "y_fields": []string{"signups"}, "name": "Signups"}
	within := func(what string, ok func(p *proc) bool) {
		t.Helper()
		start := time.Now()
		for _, p := range procs {
			for !ok(p) {
				if time.Since(start) > time.Second {
					t.Errorf("%s on %s: not within 1 s", what, p.URL)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		t.Logf("%s on every instance after %s", what, time.Since(start).Round(time.Millisecond))
	}
	for _, p := range procs {
		for _, who := range []string{"bob", "carol"} {
			if status, code := p.mcpCall(t, p.apiKey(t, who), "run_dataset", map[string]any{"dataset_id": map[string]string{"bob": "ds_weekly_signups", "carol": "ds_tickets"}[who]}); status != http.StatusOK || code != "" {
				t.Fatalf("%s's key on %s before: %d %s", who, p.URL, status, code)
			}
		}
		if status, code := p.mcpCall(t, p.apiKey(t, "alice"), "create_chart_preview", preview); status != http.StatusOK || code != "" {
			t.Fatalf("alice's preview on %s before: %d %s", p.URL, status, code)
		}
	}

	t.Run("KeyRevoked", func(t *testing.T) {
		var id string
		if err := db.Get(&id, `SELECT id FROM api_keys WHERE name = 'demo:bob' AND revoked_at IS NULL`); err != nil {
			t.Fatal(err)
		}
		if err := pgstore.NewKeyStore(db).Revoke(t.Context(), id, time.Now()); err != nil {
			t.Fatal(err)
		}
		within("bob's revoked key refused", func(p *proc) bool {
			status, _ := p.mcpCall(t, p.apiKey(t, "bob"), "run_dataset", run)
			return status == http.StatusUnauthorized
		})
	})
	t.Run("MemberRemoved", func(t *testing.T) {
		if err := pgstore.NewDirectory(db).RemoveMember(t.Context(), teamGlobex, "carol"); err != nil {
			t.Fatal(err)
		}
		within("removed carol's key refused", func(p *proc) bool {
			status, _ := p.mcpCall(t, p.apiKey(t, "carol"), "run_dataset", map[string]any{"dataset_id": "ds_tickets"})
			return status == http.StatusUnauthorized
		})
	})
	t.Run("RoleChanged", func(t *testing.T) {
		if err := pgstore.NewDirectory(db).SetMember(t.Context(), teamAcme, "alice", access.RoleViewer, access.AllProjects()); err != nil {
			t.Fatal(err)
		}
		within("alice, now a viewer, refused a chart preview", func(p *proc) bool {
			_, code := p.mcpCall(t, p.apiKey(t, "alice"), "create_chart_preview", preview)
			return code == "forbidden"
		})
	})
}

// TestTeamBoundAcrossInstances: a team's bound on queries running at once
// (-max-queries-per-team 2) holds across two instances: of four slow
// previews started at once, two through each, two run (each answers its
// one row) and two are refused with rate_limited and a retry hint; once
// they finish, the slots are free again on either instance within the
// lease pool's Idle.
func TestTeamBoundAcrossInstances(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir(), "-max-queries-per-team", "2"}
	bin := MustBinary(t)
	a, b := MustStart(t, bin, nil, args...), MustStart(t, bin, nil, args...)
	key := a.apiKey(t, "alice")
	preview := func(p *proc, i int) (mcpAnswer, error) {
		return p.mcpPost(key, "tools/call", map[string]any{"name": "explore_data", "arguments": map[string]any{
			"operation": "preview", "connection_id": "conn_acme_wh",
			"sql": fmt.Sprintf("SELECT count(*) + %d AS n FROM generate_series(1, 30000000)", i)}})
	}
	// outcome is what one answer is: "ran" (200, its one row), "refused"
	// (rate_limited with a retry hint), else what it was instead.
	outcome := func(a mcpAnswer, err error) string {
		rows, _ := a.Result.StructuredContent["rows"].([]any)
		switch {
		case err != nil:
			return err.Error()
		case a.status == http.StatusOK && a.code() == "" && len(rows) == 1:
			return "ran"
		case a.code() == "rate_limited" && (a.retryAfter != "" || a.Result.StructuredContent["retry_after"] != nil):
			return "refused"
		}
		return fmt.Sprintf("%d %q %+v", a.status, a.code(), a.Result.StructuredContent)
	}
	outcomes := make([]string, 4)
	var wg sync.WaitGroup
	for i := range outcomes {
		p := []*proc{a, b}[i%2]
		wg.Go(func() { outcomes[i] = outcome(preview(p, i)) })
	}
	wg.Wait()
	slices.Sort(outcomes)
	if diff := cmp.Diff([]string{"ran", "ran", "refused", "refused"}, outcomes); diff != "" {
		t.Errorf("4 slow previews at once across two instances, team bound 2 (-want +got):\n%s", diff)
	}
	// An instance keeps a slot its work freed for the pool's Idle (1 s)
	// before it goes back to the shared store, so the other instance may
	// find the bound full for that long: both runs may have been on a.
	// Within Idle and a sweep, a preview through b runs.
	start := time.Now()
	for i := 9; ; i++ {
		got := outcome(preview(b, i))
		if got == "ran" {
			t.Logf("a preview through b ran %s after the others finished", time.Since(start).Round(time.Millisecond))
			break
		}
		if got != "refused" || time.Since(start) > 5*time.Second {
			t.Fatalf("a preview through b %s after the others finished = %s, want it run (the slots go back within the pool's Idle of 1 s; 5 s allowed for a loaded machine)", time.Since(start).Round(time.Millisecond), got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLastReadsForgottenEverywhere: what an instance keeps to serve
// through an outage of its database (its verified keys, and its
// directory's and catalog's last reads, each at most 30 s old) never
// outlives a change made elsewhere by more than a second. Instance B
// reaches the database through a proxy the test cuts; instance A, and
// the test, directly. While B's database is up, B reads the directory and
// the catalog live, so its last reads only show once it is cut off: bob's
// cached run is served from them then. A change made elsewhere up to a
// second before the cut (a catalog write through A; bob's grant of the
// dataset's project removed, by the test with the directory's own code,
// as the host's team admin would) reaches B by LISTEN/NOTIFY, and B,
// cut off, refuses bob rather than serving him from what it forgot.
func TestLastReadsForgottenEverywhere(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	proxy, viaProxy := pgtest.MustProxy(t, dbURL)
	dataDir := t.TempDir()
	bin := MustBinary(t)
	a := MustStart(t, bin, nil, "-database-url", dbURL, "-data-dir", dataDir)
	b := MustStart(t, bin, nil, "-database-url", viaProxy, "-data-dir", dataDir)
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bob := b.apiKey(t, "bob")
	run := func() string {
		_, code := b.mcpCall(t, bob, "run_dataset", map[string]any{"dataset_id": "ds_weekly_signups"})
		return code
	}
	const listening = "pgstore: change notifications: listening again"
	cuts := 0
	// fresh gives B its database back, waits until it listens again
	// (having forgotten everything: it may have missed changes) and has
	// bob's run served live, so that B keeps fresh last reads.
	fresh := func() {
		t.Helper()
		proxy.Restore()
		pollUntil(t, 30*time.Second, "B listens again", func() bool { return strings.Count(b.stderrText(), listening) >= cuts })
		pollUntil(t, 10*time.Second, "bob's run served by B", func() bool { return run() == "" })
	}
	cut := func() {
		proxy.Cut()
		cuts++
	}

	fresh()
	cut()
	if code := run(); code != "" {
		t.Fatalf("bob's cached run on B cut off from its database = %q; want it served from what B keeps", code)
	}

	t.Run("CatalogWrite", func(t *testing.T) {
		fresh()
		preview := map[string]any{"dataset_id": "ds_weekly_signups", "chart_type": "bar", "x_field": "week", "y_fields": []string{"signups"}, "name": "Signups"}
		if status, code := a.mcpCall(t, a.apiKey(t, "alice"), "create_chart_preview", preview); status != http.StatusOK || code != "" {
			t.Fatalf("alice's preview on A: %d %q", status, code)
		}
		time.Sleep(time.Second)
		cut()
		if code := run(); code != "unavailable" {
			t.Errorf("bob's run on B cut off a second after a catalog write on A = %q; want unavailable (B forgot its catalog's last reads)", code)
		}
	})
	t.Run("GrantRemoved", func(t *testing.T) {
		fresh()
		if err := pgstore.NewDirectory(db).SetMember(t.Context(), teamAcme, "bob", access.RoleEditor, access.ProjectSet(projFin)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cut()
		if code := run(); code != "unavailable" {
			t.Errorf("bob's run on B cut off a second after his grant of Growth was removed = %q; want unavailable (B forgot its directory's last reads)", code)
		}
		proxy.Restore()
		pollUntil(t, 10*time.Second, "B answers bob again", func() bool { return run() != "unavailable" })
		if code := run(); code != "not_found" {
			t.Errorf("bob's run on B with its database back = %q; want not_found (Growth is no longer his)", code)
		}
	})
}

// TestRateLimitThroughOutage: an instance whose database is cut off
// (pgtest.Proxy) limits each principal on its own (-rate 1 -rate-burst
// 5): bob's cached run is served five times in a row, then refused with
// rate_limited, never unavailable for every request nor unlimited; the
// instance logs the switch once, and once again when the shared limit
// answers after the database is back.
func TestRateLimitThroughOutage(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	proxy, viaProxy := pgtest.MustProxy(t, dbURL)
	p := MustStart(t, MustBinary(t), nil, "-database-url", viaProxy, "-data-dir", t.TempDir(), "-rate", "1", "-rate-burst", "5")
	bob := p.apiKey(t, "bob")
	run := func() string {
		_, code := p.mcpCall(t, bob, "run_dataset", map[string]any{"dataset_id": "ds_weekly_signups"})
		return code
	}
	if code := run(); code != "" {
		t.Fatalf("bob's run before the outage = %q", code)
	}
	const down, up = "rate limit: the shared limiter is unavailable", "rate limit: the shared limiter answers again"
	proxy.Cut()
	var codes []string
	for len(codes) < 20 {
		code := run()
		codes = append(codes, code)
		if code != "" {
			break
		}
	}
	if want := []string{"", "", "", "", "", "rate_limited"}; !slices.Equal(codes, want) && !slices.Equal(codes, append([]string{""}, want...)) {
		t.Errorf("bob's runs in a row while the database is cut off = %q; want the burst of 5 (or 6, one refilled) served, then rate_limited", codes)
	}
	if n := strings.Count(p.stderrText(), down); n != 1 {
		t.Errorf("the instance logged %q %d times during the outage, want once", down, n)
	}
	proxy.Restore()
	// The shared limiter is tried again 5 s after it failed.
	pollUntil(t, 20*time.Second, "the shared limit answers again", func() bool {
		run()
		time.Sleep(time.Second)
		return strings.Contains(p.stderrText(), up)
	})
	if n, m := strings.Count(p.stderrText(), down), strings.Count(p.stderrText(), up); n != 1 || m != 1 {
		t.Errorf("the instance logged %q %d times and %q %d times, want once each", down, n, up, m)
	}
}

// mcp26 sends a 2026-07-28 request of method with params to p's /mcp,
// declaring the Tasks extension, with the standard headers; it returns
// the result, or fails t on an error.
func (p *proc) mcp26(t *testing.T, token, method string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", p.URL+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	name, _ := params["name"].(string)
	if id, ok := params["taskId"].(string); ok {
		name = id
	}
	req.Header.Set("Mcp-Name", name)
	resp, err := p.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result map[string]any
		Error  any
	}
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &msg) != nil || msg.Error != nil {
		t.Fatalf("%s on %s: %d %.400s", method, p.URL, resp.StatusCode, b)
	}
	return msg.Result
}

// TestTasksAcrossInstances: two instances on one database share their
// MCP tasks (pgstore's TaskStore): a slow preview that became a task on
// one is polled to its result through the other; another, cancelled
// through the other, has its query end in the warehouse (the instance
// running it finds the cancel at its next heartbeat, 5 s) well before the
// executor's 15 s deadline would end it.
func TestTasksAcrossInstances(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	args := []string{"-database-url", dbURL, "-data-dir", t.TempDir(), "-mcp-task-after", "50ms"}
	bin := MustBinary(t)
	a, b := MustStart(t, bin, nil, args...), MustStart(t, bin, nil, args...)
	key := a.apiKey(t, "alice")
	owner, err := sqlx.Open("postgres", a.creds.WarehouseDatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	const marker = "generate_series(1, 100004) a"
	running := func() int {
		var n int
		if err := owner.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, marker); err != nil {
			t.Fatal(err)
		}
		return n
	}
	preview := func(sql string) string {
		t.Helper()
		r := a.mcp26(t, key, "tools/call", map[string]any{"name": "explore_data", "arguments": map[string]any{
			"operation": "preview", "connection_id": "conn_acme_wh", "sql": sql}})
		if r["resultType"] != "task" {
			t.Fatalf("a slow preview = %v; want a task", r)
		}
		return r["taskId"].(string)
	}
	get := func(p *proc, id string) map[string]any {
		return p.mcp26(t, key, "tasks/get", map[string]any{"taskId": id})
	}

	done := preview("SELECT count(*) AS n FROM generate_series(1, 3000) a, generate_series(1, 4000) b")
	var got map[string]any
	pollUntil(t, 30*time.Second, "the task is done, seen through the other instance", func() bool {
		got = get(b, done)
		return got["status"] != "working"
	})
	res, _ := got["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if got["status"] != "completed" || fmt.Sprint(sc["rows"]) != fmt.Sprint([]any{[]any{12000000.0}}) {
		t.Errorf("the task through the other instance = %v", got)
	}

	cancelled := preview("SELECT count(*) AS n FROM " + marker + ", generate_series(1, 100000) b")
	pollUntil(t, 10*time.Second, "the second preview's query runs", func() bool { return running() > 0 })
	if s := get(b, cancelled)["status"]; s != "working" {
		t.Errorf("the running task through the other instance = %v", s)
	}
	b.mcp26(t, key, "tasks/cancel", map[string]any{"taskId": cancelled})
	took := pollUntil(t, 9*time.Second, "the query of a task cancelled through the other instance ends", func() bool { return running() == 0 })
	t.Logf("the query ended %s after the cancel through the other instance", took.Round(10*time.Millisecond))
	if s := get(a, cancelled); s["status"] != "cancelled" || s["result"] != nil {
		t.Errorf("the cancelled task = %v", s)
	}
}

// TestWarehousesSeededAtOnce: servers seeding the demo warehouse in
// other databases of one cluster at the same moment (as the tests'
// instances do) all start: the read-only role is the cluster's, and the
// statements that set it up collide ("tuple concurrently updated")
// unless the one that lost runs again.
func TestWarehousesSeededAtOnce(t *testing.T) {
	urls := make([]string, 4)
	for i := range urls {
		urls[i] = pgtest.MustDatabase(t)
	}
	for round := range 3 {
		errs := make([]error, len(urls))
		var wg sync.WaitGroup
		for i, u := range urls {
			wg.Go(func() { _, errs[i] = seedWarehouse(t.Context(), u, true) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, database %d: %v", round, i, err)
			}
		}
	}
}

// TestReaderLosesPublicGrants: a database seeded by an earlier version
// (the warehouse in schema public, the reader granted there) keeps no
// grant to the reader on public's tables, and the others' grants stay.
func TestReaderLosesPublicGrants(t *testing.T) {
	u := pgtest.MustDatabase(t)
	if _, err := seedWarehouse(t.Context(), u, true); err != nil {
		t.Fatal(err)
	}
	db, err := sqlx.Open("postgres", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE public.old_orders (id int)`,
		`CREATE TABLE public.other (id int)`,
		`GRANT SELECT ON public.old_orders TO ` + readerRole,
		`GRANT SELECT ON public.other TO PUBLIC`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := seedWarehouse(t.Context(), u, true); err != nil {
		t.Fatal(err)
	}
	var got struct{ Old, Other bool }
	if err := db.Get(&got, `SELECT has_table_privilege($1, 'public.old_orders', 'SELECT') AS old,
		has_table_privilege($1, 'public.other', 'SELECT') AS other`, readerRole); err != nil {
		t.Fatal(err)
	}
	if got.Old || !got.Other {
		t.Errorf("after seeding, the reader reads public.old_orders: %v (want false), public.other (PUBLIC's grant): %v (want true)", got.Old, got.Other)
	}
}
