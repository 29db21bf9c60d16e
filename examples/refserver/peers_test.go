package main

// Tests of the reference server against real MCP peers that nobody here
// wrote: the official MCP conformance suite and the MCP Inspector CLI. They
// need the pinned tools that .ci/mcp-tools.sh installs; point
// ASKBI_MCP_TOOLS at that folder.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
// server with only tools. The suite (0.1.16) has no 2026-07-28 scenario.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"}

func TestConformanceSuite(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, nil)
	proxy := httptest.NewServer(withBearer(ta.apiKey(t, "alice"), ta.routes()))
	defer proxy.Close()
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out := t.TempDir()
			cmd := peerCmd(ctx, t, bin, "conformance", "server", "--url", proxy.URL+"/mcp", "--scenario", scenario, "-o", out)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance %s: %v\n%s", scenario, err, b)
			}
			checks, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
			if len(checks) != 1 {
				t.Fatalf("conformance %s wrote %d checks.json files", scenario, len(checks))
			}
			raw, err := os.ReadFile(checks[0])
			if err != nil {
				t.Fatal(err)
			}
			var results []struct{ ID, Status string }
			if err := json.Unmarshal(raw, &results); err != nil {
				t.Fatal(err)
			}
			counts := map[string]int{}
			for _, r := range results {
				counts[r.Status]++
			}
			t.Logf("conformance %s: %v", scenario, counts)
			if counts["SUCCESS"] == 0 || counts["FAILURE"] > 0 {
				t.Errorf("conformance %s: %v\n%s", scenario, counts, raw)
			}
		})
	}
}

func TestInspectorCLI(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, nil)
	token, url := ta.apiKey(t, "alice"), ta.url+"/mcp"
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
	list := inspect("--method", "tools/list")
	var names []string
	for _, tool := range list["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	toolOrder := []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "create_chart_preview", "explore_data"}
	if diff := cmp.Diff(toolOrder, names); diff != "" {
		t.Errorf("inspector tools/list mismatch (-want +got):\n%s", diff)
	}
	res := inspect("--method", "tools/call", "--tool-name", "run_dataset", "--tool-arg", "dataset_id=ds_weekly_signups")
	sc, _ := res["structuredContent"].(map[string]any)
	if res["isError"] == true || sc == nil || sc["row_count"] != 12.0 {
		t.Errorf("inspector run_dataset = %v", res)
	}
}
