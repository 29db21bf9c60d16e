package main

// Tests of the reference server against real MCP peers that nobody here
// wrote: the official MCP conformance suite and the MCP Inspector CLI. They
// need the pinned tools that .ci/mcp-tools.sh installs; point
// ASKBI_MCP_TOOLS at that folder.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/chattest"
)

// mustTools returns the tools' bin folder, or skips loudly (fails when
// ASKBI_REQUIRE_MCP_TOOLS=1).
func mustTools(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ASKBI_MCP_TOOLS")
	if dir == "" {
		msg := "SKIPPING: set ASKBI_MCP_TOOLS to the folder .ci/mcp-tools.sh installed (bash .ci/mcp-tools.sh .tools)"
		if os.Getenv("ASKBI_REQUIRE_MCP_TOOLS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	bin, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// peerCmd runs a tool from bin with Node 22 first on PATH and a private
// HOME, so nothing the tools store leaks between runs.
func peerCmd(ctx context.Context, t *testing.T, bin, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "NO_COLOR=1"}
	return cmd
}

// withBearer is for tests only: the conformance runner sends no
// Authorization header, so the test server adds a real API key in front of
// the real authentication, which still verifies it.
func withBearer(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+token)
		}
		h.ServeHTTP(w, r)
	})
}

// conformanceScenarios are the suite's server scenarios that apply to a
// server with tools and one resource (the chart app): the 2025
// lifecycle ones, the 2026-07-28 ones (server-stateless,
// http-header-validation, caching, tools-list over server/discover),
// and the resource ones. The others need fixture tools or prompts
// ("test_simple_text", ...) that an everything-server has.
var conformanceScenarios = []string{
	"server-initialize", "ping", "tools-list", "dns-rebinding-protection",
	"server-stateless", "http-header-validation", "caching",
	"resources-list", "resources-read-text", "resources-templates-read", "sep-2164-resource-not-found",
	// The Tasks extension's (tasks-status-notifications is skipped by the
	// suite itself, pending a rewrite).
	"tasks-capability-negotiation", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-lifecycle",
	"tasks-wire-fields", "tasks-request-state-removal", "tasks-mrtr-input", "tasks-required-task-error", "tasks-mrtr-composition",
}

