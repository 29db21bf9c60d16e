package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/tasktest"
)

// tasksCaps are client capabilities that declare the Tasks extension.
const tasksCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// answer is one JSON-RPC answer over HTTP.
type answer struct {
	status int
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw []byte
}

// call26 posts a 2026-07-28 request of method with params (a JSON
// object), carrying caps as its client capabilities, and the standard
// headers (Mcp-Name: the tool or the task).
func call26(t *testing.T, ctx context.Context, url, token, method, params, caps string) answer {
	t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params == "{}" || params == "" {
		params = "{" + meta + "}"
	} else {
		params = strings.Replace(params, "{", "{"+meta+",", 1)
	}
	req := mcpRequest(ctx, url, token, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	var p struct {
		Name   string
		TaskID string `json:"taskId"`
	}
	json.Unmarshal([]byte(params), &p)
	if p.Name != "" {
		req.Header.Set("Mcp-Name", p.Name)
	} else if p.TaskID != "" {
		req.Header.Set("Mcp-Name", p.TaskID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: b}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	return a
}

// task is a task as tasks/get or a CreateTaskResult carries it.
type task struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
}

func (a answer) task(t *testing.T) task {
	t.Helper()
	var tk task
	if a.Error != nil || json.Unmarshal(a.Result, &tk) != nil {
		t.Fatalf("not a task: %d %s", a.status, a.raw)
	}
	return tk
}

// toolCall is the params of a tools/call of run_dataset on ds_signups.
const runSignupsParams = `{"name":"run_dataset","arguments":{"dataset_id":"ds_signups","refresh":true}}`

// startTask calls run_dataset as a client declaring the extension,
// while the source holds the query, and returns the task it became.
func startTask(t *testing.T, url, token string, src *blockingSource) task {
	t.Helper()
	a := call26(t, t.Context(), url, token, "tools/call", runSignupsParams, tasksCaps)
	tk := a.task(t)
	if tk.ResultType != "task" || tk.TaskID == "" || tk.Status != "working" {
		t.Fatalf("the call did not become a task: %s", a.raw)
	}
	<-src.started
	return tk
}

func getTask(t *testing.T, url, token, id string) answer {
	t.Helper()
	return call26(t, t.Context(), url, token, "tasks/get", `{"taskId":"`+id+`"}`, tasksCaps)
}

// waitTask polls tasks/get until the task is no longer working.
func waitTask(t *testing.T, url, token, id string) task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk := getTask(t, url, token, id).task(t)
		if tk.Status != "working" {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still working after 10 s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tasksServer serves e's workspace with task options to and executor
// options xo, through a gate with limiter (nil: a generous one).
func tasksServer(t *testing.T, e *env, to mcpserver.TaskOptions, xo *dataexec.Options, limiter access.RateLimiter, now func() time.Time) string {
	t.Helper()
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source, "conn_globex": e.source}, xo)
	if limiter == nil {
		limiter = access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1000, Rate: 1000})
	}
	hs := httptest.NewServer(mcpserver.New(exec, access.NewGate(e.checker, limiter), e.keys.Verify, &mcpserver.Options{Tasks: to, Now: now}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestTaskLifecycle: a data call of a client that declares the Tasks
// extension, still running after TaskOptions.After, becomes a task
// (resultType task, ttlMs, pollIntervalMs); tasks/get says working, then
// completed with the tool result inlined, the same answer the call gives
// to a client without tasks.
func TestTaskLifecycle(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond, TTL: time.Hour, PollInterval: 250 * time.Millisecond}, nil, nil, nil)
	tk := startTask(t, url, alice, src)
	if tk.TTLMs == nil || *tk.TTLMs != 3600000 || tk.PollIntervalMs != 250 || tk.CreatedAt == "" || tk.Result != nil {
		t.Errorf("CreateTaskResult = %+v; want ttlMs 3600000, pollIntervalMs 250, no result", tk)
	}
	if g := getTask(t, url, alice, tk.TaskID).task(t); g.ResultType != "complete" || g.Status != "working" || g.Result != nil {
		t.Errorf("tasks/get while running = %+v", g)
	}
	close(src.release)
	done := waitTask(t, url, alice, tk.TaskID)
	if done.Status != "completed" || done.PollIntervalMs != 0 {
		t.Fatalf("tasks/get once done = %+v", done)
	}
	var got, want map[string]any
	json.Unmarshal(done.Result, &got)
	sync := call26(t, t.Context(), url, alice, "tools/call", runSignupsParams, `{}`)
	json.Unmarshal(sync.Result, &want)
	for _, m := range []map[string]any{got, want} {
		sc, _ := m["structuredContent"].(map[string]any)
		delete(sc, "data_date") // each run's own
		delete(m, "content")    // which repeats structuredContent, with the date
	}
	if diff := cmp.Diff(want, got); diff != "" || got["structuredContent"] == nil {
		t.Errorf("the task's result and the call's answer differ (-call +task):\n%s", diff)
	}
}

