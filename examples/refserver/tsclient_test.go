package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/mcpserver/oauth"
)

// tsReport is what mcptest/tsclient.mjs prints.
type tsReport struct {
	SDK           string `json:"sdk"`
	Server        string `json:"server"`
	Authorization struct {
		ClientID            string `json:"client_id"`
		Registered          bool   `json:"registered"`
		Resource            string `json:"resource"`
		CodeChallengeMethod string `json:"code_challenge_method"`
		StateReturned       bool   `json:"state_returned"`
		Iss                 string `json:"iss"`
	} `json:"authorization"`
	Token struct {
		AccessPrefix string `json:"access_prefix"`
		Refresh      bool   `json:"refresh"`
		TokenType    string `json:"token_type"`
	} `json:"token"`
	Tools []string `json:"tools"`
	Calls []struct {
		Name              string         `json:"name"`
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
		Content           []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"calls"`
}

// tsCall is one tools/call the script makes.
type tsCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// runTSClient runs the TypeScript SDK client in mode with env added.
func runTSClient(t *testing.T, bin string, ta *testApp, mode string, calls []tsCall, env ...string) tsReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("mcptest", "tsclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cj, _ := json.Marshal(calls)
	cmd := peerCmd(ctx, t, bin, "node", script)
	cmd.Env = append(cmd.Env, append([]string{"ASKBI_MCP_TOOLS=" + filepath.Dir(filepath.Dir(bin)),
		"ASKBI_MCP_URL=" + ta.url + "/mcp", "ASKBI_MODE=" + mode, "ASKBI_CALLS=" + string(cj)}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tsclient (%s): %v\n%s\n%s", mode, err, out, stderr.Bytes())
	}
	var r tsReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("tsclient output %q: %v", out, err)
	}
	return r
}

// TestTypeScriptSDKClient: the official TypeScript MCP SDK as a client,
// with its own OAuth client (the 401, both metadata documents, dynamic
// registration, S256 PKCE, the state round trip, iss, the exchange; the
// consent page answered as a browser would) and with an API key. It
// lists the tools and calls them; its callTool checks each
// structuredContent against the tool's output schema.
func TestTypeScriptSDKClient(t *testing.T) {
	bin := mustTools(t)
	ta := MustApp(t, nil)
	calls := []tsCall{
		{Name: "search_workspace", Arguments: map[string]any{"query": "signups"}},
		{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_weekly_signups"}},
		{Name: "get_chart_data", Arguments: map[string]any{"chart_id": "chart_weekly_signups"}},
	}
	check := func(t *testing.T, r tsReport, wantTools []string, team string) {
		t.Helper()
		if r.SDK != "1.32.2" || r.Server != "askbi" {
			t.Errorf("sdk %q, server %q", r.SDK, r.Server)
		}
		if diff := cmp.Diff(wantTools, r.Tools); diff != "" {
			t.Errorf("tools/list mismatch (-want +got):\n%s", diff)
		}
		if len(r.Calls) != len(calls) {
			t.Fatalf("%d calls answered, want %d", len(r.Calls), len(calls))
		}
		for _, c := range r.Calls {
			if c.IsError || c.StructuredContent == nil || len(c.Content) == 0 {
				t.Errorf("%s: isError %v, structuredContent %v, content %v", c.Name, c.IsError, c.StructuredContent, c.Content)
			}
		}
		run := r.Calls[1].StructuredContent
		if run["row_count"] != 12.0 {
			t.Errorf("run_dataset row_count = %v, want 12", run["row_count"])
		}
		if team != "" {
			if tm, _ := run["team"].(map[string]any); tm["id"] != team {
				t.Errorf("run_dataset team = %v, want %s", run["team"], team)
			}
		}
	}
	t.Run("OAuth", func(t *testing.T) {
		r := runTSClient(t, bin, ta, "oauth", calls, "ASKBI_SESSION_COOKIE="+sessionCookie,
			"ASKBI_SESSION="+ta.session(t, "alice"), "ASKBI_TEAM="+teamAcme)
		a := r.Authorization
		if a.Resource != ta.url+"/mcp" || a.CodeChallengeMethod != "S256" || !a.StateReturned || a.Iss != ta.url {
			t.Errorf("authorization %+v: want resource %s/mcp, S256, the state back and iss %s", a, ta.url, ta.url)
		}
		if r.Token.AccessPrefix != "askbi_at_" || !r.Token.Refresh {
			t.Errorf("token %+v: want an askbi access token and a refresh token", r.Token)
		}
		// The consent page's defaults grant read and refresh: no previews.
		check(t, r, []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "explore_data"}, teamAcme)
	})
	t.Run("OAuth with a client ID metadata document", func(t *testing.T) {
		// The client's document, over https on loopback as the SDK
		// requires; the reference server trusts the test's certificate
		// and, in its demo mode, documents on loopback.
		var docURL string
		var fetches atomic.Int32
		doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fetches.Add(1)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "TypeScript SDK test client (document)",
				"redirect_uris": []string{"http://127.0.0.1:33419/callback"}, "grant_types": []string{"authorization_code", "refresh_token"},
				"response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
		}))
		defer doc.Close()
		docURL = doc.URL + "/oauth/client-metadata.json"
		roots := x509.NewCertPool()
		roots.AddCert(doc.Certificate())
		ta := MustApp(t, func(c *config) { c.documentRoots = roots })
		r := runTSClient(t, bin, ta, "oauth", calls, "ASKBI_SESSION_COOKIE="+sessionCookie,
			"ASKBI_SESSION="+ta.session(t, "alice"), "ASKBI_TEAM="+teamAcme, "ASKBI_CLIENT_METADATA_URL="+docURL)
		if a := r.Authorization; a.ClientID != docURL || a.Registered || a.CodeChallengeMethod != "S256" || a.Iss != ta.url {
			t.Errorf("authorization %+v: want client_id %s, no registration, S256, iss %s", a, docURL, ta.url)
		}
		if fetches.Load() == 0 {
			t.Error("the server never fetched the client's document")
		}
		for _, e := range ta.audit.Entries() {
			if e.Action == oauth.ActionRegister {
				t.Errorf("a client registered: %+v", e)
			}
		}
		check(t, r, []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "explore_data"}, teamAcme)
	})
	t.Run("API key", func(t *testing.T) {
		r := runTSClient(t, bin, ta, "apikey", calls, "ASKBI_API_KEY="+ta.apiKey(t, "alice"))
		check(t, r, []string{"search_workspace", "get_workspace_activity", "run_dataset", "get_chart_data", "create_chart_preview", "explore_data"}, "")
	})
	// An API key missing a scope gets a tool error naming it, which the
	// SDK's client hands over as a result, not an HTTP 403 it cannot act
	// on.
	t.Run("API key missing a scope", func(t *testing.T) {
		r := runTSClient(t, bin, ta, "apikey", []tsCall{{Name: "run_dataset", Arguments: map[string]any{"dataset_id": "ds_weekly_signups", "refresh": true}}},
			"ASKBI_API_KEY="+ta.apiKey(t, "alice-read"))
		if len(r.Calls) != 1 || !r.Calls[0].IsError || r.Calls[0].StructuredContent["code"] != "scope_required" {
			t.Fatalf("run_dataset with refresh by a data:read key = %+v, want the tool error scope_required", r.Calls)
		}
		if msg, _ := r.Calls[0].StructuredContent["message"].(string); !strings.Contains(msg, "data:refresh") {
			t.Errorf("the scope_required message %q does not name data:refresh", msg)
		}
	})
}