// notApplicable are the checks that fail against a tools-only server
// because they test what it does not have, each with the evidence. The
// test fails when one of them passes too (the list went stale) or any
// other check fails.
var notApplicable = map[string][]string{
	"server-stateless": {
		// "does not list the diagnostic tool 'test_missing_capability'":
		// no askbi tool needs a client capability (sampling, elicitation,
		// roots), so no call can lack one.
		"sep-2575-server-rejects-undeclared-capability",
		"sep-2575-missing-capability-http-400",
		// "does not list the diagnostic tool 'test_streaming_elicitation'":
		// the server never sends requests of its own on a response stream.
		"sep-2575-http-server-no-independent-requests-on-stream",
		// "does not list the diagnostic tool 'test_logging_tool'": the
		// server sends no log messages at all.
		"sep-2575-server-no-log-without-loglevel",
	},
	// "Resource not found": they read the fixture resources of an
	// everything-server (test://static-text, a test://template/{id}
	// template); askbi's one resource is the chart app, which
	// resources-list and sep-2164-resource-not-found check.
	"resources-read-text":      {"resources-read-text"},
	"resources-templates-read": {"resources-templates-read"},
	"caching": {
		// -32601: the server has no prompts to cache; it refuses prompts
		// methods (see mcpserver.undeclared). Its resources (the chart
		// app) pass.
		"sep-2549-prompts-list-caching-hints",
	},
	// The tasks scenarios call fixture tools of the suite's test server
	// ("unknown tool" greet, slow_compute, failing_job,
	// protocol_error_job, confirm_delete, multi_input,
	// test_tool_with_task); what they check with them, askbi's own
	// tools show in mcpserver's tasks tests (TestTaskLifecycle,
	// TestTaskCancelEndsQuery, TestTaskRetention, TestNoTasksWithoutDeclaration,
	// TestTaskRoutingHeader). Checks that follow a failed fixture call
	// fail as "not testable". What runs without fixtures passes:
	// advertisement, -32021 to undeclaring requests, the removed methods,
	// -32602 for an unknown task, a mismatched Mcp-Method, the wire
	// schema.
	"tasks-capability-negotiation": {"sep-2663-server-rejects-undeclared-client", "tasks-per-request-meta-opt-in"},
	"tasks-request-headers": {"sep-2663-routing-headers-accepted-on-tasks-get", "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
		"tasks-headers-tolerate-mcp-method-on-tools-call"},
	"tasks-dispatch-and-envelope": {"sep-2663-durable-create-strong-consistency", "sep-2663-legacy-task-param-ignored",
		"tasks-immediate-result-shortcut", "tasks-result-type-complete-on-non-task-responses", "tasks-server-directed-creation-no-hint"},
	"tasks-lifecycle": {"sep-2663-cancel-ack-empty-result", "sep-2663-result-type-task-on-create", "sep-2663-tasks-get-status-completed",
		"sep-2663-tasks-get-status-failed", "sep-2663-tasks-get-status-working", "sep-2663-tool-error-uses-completed-status",
		"tasks-cancel-terminal-idempotent-ack", "tasks-sync-tool-call"},
	"tasks-wire-fields":           {"tasks-no-early-ttl-expiry", "tasks-no-related-task-meta-on-inlined-result", "tasks-wire-field-renames"},
	"tasks-request-state-removal": {"tasks-request-state-removal-setup"},
	// input_required: no askbi tool asks the client for input.
	"tasks-mrtr-input": {"sep-2663-tasks-get-status-input-required", "tasks-mrtr-partial-fulfillment", "tasks-mrtr-tasks-update-resumes"},
	// No askbi tool requires a task: a client without the extension gets
	// a call (failing_job: "unknown tool", -32602).
	"tasks-required-task-error": {"sep-2663-server-returns-missing-capability-when-required"},
	"tasks-mrtr-composition":    {"sep-2663-mrtr-synchronous-before-task-creation"},
}

type check struct{ ID, Status, ErrorMessage string }

// failedIDs are the IDs of the failed checks, sorted.
func failedIDs(checks []check) []string {
	var ids []string
	for _, c := range checks {
		if c.Status == "FAILURE" {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// conformanceChecks runs one conformance command writing into out and
// returns its checks, counted by status.
func conformanceChecks(t *testing.T, cmd *exec.Cmd, out string) (map[string]int, []check) {
	t.Helper()
	b, err := cmd.CombinedOutput()
	checks := mustChecks(t, out)
	counts := countOf(checks)
	if err != nil && counts["FAILURE"] == 0 {
		t.Errorf("conformance exited with %v and no failed check\n%s", err, b)
	}
	return counts, checks
}

// mustChecks reads the one checks.json the suite wrote under out.
func mustChecks(t *testing.T, out string) []check {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("conformance wrote %d checks.json files", len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []check
	if err := json.Unmarshal(raw, &checks); err != nil {
		t.Fatal(err)
	}
	return checks
}

func countOf(checks []check) map[string]int {
	counts := map[string]int{}
	for _, c := range checks {
		counts[c.Status]++
	}
	return counts
}

func TestConformanceSuite(t *testing.T) {
	bin := mustTools(t)
	// The suite sends the Origin of the URL it is given, the proxy's:
	// that origin is allowed, as a host allows its own web client's.
	proxy := httptest.NewUnstartedServer(nil)
	ta := MustApp(t, func(c *config) { c.mcpOrigins = "http://" + proxy.Listener.Addr().String() })
	proxy.Config.Handler = withBearer(ta.apiKey(t, "alice"), ta.routes())
	proxy.Start()
	defer proxy.Close()
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out := t.TempDir()
			cmd := peerCmd(ctx, t, bin, "conformance", "server", "--url", proxy.URL+"/mcp", "--scenario", scenario, "-o", out)
			counts, checks := conformanceChecks(t, cmd, out)
			t.Logf("conformance %s: %v", scenario, counts)
			want := slices.Sorted(slices.Values(notApplicable[scenario]))
			if diff := cmp.Diff(want, failedIDs(checks)); diff != "" || counts["SUCCESS"] == 0 {
				t.Errorf("conformance %s: failed checks mismatch (-not applicable +failed):\n%s\n%+v", scenario, diff, checks)
			}
		})
	}
}

func TestInspectorCLI(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, nil)
	t.Run("API key", func(t *testing.T) { inspectorRun(t, bin, ta, ta.apiKey(t, "alice"), "") })
	// An OAuth access token from the consent flow, as the Inspector
	// sends one it obtained itself.
	t.Run("OAuth token", func(t *testing.T) {
		inspectorRun(t, bin, ta, ta.oauthToken(t, "alice", teamAcme, []string{"data:read", "charts:preview"}), "acme")
	})
}

