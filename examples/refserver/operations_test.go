package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/usage"
)

// mustPrometheus returns the path of Debian's prometheus, or skips
// loudly where it is not installed (fails when ASKBI_REQUIRE_PROMETHEUS=1).
func mustPrometheus(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("prometheus")
	if err != nil {
		msg := "SKIPPING: prometheus is not installed (apt-get install prometheus)"
		if os.Getenv("ASKBI_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// promQuery is a Prometheus server's answer to an instant query, by the
// label named: its values.
func promQuery(t *testing.T, addr, query, label string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil // not up yet
	}
	defer resp.Body.Close()
	var doc struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &doc) != nil || doc.Status != "success" {
		return nil
	}
	out := map[string]float64{}
	for _, r := range doc.Data.Result {
		s, _ := r.Value[1].(string)
		v, _ := strconv.ParseFloat(s, 64)
		out[r.Metric[label]] = v
	}
	return out
}

// TestPrometheusScrapes: Debian's Prometheus scrapes the reference
// server's debug listener (-debug-addr: /metrics) and its HTTP API
// answers the request counter after a few MCP and chat calls, and what
// an operator asks: what team Acme's assistant cost, and which tool
// fails most; a turn past Acme's budget shows as refused
// budget_exceeded.
func TestPrometheusScrapes(t *testing.T) {
	bin := mustPrometheus(t)
	debug := freeAddr(t)
	p := MustStart(t, MustBinary(t), nil, "-in-memory", "-data-dir", t.TempDir(), "-mock-delay", "0", "-debug-addr", debug)

	key, alice, bob := MustPrincipal(t, p.creds, "alice").APIKey, p.session(t, "alice"), p.session(t, "bob")
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"search_workspace", map[string]any{"query": "signups"}, ""},
		{"run_dataset", map[string]any{"dataset_id": "ds_weekly_signups"}, ""},
		{"run_dataset", map[string]any{"dataset_id": "ds_nope"}, "not_found"},
	} {
		a, err := p.mcpPost(key, "tools/call", map[string]any{"name": c.tool, "arguments": c.args})
		if err != nil || a.code() != c.code {
			t.Fatalf("%s %v: %+v %v, want code %q", c.tool, c.args, a, err, c.code)
		}
	}
	conv := p.MustConversation(t, bob)
	p.MustTurn(t, "/ai/conversations/"+conv+"/messages", bob, map[string]any{"message": "show signups by week"})
	// Alice's budget for the team is below what bob's turn used: his
	// next message is refused.
	p.MustDo(t, http.StatusOK, "PUT", "/ai/usage/budgets", alice, map[string]any{"period": "day", "tokens": 1}, nil)
	if status, _, b := p.Do(t, "POST", "/ai/conversations/"+conv+"/messages", bob, map[string]any{"message": "show MRR by month"}); status != http.StatusTooManyRequests {
		t.Fatalf("a message past the budget: %d %s, want 429", status, b)
	}

	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: askbi\n    static_configs:\n      - targets: [%q]\n", debug)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	var requests map[string]float64
	pollUntil(t, 60*time.Second, "Prometheus has scraped the request counter", func() bool {
		requests = promQuery(t, addr, `sum by (askbi_surface) (askbi_requests_total)`, "askbi_surface")
		return requests["mcp"] >= 3 && requests["chat"] >= 2
	})
	if requests["mcp"] != 3 || requests["chat"] != 2 {
		t.Errorf("askbi_requests_total by surface: %v, want 3 MCP requests and 2 chat requests", requests)
	}
	cost := promQuery(t, addr, `sum by (askbi_team_id) (askbi_chat_cost_usd_total)`, "askbi_team_id")
	if cost["acme"] <= 0 || len(cost) != 1 {
		t.Errorf("the cost by team: %v, want Acme's alone, more than 0", cost)
	}
	failing := promQuery(t, addr, `topk(1, sum by (gen_ai_tool_name) (askbi_tool_duration_seconds_count{error_type!=""}))`, "gen_ai_tool_name")
	if _, ok := failing["run_dataset"]; !ok || len(failing) != 1 {
		t.Errorf("the tool that fails most: %v, want run_dataset", failing)
	}
	tokens := promQuery(t, addr, `sum by (gen_ai_token_type) (askbi_chat_tokens_total{askbi_team_id="acme"})`, "gen_ai_token_type")
	if tokens["input"] <= 0 || tokens["output"] <= 0 {
		t.Errorf("Acme's tokens by type: %v, want input and output", tokens)
	}
	refused := promQuery(t, addr, `sum by (error_type) (askbi_refused_total)`, "error_type")
	if refused["budget_exceeded"] != 1 {
		t.Errorf("refusals by code: %v, want 1 budget_exceeded", refused)
	}
}

