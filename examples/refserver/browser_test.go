package main

// TestBrowser runs the page's browser tests (examples/refserver/webtest,
// Node's test runner driving Debian's chromium through playwright-core)
// against a fresh server per test file. They need node, chromium and the
// pinned playwright-core that .ci/browser-tools.sh installs; point
// ASKBI_BROWSER_TOOLS at that folder.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// mustBrowser returns the tools folder and chromium, or skips loudly
// (fails when ASKBI_REQUIRE_BROWSER=1).
func mustBrowser(t *testing.T) (tools, chromium string) {
	t.Helper()
	chromium = os.Getenv("ASKBI_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	tools = os.Getenv("ASKBI_BROWSER_TOOLS")
	msg := ""
	switch _, err := os.Stat(filepath.Join(tools, "node_modules", "playwright-core", "package.json")); {
	case tools == "":
		msg = "set ASKBI_BROWSER_TOOLS to the folder .ci/browser-tools.sh installed (bash .ci/browser-tools.sh .tools/browser)"
	case err != nil:
		msg = "no playwright-core in ASKBI_BROWSER_TOOLS=" + tools + " (bash .ci/browser-tools.sh " + tools + ")"
	}
	if _, err := os.Stat(chromium); msg == "" && err != nil {
		msg = "no chromium at " + chromium + " (apt-get install chromium, or set ASKBI_CHROMIUM)"
	}
	if _, err := exec.LookPath("node"); msg == "" && err != nil {
		msg = "node is not installed"
	}
	if msg != "" {
		if os.Getenv("ASKBI_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING: " + msg)
	}
	abs, err := filepath.Abs(tools)
	if err != nil {
		t.Fatal(err)
	}
	return abs, chromium
}

// seedBrowserFixtures adds what the browser tests need beyond the demo
// workspace: a dataset on an inactive connection, whose runs fail, so a
// failed step can be seen ("show churn by plan"), and one with no
// numeric field, answered with a table ("Signup countries").
func seedBrowserFixtures(ta *testApp) {
	at := time.Now().Add(-48 * time.Hour).UTC()
	ctx := context.Background()
	ta.catalog.SaveConnection(ctx, workspace.Connection{ID: "conn_legacy", TeamID: teamAcme, Name: "Legacy warehouse", Type: "postgres",
		Active: false, CreatedAt: at, UpdatedAt: at})
	ta.catalog.CreateDataset(ctx, workspace.Dataset{ID: "ds_churn", TeamID: teamAcme, ProjectID: projGrowth, Name: "Churn by plan", Version: 1,
		Request: workspace.Request{ConnectionID: "conn_legacy", SQL: "SELECT plan, churned FROM churn"}, CreatedAt: at, UpdatedAt: at})
	ta.catalog.CreateDataset(ctx, workspace.Dataset{ID: "ds_signup_countries", TeamID: teamAcme, ProjectID: projGrowth, Name: "Signup countries", Version: 1,
		Request: workspace.Request{ConnectionID: "conn_acme_wh",
			SQL: sqlSignupCountries}, CreatedAt: at, UpdatedAt: at})
}

// mcpPreviewURL makes a preview as alice through MCP (create_chart_preview,
// with her API key) and returns the link the tool result gives.
func mcpPreviewURL(t *testing.T, ta *testApp) string {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "browser-links", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: ta.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{ta.apiKey(t, "alice")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "create_chart_preview", Arguments: map[string]any{
		"dataset_id": "ds_weekly_signups", "chart_type": "bar", "x_field": "week", "y_fields": []any{"signups"}, "name": "Signups from MCP"}})
	if err != nil || res.IsError {
		t.Fatalf("create_chart_preview: %v %+v", err, res)
	}
	var out struct {
		Chart struct{ URL string }
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.Chart.URL == "" {
		t.Fatalf("create_chart_preview: no chart URL in %s", b)
	}
	return out.Chart.URL
}

// holdFixture is a gated action for the browser tests whose approved
// call runs until the test releases it: each POST to url lets one call
// finish; stop lets every call finish (before the app's server closes,
// which waits for their requests).
type holdFixture struct {
	tool ask.Tool
	url  string
	stop func()
}

func startHold(t *testing.T) *holdFixture {
	releases, quit := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST to release one call", http.StatusMethodNotAllowed)
			return
		}
		releases <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return &holdFixture{url: srv.URL, stop: sync.OnceFunc(func() { close(quit) }), tool: ask.Tool{Name: "hold_export", Description: "Schedules an export of the workspace.",
		Class: dataexec.ClassMutating, Label: "Scheduled an export", Title: "Schedule an export",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":90}}}`),
		Run: func(ctx context.Context, call ask.Call) (ask.Output, error) {
			select {
			case <-releases:
			case <-quit:
			}
			return ask.Output{Summary: "export scheduled", Data: map[string]any{"scheduled": true}}, nil
		}}}
}