// inspectorRun lists the tools through the Inspector CLI with --strict
// (its schema-portability check of every input and output schema fails
// on an unportable schema) and calls each of the six with valid
// arguments (the Inspector checks each result against its output
// schema); team, when set, must be named in the results.
func inspectorRun(t *testing.T, bin string, ta *testApp, token, team string) {
	url := ta.url + "/mcp"
	inspect := func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		base := []string{"--cli", url, "--transport", "http", "--header", "Authorization: Bearer " + token, "--stored-auth-only", "--format", "json", "-q"}
		cmd := peerCmd(ctx, t, bin, "inspector", append(base, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s\n%s", args, err, b, stderr.Bytes())
		}
		var out struct {
			Result map[string]any `json:"result"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("inspector output %q: %v", b, err)
		}
		return out.Result
	}
	list := inspect("--method", "tools/list", "--strict")
	var names []string
	for _, tool := range list["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	toolOrder := []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "create_chart_preview", "explore_data"}
	if diff := cmp.Diff(toolOrder, names); diff != "" {
		t.Errorf("inspector tools/list mismatch (-want +got):\n%s", diff)
	}
	calls := map[string]string{
		"search_workspace":       `{"query":"signups","types":["dataset","chart"],"limit":5}`,
		"get_workspace_activity": `{"limit":5}`,
		"run_dataset":            `{"dataset_id":"ds_weekly_signups","filters":[{"field":"signups","op":"gte","value":0}],"limit":50}`,
		"get_chart_data":         `{"chart_id":"chart_weekly_signups","filters":[{"field":"week","op":"in","value":["2026-11-02","2026-11-09"]}]}`,
		"create_chart_preview":   `{"dataset_id":"ds_weekly_signups","chart_type":"bar","x_field":"week","y_fields":["signups"],"name":"Inspector preview"}`,
		"explore_data":           `{"operation":"inspect"}`,
	}
	for _, name := range toolOrder {
		t.Run(name, func(t *testing.T) {
			res := inspect("--method", "tools/call", "--tool-name", name, "--tool-args-json", calls[name])
			sc, _ := res["structuredContent"].(map[string]any)
			if res["isError"] == true || sc == nil {
				t.Fatalf("inspector %s = %v", name, res)
			}
			if name == "run_dataset" && sc["row_count"] != 12.0 {
				t.Errorf("inspector run_dataset row_count = %v, want 12", sc["row_count"])
			}
			if team != "" {
				if tm, _ := sc["team"].(map[string]any); tm["id"] != team {
					t.Errorf("inspector %s team = %v, want %s", name, sc["team"], team)
				}
			}
		})
	}
}

// startEverything runs server-everything over Streamable HTTP on a free
// loopback port and returns its /mcp URL once it listens.
func startEverything(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := peerCmd(ctx, t, bin, "mcp-server-everything", "streamableHttp")
	cmd.Env = append(cmd.Env, fmt.Sprintf("PORT=%d", port))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start server-everything: %v", err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServerEverything connects the reference server to
// @modelcontextprotocol/server-everything as a remote MCP connection, as
// an owner would: discovery, classification from its annotations,
// approval, a read-only call from Ask, and a dataset preview.
func TestServerEverything(t *testing.T) {
	bin := mustTools(t)
	url := startEverything(t, bin)
	model := mock.New()
	// Full rows are shared, so the model sees the remote answer's text
	// (below that level it is withheld: ask's TestRemoteSharing).
	ta := MustApp(t, func(c *config) { c.modelOverride, c.sharing = model, "rows" })
	alice := ta.session(t, "alice")
	var created struct{ Connection connections.Connection }
	ta.MustDo(t, http.StatusCreated, "POST", "/ai/connections", alice, map[string]any{"name": "Everything", "url": url}, &created)
	id := created.Connection.ID
	ta.MustDo(t, http.StatusOK, "POST", "/ai/connections/"+id+"/discover", alice, nil, &created)
	t.Logf("server-everything discovery: %+v", created.Connection.Discovery)
	if created.Connection.Discovery.Tools < 10 || created.Connection.Discovery.Omitted != 0 {
		t.Errorf("discovery = %+v; want its dozen-odd tools, all shown", created.Connection.Discovery)
	}
	classes := map[string]dataexec.Class{}
	states := map[string]connections.ToolState{}
	for page := 1; ; page++ {
		var p connections.ToolPage
		ta.MustDo(t, http.StatusOK, "GET", fmt.Sprintf("/ai/connections/%s/tools?page=%d", id, page), alice, nil, &p)
		for _, v := range p.Tools {
			classes[v.Name], states[v.Name] = v.Class, v.State
		}
		if page >= p.Pages {
			break
		}
	}
	t.Logf("server-everything tools: %v", classes)
	for name, want := range map[string]dataexec.Class{
		"echo": dataexec.ClassReadOnly, "get-sum": dataexec.ClassReadOnly, "get-structured-content": dataexec.ClassReadOnly,
		"toggle-simulated-logging": dataexec.ClassMutating, // readOnlyHint false, destructiveHint false
	} {
		if classes[name] != want {
			t.Errorf("%s is %q; want %q from its annotations", name, classes[name], want)
		}
		if states[name] != connections.ToolOff {
			t.Errorf("%s starts %q; want off", name, states[name])
		}
	}
	for _, name := range []string{"get-sum", "get-structured-content"} {
		ta.MustDo(t, http.StatusOK, "PUT", "/ai/connections/"+id+"/tools/"+name+"/access", alice, map[string]any{"allowed": true}, nil)
	}

	// Ask calls the approved read-only tool.
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": `use the get-sum tool with {"a": 2, "b": 3}`})
	done := chattest.MustToolEvent(t, events, ask.EventToolCompleted, "Everything__get-sum")
	if done.Tool.Class != dataexec.ClassReadOnly {
		t.Errorf("Everything__get-sum ran as %q; want read_only", done.Tool.Class)
	}
	// What the model saw: server-everything's answer, as untrusted data.
	reqs := model.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if out := msgs[len(msgs)-1].Text; !strings.Contains(out, `trust=\"untrusted\"`) && !strings.Contains(out, `trust="untrusted"`) || !strings.Contains(out, "5") {
		t.Errorf("the model saw %q; want the sum, marked untrusted", out)
	} else {
		t.Logf("the model saw: %s", out)
	}

	// A dataset preview through the executor on its structured content.
	live, err := ta.gate.Begin(t.Context(), access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := ta.executor.Explore(t.Context(), live, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: id,
		Tool: "get-structured-content", Arguments: json.RawMessage(`{"location":"Chicago"}`)})
	if err != nil {
		t.Fatalf("preview get-structured-content: %v", err)
	}
	res := ex.Preview
	if diff := cmp.Diff([]string{"conditions", "humidity", "temperature"}, res.Columns); diff != "" || res.RowCount != 1 {
		t.Errorf("preview = %+v; want one row of the weather fields (-want +got):\n%s", res, diff)
	}
	// A tool that was never approved does not run from a dataset.
	_, err = ta.executor.Explore(t.Context(), live, dataexec.Exploration{Operation: dataexec.ExplorePreview, ConnectionID: id,
		Tool: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)})
	if askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("preview of the unapproved echo = %v; want unavailable", err)
	}
}