// TestBudgetOverHTTP: on PostgreSQL, an owner sets the team's daily
// budget below what it used; a member's next message is refused 429
// budget_exceeded with a sentence that names the budget, who set it and
// when it resets, no turn is saved and the model is not called; a
// member cannot raise it, nor can a budget be set for a non-member; the usage view counts the refusal, and a
// viewer sees only his own row. When the day's charges are a day old
// (moved back in the database: the clock of a day later) the budget has
// reset and the next message runs.
func TestBudgetOverHTTP(t *testing.T) {
	dbURL := pgtest.MustDatabase(t)
	model := mock.New()
	ta := MustApp(t, func(c *config) {
		c.inMemory, c.databaseURL, c.dataDir, c.modelOverride = false, dbURL, t.TempDir(), model
	})
	alice, bob, vic := ta.session(t, "alice"), ta.session(t, "bob"), ta.session(t, "vic")
	conv := ta.MustConversation(t, bob)
	path := "/ai/conversations/" + conv + "/messages"
	ta.MustTurn(t, path, bob, map[string]any{"message": "show signups by week"})
	ta.mustTool(t, ta.apiKey(t, "vic"), "search_workspace", map[string]any{"query": "signups"})

	var st usage.BudgetStatus
	ta.MustDo(t, http.StatusOK, "PUT", "/ai/usage/budgets", alice, map[string]any{"period": "day", "tokens": 100}, &st)
	if !st.Exceeded || st.Used <= 100 || st.SetBy != "alice" {
		t.Fatalf("the budget set: %+v, want exceeded, set by alice", st)
	}
	if status, _, b := ta.Do(t, "PUT", "/ai/usage/budgets", bob, map[string]any{"period": "day", "tokens": 1 << 30}); status != http.StatusForbidden {
		t.Errorf("bob raises the budget: %d %s, want 403", status, b)
	}
	if status, _, b := ta.Do(t, "PUT", "/ai/usage/budgets", alice, map[string]any{"user_id": "carol", "period": "day", "tokens": 1}); status != http.StatusBadRequest {
		t.Errorf("a budget for Globex's carol in Acme: %d %s, want 400", status, b)
	}
	calls := len(model.Requests())
	status, _, b := ta.Do(t, "POST", path, bob, map[string]any{"message": "show MRR by month"})
	e := chattest.MustError(t, b)
	now := time.Now().UTC()
	want := fmt.Sprintf("Acme's daily token budget of 100 tokens is used up (%s used). It was set by alice on %s and resets at 00:00 UTC on %s. A team owner or admin can raise it.",
		thousands(st.Used), now.Format("2 Jan 2006"), usage.Day.Next(now).Format("2 Jan 2006"))
	if status != http.StatusTooManyRequests || e.Code != "budget_exceeded" || e.Message != want {
		t.Errorf("a message past the budget: %d %+v, want 429 budget_exceeded %q", status, e, want)
	}
	if n := len(model.Requests()); n != calls {
		t.Errorf("the refused message made %d model calls", n-calls)
	}
	var view struct {
		Messages []json.RawMessage `json:"messages"`
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, bob, nil, &view)
	if len(view.Messages) != 2 {
		t.Errorf("%d messages after the refusal, want the first turn's 2", len(view.Messages))
	}

	// The audit log reaches the database within a second.
	var r usage.Report
	pollUntil(t, 10*time.Second, "the usage view counts the calls", func() bool {
		ta.MustDo(t, http.StatusOK, "GET", "/ai/usage", alice, nil, &r)
		return len(r.Users) == 2 && r.Total.MCPCalls == 1
	})
	for _, u := range r.Users {
		if u.UserID == "bob" && (u.ChatTurns != 2 || u.ChatErrors != 1 || u.ModelCalls == 0 || u.CostUSD <= 0) {
			t.Errorf("bob's row: %+v, want 2 turns (1 refused), model calls and a cost", u)
		}
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/usage", vic, nil, &r)
	if len(r.Users) != 1 || r.Users[0].UserID != "vic" || r.Total.ChatTurns != 0 || len(r.Models) != 0 {
		t.Errorf("vic's view: %+v, want his own row alone", r)
	}

	// A day later: the charges so far are yesterday's.
	db, err := sqlx.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE usage_charges SET at = at - interval '1 day'`); err != nil {
		t.Fatal(err)
	}
	events := ta.MustTurn(t, path, bob, map[string]any{"message": "show MRR by month"})
	if typ := chattest.Types(events); typ[len(typ)-1] != "request.completed" {
		t.Errorf("the message after the reset: %v, want request.completed", typ)
	}
	if n := len(model.Requests()); n == calls {
		t.Error("the message after the reset called no model")
	}
	var bs struct{ Budgets []usage.BudgetStatus }
	ta.MustDo(t, http.StatusOK, "GET", "/ai/usage/budgets", alice, nil, &bs)
	if len(bs.Budgets) != 1 || bs.Budgets[0].Used <= 0 || bs.Budgets[0].Used >= st.Used {
		t.Errorf("the budget after the reset: %+v, want today's turn alone counted", bs.Budgets)
	}
}

// thousands writes n as the refusal does: 1,234.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
