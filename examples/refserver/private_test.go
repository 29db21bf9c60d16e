package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/chattest"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/workspace"
)

// TestPreviewPrivate is issue 35's case: the preview alice's own chat
// made is hers until she places it. vic's context search, bob's MCP
// search_workspace and get_chart_data, bob's Data API reads and placement
// and bob's /previews/{id} page all answer as for a chart that does not
// exist; once alice places it, it is the team's. In memory and on
// PostgreSQL (pgstore.Catalog).
func TestPreviewPrivate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
	}{
		{"memory", nil},
		{"postgres", func(c *config) { c.inMemory, c.databaseURL = false, pgtest.MustDatabase(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ta := MustApp(t, tc.edit)
			alice, bob, vic := ta.session(t, "alice"), ta.session(t, "bob"), ta.session(t, "vic")
			conv := ta.MustConversation(t, alice)
			events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show signups by week"})
			var cr dataexec.ChartResult
			if err := json.Unmarshal(chattest.MustToolEvent(t, events, ask.EventToolCompleted, "create_chart_preview").Tool.Result, &cr); err != nil || cr.Status != workspace.StatusPreview {
				t.Fatalf("chart result: %v %+v", err, cr)
			}
			id := cr.Chart.ID

			inContext := func(token string) bool {
				t.Helper()
				var doc struct{ Groups []ask.ContextGroup }
				ta.MustDo(t, http.StatusOK, "GET", "/ai/context?teamId=acme&query="+url.QueryEscape(cr.Chart.Name), token, nil, &doc)
				for _, g := range doc.Groups {
					for _, it := range g.Items {
						if it.ID == id {
							return true
						}
					}
				}
				return false
			}
			mcpBob := ta.connect(t, ta.apiKey(t, "bob"))
			tool := func(name string, args map[string]any) (bool, string) {
				t.Helper()
				res, err := mcpBob.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res.StructuredContent)
				return res.IsError, string(b)
			}
			// api is bob's Data API answer for chart c, c's ID replaced.
			api := func(method, route, c, body string) string {
				t.Helper()
				var rd io.Reader
				if body != "" {
					rd = strings.NewReader(body)
				}
				req, _ := http.NewRequestWithContext(t.Context(), method, ta.url+strings.ReplaceAll(route, "{id}", c), rd)
				req.Header.Set("Authorization", "Bearer "+bob)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.Status + " " + strings.ReplaceAll(string(b), c, "{id}")
			}
			bobsBrowser := browserClient(t)
			if res, err := bobsBrowser.PostForm(ta.url+"/signin", url.Values{"token": {bob}}); err != nil {
				t.Fatal(err)
			} else {
				res.Body.Close()
			}

			if !inContext(alice) {
				t.Fatal("alice's context search does not list her preview")
			}
			if inContext(vic) {
				t.Error("vic's context search (GET /ai/context) lists alice's preview")
			}
			if _, out := tool("search_workspace", map[string]any{"query": cr.Chart.Name}); strings.Contains(out, id) {
				t.Errorf("bob's search_workspace lists alice's preview: %s", out)
			}
			wantErr, want := tool("get_chart_data", map[string]any{"chart_id": "chart_nope"})
			if gotErr, got := tool("get_chart_data", map[string]any{"chart_id": id}); !wantErr || !gotErr || got != strings.ReplaceAll(want, "chart_nope", id) {
				t.Errorf("bob's get_chart_data of alice's preview = %v %s; want what an unknown chart gets, %s", gotErr, got, want)
			}
			for _, r := range []struct{ method, route, body string }{
				{"GET", "/api/charts/{id}", ""},
				{"GET", "/api/charts/{id}/data", ""},
				{"POST", "/api/charts/{id}/add-to-dashboard", `{"dashboard_id":"dash_growth"}`},
			} {
				want := api(r.method, r.route, "chart_nope", r.body)
				if got := api(r.method, r.route, id, r.body); got != want || !strings.HasPrefix(want, "404") {
					t.Errorf("bob's %s %s of alice's preview = %s; want what an unknown chart gets, %s", r.method, r.route, got, want)
				}
			}
			if res := get(t, bobsBrowser, ta.url+"/previews/"+id); res.StatusCode != http.StatusNotFound {
				t.Errorf("bob's /previews/{id} page of alice's preview: %d, want 404", res.StatusCode)
			}

			// Alice places it from her chat: now the team's.
			ta.MustDo(t, http.StatusOK, "POST", "/ai/conversations/"+conv+"/charts/"+id+"/add-to-dashboard", alice, map[string]string{"dashboard_id": "dash_growth"}, nil)
			if !inContext(vic) {
				t.Error("vic's context search does not list the placed chart")
			}
			if _, out := tool("search_workspace", map[string]any{"query": cr.Chart.Name}); !strings.Contains(out, id) {
				t.Errorf("bob's search_workspace does not list the placed chart: %s", out)
			}
			if got := api("GET", "/api/charts/{id}/data", id, ""); !strings.HasPrefix(got, "200") {
				t.Errorf("bob's read of the placed chart = %.200s", got)
			}
			if res := get(t, bobsBrowser, ta.url+"/previews/"+id); res.StatusCode != http.StatusOK {
				t.Errorf("bob's /previews/{id} page of the placed chart: %d, want 200", res.StatusCode)
			}
		})
	}
}