// TestTaskQuickCallStaysACall: a call that answers within After is
// answered as a call, also to a client that declares the extension.
func TestTaskQuickCallStaysACall(t *testing.T) {
	e := newEnv(t, nil, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Minute}, nil, nil, nil)
	a := call26(t, t.Context(), url, alice, "tools/call", runSignupsParams, tasksCaps)
	var res struct {
		ResultType        string         `json:"resultType"`
		TaskID            string         `json:"taskId"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	if json.Unmarshal(a.Result, &res) != nil || res.ResultType == "task" || res.TaskID != "" || res.StructuredContent["row_count"] != 3.0 {
		t.Errorf("a quick call = %s; want the call's answer", a.raw)
	}
}

// TestNoTasksWithoutDeclaration: a client that does not declare the
// extension on its request gets today's behaviour exactly: the slow call answers when it ends,
// byte for byte as from a server without tasks; discovery does not
// declare the extension to it; the tasks/ methods answer -32021.
func TestNoTasksWithoutDeclaration(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	with := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond}, nil, nil, nil)
	without := tasksServer(t, e, mcpserver.TaskOptions{Disabled: true}, nil, nil, nil)
	stamp := regexp.MustCompile(`20\d\d-\d\d-\d\dT[0-9:.]+Z`) // the data's date
	// A 2026-07-28 client without extensions, one with another
	// extension, and a 2025-11-25 client (no per-request capabilities).
	clients := []func(url string) []byte{
		func(url string) []byte {
			return call26(t, context.Background(), url, alice, "tools/call", runSignupsParams, `{}`).raw
		},
		func(url string) []byte {
			return call26(t, context.Background(), url, alice, "tools/call", runSignupsParams, uiCaps).raw
		},
		func(url string) []byte {
			_, b := post(t, context.Background(), url, alice, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+runSignupsParams+`}`)
			return b
		},
	}
	answers := map[string][]string{}
	for _, url := range []string{with, without} {
		for _, client := range clients {
			got := make(chan []byte, 1)
			go func() { got <- client(url) }()
			<-src.started
			// Time for a server that wrongly made the call a task (After
			// is 1 ms) to answer before the query ends; a correct server
			// never answers sooner, whatever the time.
			time.Sleep(50 * time.Millisecond)
			src.release <- struct{}{}
			answers[url] = append(answers[url], stamp.ReplaceAllString(string(<-got), "DATE"))
		}
	}
	if diff := cmp.Diff(answers[without], answers[with]); diff != "" || strings.Contains(answers[with][0], `"task"`) {
		t.Errorf("clients without tasks are answered differently (-without tasks +with tasks):\n%s", diff)
	}
	d := call26(t, t.Context(), with, alice, "server/discover", `{}`, `{}`)
	if strings.Contains(string(d.raw), mcpserver.TasksExtension) {
		t.Errorf("discovery declares tasks to a client that did not: %s", d.raw)
	}
	if d := call26(t, t.Context(), with, alice, "server/discover", `{}`, tasksCaps); !strings.Contains(string(d.raw), `"io.modelcontextprotocol/tasks":{}`) {
		t.Errorf("discovery does not declare tasks to a client that did: %s", d.raw)
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		a := call26(t, t.Context(), with, alice, m, `{"taskId":"task_x","inputResponses":{}}`, `{}`)
		if a.Error == nil || a.Error.Code != -32021 || !strings.Contains(string(a.Error.Data), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
			t.Errorf("%s without the extension = %s; want -32021 naming it", m, a.raw)
		}
	}
}

// TestTaskBoundToPrincipal: a task is its principal's: another user, and
// the same user through another credential, get "task not found" from
// tasks/get, tasks/update and tasks/cancel, as for a task that does not
// exist, and their cancel leaves it running.
func TestTaskBoundToPrincipal(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	alice2 := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	bob := e.MustKey(t, "bob", "acme", access.ProjectSet("growth"), access.ScopeDataRead)
	carol := e.MustKey(t, "carol", "globex", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond}, nil, nil, nil)
	tk := startTask(t, url, alice, src)
	for name, token := range map[string]string{"another key of alice": alice2, "bob": bob, "carol": carol} {
		for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			a := call26(t, t.Context(), url, token, m, `{"taskId":"`+tk.TaskID+`","inputResponses":{}}`, tasksCaps)
			unknown := call26(t, t.Context(), url, token, m, `{"taskId":"task_unknown","inputResponses":{}}`, tasksCaps)
			if a.Error == nil || a.Error.Code != -32602 || a.Error.Message != unknown.Error.Message {
				t.Errorf("%s: %s of alice's task = %s; want %s", name, m, a.raw, unknown.raw)
			}
		}
	}
	if g := getTask(t, url, alice, tk.TaskID).task(t); g.Status != "working" {
		t.Errorf("alice's task after the others' cancels = %+v", g)
	}
	close(src.release)
	if done := waitTask(t, url, alice, tk.TaskID); done.Status != "completed" {
		t.Errorf("alice's task = %+v", done)
	}
}

// TestTaskCancelEndsQuery: tasks/cancel ends the task's query at its
// source (its context is cancelled, as a hang-up cancels a call's), and
// the task reads cancelled, without a result.
func TestTaskCancelEndsQuery(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond, Heartbeat: time.Hour}, nil, nil, nil)
	tk := startTask(t, url, alice, src)
	if a := call26(t, t.Context(), url, alice, "tasks/cancel", `{"taskId":"`+tk.TaskID+`"}`, tasksCaps); a.Error != nil || string(a.Result) == "" {
		t.Fatalf("tasks/cancel = %s", a.raw)
	}
	src.mustCancel(t, 10*time.Second, "tasks/cancel")
	if g := waitTask(t, url, alice, tk.TaskID); g.Status != "cancelled" || g.Result != nil || g.Error != nil {
		t.Errorf("the cancelled task = %+v", g)
	}
}

// TestTaskAcrossInstances: two servers on one TaskStore: a task started
// on one is read through the other, and a cancel through the other ends
// the query on the first (its heartbeat finds the cancel).
func TestTaskAcrossInstances(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	store := mcpserver.NewMemoryTaskStore(0)
	to := mcpserver.TaskOptions{After: time.Millisecond, Store: store, Heartbeat: 10 * time.Millisecond}
	a, b := tasksServer(t, e, to, nil, nil, nil), tasksServer(t, e, to, nil, nil, nil)

	first := startTask(t, a, alice, src)
	src.release <- struct{}{}
	if done := waitTask(t, b, alice, first.TaskID); done.Status != "completed" || done.Result == nil {
		t.Errorf("a task done on one instance, read through the other = %+v", done)
	}
	second := startTask(t, a, alice, src)
	if c := call26(t, t.Context(), b, alice, "tasks/cancel", `{"taskId":"`+second.TaskID+`"}`, tasksCaps); c.Error != nil {
		t.Fatalf("tasks/cancel through the other instance = %s", c.raw)
	}
	<-src.ended // the first task's
	src.mustCancel(t, 10*time.Second, "a cancel through the other instance")
	if g := getTask(t, a, alice, second.TaskID).task(t); g.Status != "cancelled" {
		t.Errorf("the cancelled task = %+v", g)
	}
}

// TestTaskHangUpBeforeTask: a client that hangs up before its call has
// become a task ends the query, as any call's.
func TestTaskHangUpBeforeTask(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Hour}, nil, nil, nil)
	ctx, hangUp := context.WithCancel(context.Background())
	go func() {
		req := mcpRequest(ctx, url, alice, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+tasksCaps+`},"name":"run_dataset","arguments":{"dataset_id":"ds_signups"}}}`)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "run_dataset")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-src.started
	hangUp()
	src.mustCancel(t, 10*time.Second, "the client hung up")
}

// TestTaskCountsAgainstBounds: a task's work holds the executor's
// concurrency slot as a call does (another call of the principal meanwhile
// is rate_limited), and the call that became a task was charged to the
// rate limit once, as every request is, polls included.
func TestTaskCountsAgainstBounds(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	t.Run("concurrency", func(t *testing.T) {
		url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond}, &dataexec.Options{Concurrency: dataexec.ConcurrencyOptions{MaxPerPrincipal: 1}}, nil, nil)
		tk := startTask(t, url, alice, src)
		a := call26(t, t.Context(), url, alice, "tools/call", `{"name":"run_dataset","arguments":{"dataset_id":"ds_mrr","refresh":true}}`, `{}`)
		if !strings.Contains(string(a.Result), `"code":"rate_limited"`) {
			t.Errorf("a call while alice's task runs, one query at once = %s; want rate_limited", a.raw)
		}
		src.release <- struct{}{}
		waitTask(t, url, alice, tk.TaskID)
	})
	t.Run("rate limit", func(t *testing.T) {
		url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond}, nil,
			access.NewMemoryRateLimiter(&access.RateOptions{Burst: 2, Rate: 1e-9}), nil)
		tk := startTask(t, url, alice, src) // 1
		getTask(t, url, alice, tk.TaskID)   // 2
		a := getTask(t, url, alice, tk.TaskID)
		if a.Error == nil || !strings.Contains(string(a.Error.Data), "rate_limited") {
			t.Errorf("a third request with a budget of two = %s; want rate_limited", a.raw)
		}
		src.release <- struct{}{}
	})
}

// TestTaskRetention: a task and its result are kept for TTL from its
// creation; then tasks/get answers not found, and PurgeTasks deletes it.
func TestTaskRetention(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, srv := clockedServer(t, e, mcpserver.TaskOptions{After: time.Millisecond, TTL: time.Hour}, clk)
	tk := startTask(t, url, alice, src)
	src.release <- struct{}{}
	waitTask(t, url, alice, tk.TaskID)
	clk.advance(59 * time.Minute)
	if g := getTask(t, url, alice, tk.TaskID).task(t); g.Status != "completed" || g.Result == nil {
		t.Errorf("a result within its TTL = %+v", g)
	}
	if n, err := srv.PurgeTasks(t.Context()); err != nil || n != 0 {
		t.Errorf("PurgeTasks within the TTL = %d, %v; want none", n, err)
	}
	clk.advance(time.Minute)
	if a := getTask(t, url, alice, tk.TaskID); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("a result at its TTL = %s; want not found", a.raw)
	}
	if n, err := srv.PurgeTasks(t.Context()); err != nil || n != 1 {
		t.Errorf("PurgeTasks past the TTL = %d, %v; want 1", n, err)
	}
}

// TestTaskStale: a working task whose instance missed six heartbeats (it
// stopped) reads failed, and stays failed when its work ends after all.
func TestTaskStale(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	url, _ := clockedServer(t, e, mcpserver.TaskOptions{After: time.Millisecond, TTL: 24 * time.Hour, Heartbeat: time.Hour}, clk)
	tk := startTask(t, url, alice, src)
	clk.advance(6 * time.Hour)
	if g := getTask(t, url, alice, tk.TaskID).task(t); g.Status != "working" {
		t.Errorf("a task six heartbeats old = %+v; want working", g)
	}
	clk.advance(time.Second)
	g := getTask(t, url, alice, tk.TaskID).task(t)
	if g.Status != "failed" || !strings.Contains(string(g.Error), `"code":-32603`) {
		t.Errorf("a task past six heartbeats = %+v; want failed with an internal error", g)
	}
	src.release <- struct{}{}
	<-src.ended
	if g := waitTask(t, url, alice, tk.TaskID); g.Status != "failed" || g.Result != nil {
		t.Errorf("the stale task once its work ended = %+v; want failed still", g)
	}
}

// TestTaskPerOwnerBound: past PerOwner tasks kept, a call of the owner
// stays a call (answered when it ends); another owner's calls still
// become tasks.
func TestTaskPerOwnerBound(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	carol := e.MustKey(t, "carol", "globex", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond, PerOwner: 1}, nil, nil, nil)
	startTask(t, url, alice, src)
	got := make(chan answer, 1)
	go func() {
		got <- call26(t, context.Background(), url, alice, "tools/call", `{"name":"run_dataset","arguments":{"dataset_id":"ds_mrr","refresh":true}}`, tasksCaps)
	}()
	<-src.started
	a := call26(t, t.Context(), url, carol, "tools/call", `{"name":"run_dataset","arguments":{"dataset_id":"ds_tickets","refresh":true}}`, tasksCaps)
	<-src.started
	if tk := a.task(t); tk.ResultType != "task" {
		t.Errorf("carol's call = %s; want a task", a.raw)
	}
	close(src.release) // every query ends: only then is alice's second call answered
	if a := <-got; strings.Contains(string(a.Result), `"resultType":"task"`) || !strings.Contains(string(a.Result), `"structuredContent"`) {
		t.Errorf("alice's second call past her bound = %s; want the call's answer", a.raw)
	}
}

// TestTaskPreviewBecomesTask: explore_data's preview is a data read that
// may become a task (that its save and inspection never do is
// TestTaskable's).
func TestTaskPreviewBecomesTask(t *testing.T) {
	src := newBlockingSource()
	e := newEnv(t, src, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{After: time.Millisecond}, nil, nil, nil)
	a := call26(t, t.Context(), url, alice, "tools/call", `{"name":"explore_data","arguments":{"operation":"preview","connection_id":"conn_acme","sql":"`+sqlSignups+`"}}`, tasksCaps)
	<-src.started
	tk := a.task(t)
	close(src.release)
	if done := waitTask(t, url, alice, tk.TaskID); done.Status != "completed" || !strings.Contains(string(done.Result), `"operation":"preview"`) {
		t.Errorf("the preview's task = %+v", done)
	}
}

// TestTaskRoutingHeader: a 2026-07-28 tasks/ request must name its task
// in Mcp-Name (SEP-2663's routing header): without it, or naming another,
// it is refused 400 with -32020, the go-sdk's answer to its own header
// checks.
func TestTaskRoutingHeader(t *testing.T) {
	e := newEnv(t, nil, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	url := tasksServer(t, e, mcpserver.TaskOptions{}, nil, nil, nil)
	for _, name := range []string{"", "task_other"} {
		req := mcpRequest(t.Context(), url, alice, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+tasksCaps+`},"taskId":"task_x"}}`)
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tasks/get")
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"code":-32020`) || !strings.Contains(string(b), `"id":3`) {
			t.Errorf("Mcp-Name %q: %d %s; want 400 and -32020", name, resp.StatusCode, b)
		}
	}
	if a := getTask(t, url, alice, "task_x"); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("with the header: %s; want task not found", a.raw)
	}
	// A method the extension removed is unknown, whatever its headers.
	req := mcpRequest(t.Context(), url, alice, `{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+tasksCaps+`},"taskId":"task_x"}}`)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tasks/result")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"code":-32601`) {
		t.Errorf("tasks/result without Mcp-Name: %d %s; want -32601", resp.StatusCode, b)
	}
}