func TestBrowser(t *testing.T) {
	tools, chromium := mustBrowser(t)
	files, err := filepath.Glob(filepath.Join("webtest", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no browser tests in webtest/: %v", err)
	}
	artifacts := os.Getenv("ASKBI_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join("..", "..", ".artifacts", "browser")
	}
	if artifacts, err = filepath.Abs(artifacts); err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			var edit func(*config)
			var port string
			var hold *holdFixture
			switch filepath.Base(file) {
			case "streaming.test.mjs":
				// The mock model streams as the reference server's does.
				edit = func(c *config) { c.mockDelay = 40 * time.Millisecond }
			case "slow.test.mjs":
				// A model that answers slowly: the test moves the page's clock
				// on while the server has sent nothing yet.
				edit = func(c *config) { c.mockDelay = 20 * time.Second }
			case "running.test.mjs":
				// An action whose approved call runs until the test
				// releases it.
				hold = startHold(t)
				edit = func(c *config) { c.extraTools = []ask.Tool{hold.tool} }
			case "mcp-cors.test.mjs":
				// The web MCP client's page is served by the test on a
				// loopback port of its own (so no private network rule
				// applies), as http://localhost:PORT; http://127.0.0.1:PORT
				// is another origin.
				port = strconv.Itoa(freePort(t))
				edit = func(c *config) { c.mcpOrigins = "http://localhost:" + port }
			}
			ta := MustApp(t, edit)
			if hold != nil {
				t.Cleanup(hold.stop) // before the app's own cleanup
			}
			seedBrowserFixtures(ta)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", filepath.Base(file))
			cmd.Dir = "webtest"
			cmd.Env = append(os.Environ(), "ASKBI_BASE_URL="+ta.url, "ASKBI_BROWSER_TOOLS="+tools,
				"ASKBI_CHROMIUM="+chromium, "ASKBI_ARTIFACTS="+artifacts, "NO_COLOR=1")
			cmd.Env = append(cmd.Env, browserMCPEnv(t, ta)...)
			switch filepath.Base(file) {
			case "links.test.mjs":
				cmd.Env = append(cmd.Env, "ASKBI_MCP_PREVIEW_URL="+mcpPreviewURL(t, ta))
			case "running.test.mjs":
				cmd.Env = append(cmd.Env, "ASKBI_HOLD_URL="+hold.url)
			case "usage.test.mjs":
				// The test makes MCP tool calls as alice and as bob.
				cmd.Env = append(cmd.Env, "ASKBI_MCP_KEY="+ta.apiKey(t, "alice"), "ASKBI_MCP_KEY_BOB="+ta.apiKey(t, "bob"))
			case "mcp-app.test.mjs", "mcp-cors.test.mjs":
				// The test host calls the MCP tools as alice.
				cmd.Env = append(cmd.Env, "ASKBI_MCP_KEY="+ta.apiKey(t, "alice"), "ASKBI_WEB_CLIENT_PORT="+port)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", file, err, out)
			}
			t.Logf("%s\n%s", file, out)
		})
	}
}