// clockedServer serves e's workspace with task options to on clock clk.
func clockedServer(t *testing.T, e *env, to mcpserver.TaskOptions, clk *fakeClock) (string, *mcpserver.Server) {
	t.Helper()
	exec := dataexec.NewExecutor(e.catalog, dataexec.SourceMap{"conn_acme": e.source}, nil)
	srv := mcpserver.New(exec, access.NewGate(e.checker, nil), e.keys.Verify, &mcpserver.Options{Tasks: to, Now: clk.Now})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL, srv
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestMemoryTaskStore(t *testing.T) {
	tasktest.RunStore(t, func(t *testing.T) mcpserver.TaskStore { return mcpserver.NewMemoryTaskStore(0) })
}

// TestMemoryTaskStoreBound: the in-memory store keeps at most its bound
// of unexpired tasks, whoever owns them, so its memory is bounded.
func TestMemoryTaskStoreBound(t *testing.T) {
	s := mcpserver.NewMemoryTaskStore(3)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 4 {
		err := s.Create(t.Context(), mcpserver.Task{ID: fmt.Sprint("t", i), Owner: fmt.Sprint("owner", i), Status: mcpserver.TaskWorking,
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}, 10)
		if want := i < 3; (err == nil) != want {
			t.Errorf("task %d: %v", i, err)
		}
	}
	if err := s.Create(t.Context(), mcpserver.Task{ID: "later", Owner: "o", Status: mcpserver.TaskWorking,
		CreatedAt: t0.Add(time.Hour), ExpiresAt: t0.Add(2 * time.Hour)}, 10); err != nil {
		t.Errorf("once the others expired: %v", err)
	}
}
