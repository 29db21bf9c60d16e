package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/internal/pgtest"
)

// TestDemoResolution: the demo catalog resolves a missing provider to
// each state, through the setup route and through Ask.
func TestDemoResolution(t *testing.T) {
	ta := MustApp(t, nil)
	for _, tc := range []struct {
		who, query string
		want       []string
	}{
		{"alice", "provider=PostgreSQL", []string{"connected Acme warehouse"}},
		{"alice", "capability=database", []string{"connected Acme warehouse"}},
		{"alice", "provider=Acme+analytics", []string{"connected Acme analytics"}},
		{"alice", "provider=MySQL", []string{"native_setup MySQL"}},
		{"alice", "provider=PostHog", []string{"mcp_oauth_setup PostHog"}},
		{"alice", "provider=Demo+Analytics", []string{"mcp_oauth_setup Demo Analytics"}},
		{"alice", "capability=web_analytics", []string{"mcp_oauth_setup PostHog", "mcp_oauth_setup Demo Analytics"}},
		{"alice", "provider=Plausible", []string{"manual_mcp_setup Plausible"}},
		{"vic", "provider=PostHog", []string{"admin_required PostHog"}},
		{"bob", "provider=MySQL", []string{"admin_required MySQL"}},
		{"alice", "capability=error_tracking", []string{"unsupported "}},
		{"carol", "provider=PostgreSQL", []string{"connected Globex warehouse"}},
	} {
		var doc struct{ Setup ask.ConnectionSetup }
		ta.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?"+tc.query, ta.session(t, tc.who), nil, &doc)
		var got []string
		for _, o := range doc.Setup.Options {
			got = append(got, string(o.State)+" "+o.Provider+strings.TrimPrefix(o.ConnectionName, o.Provider))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.who, tc.query, diff)
		}
	}
	conv := ta.MustConversation(t, ta.session(t, "alice"))
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", ta.session(t, "alice"), map[string]any{"message": "show pageviews from PostHog by week"})
	var res ask.ConnectionSetup
	for _, e := range events {
		if e.Type == ask.EventToolCompleted && e.Tool.Name == "list_connections" {
			json.Unmarshal(e.Tool.Result, &res)
		}
	}
	if res.Type != ask.ConnectionSetupType || !res.NeedsSetup || res.Options[0].State != "mcp_oauth_setup" {
		t.Errorf("Ask's list_connections: %+v", res)
	}
}

// TestDemoOAuth is the demo's save and connect end to end, on both
// storages: Connect from the chat's card, the provider's redirect, the
// callback to the connection page (#/connections/{id}) with the
// conversation and team, the connection active after discovery, the
// card connected once a tool is allowed, and Continue request answering
// the question with the provider's tool, drawn as a chart.
func TestDemoOAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config)
	}{
		{"in memory", nil},
		{"PostgreSQL", func(c *config) { c.inMemory, c.databaseURL = false, pgtest.MustDatabase(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ta := MustApp(t, tc.edit)
			alice := ta.session(t, "alice")
			conv := ta.MustConversation(t, alice)
			ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "show pageviews from Demo Analytics by week"})
			var view ask.View
			ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
			asked := len(view.Messages)
			status, h, b := ta.Do(t, "POST", "/ai/connections/connect", alice, map[string]any{"provider": "Demo Analytics", "conversation_id": conv})
			var ans struct {
				Connection       connections.Connection
				AuthorizationURL string `json:"authorization_url"`
			}
			json.Unmarshal(b, &ans)
			if status != http.StatusCreated || ans.AuthorizationURL == "" || ans.Connection.Active {
				t.Fatalf("connect: %d %s", status, b)
			}
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := noFollow.Get(ans.AuthorizationURL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			req, _ := http.NewRequest("GET", resp.Header.Get("Location"), nil)
			for _, c := range (&http.Response{Header: h}).Cookies() {
				req.AddCookie(c)
			}
			if resp, err = noFollow.Do(req); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			want := url.Values{"oauth": {"connected"}, "connection": {ans.Connection.ID}, "conversation": {conv}, "team": {"acme"}}
			if resp.StatusCode != http.StatusSeeOther || loc.Path != "/" || loc.Fragment != "/connections/"+ans.Connection.ID || !cmp.Equal(want, loc.Query()) {
				t.Fatalf("callback: %d to %s; want 303 to /?%s#/connections/%s", resp.StatusCode, loc, want.Encode(), ans.Connection.ID)
			}
			var got struct{ Connection connections.Connection }
			ta.MustDo(t, http.StatusOK, "GET", "/ai/connections/"+ans.Connection.ID, alice, nil, &got)
			if !got.Connection.Active || !got.Connection.HasToken || got.Connection.Discovery.Tools != 3 {
				t.Fatalf("after the callback: %+v", got.Connection)
			}
			ta.MustDo(t, http.StatusOK, "PUT", "/ai/connections/"+ans.Connection.ID+"/tools/pageviews_by_week/access", alice, map[string]any{"allowed": true}, nil)
			ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
			if len(view.Messages) != asked {
				t.Errorf("the OAuth return wrote messages into the conversation: %+v", view.Messages)
			}
			// Continue request resumes the question that led to the card:
			// the fresh check, then the provider's tool that fits it, drawn
			// as a chart in the chat.
			events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": ask.ContinueRequest})
			var ran []string
			var drawn ask.RemoteResult
			for _, e := range events {
				if e.Type == ask.EventToolCompleted {
					ran = append(ran, e.Tool.Name)
					if e.Tool.Name == "Demo_Analytics__pageviews_by_week" {
						json.Unmarshal(e.Tool.Result, &drawn)
					}
				}
			}
			if diff := cmp.Diff([]string{"list_connections", "Demo_Analytics__pageviews_by_week"}, ran); diff != "" {
				t.Errorf("Continue request ran (-want +got):\n%s", diff)
			}
			if drawn.Kind != ask.RemoteChart || drawn.Chart == nil || len(drawn.Chart.Labels) != 8 || drawn.Chart.Labels[0] != "2026-09-07" {
				t.Errorf("the tool's result %+v; want a chart of 8 weeks", drawn)
			}
			if e := find(events, ask.EventMessageCompleted); e == nil || !strings.HasPrefix(e.Text, "pageviews_by_week on Demo Analytics returned 8 rows") {
				t.Errorf("the answer %v; want what came back", e)
			}
			ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
			var inert []bool
			for _, r := range view.WorkSummary {
				var s ask.ConnectionSetup
				if json.Unmarshal(r.Result, &s) == nil && s.Type == ask.ConnectionSetupType {
					inert = append(inert, s.Inert)
				}
			}
			if diff := cmp.Diff([]bool{true, true}, inert); diff != "" {
				t.Errorf("cards inert once the request continued (-want +got):\n%s", diff)
			}
			// The tool answers with the stored (sealed) token.
			events = ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "use the pageviews_by_week tool"})
			if e := find(events, ask.EventToolCompleted); e == nil || e.Tool.Name != "Demo_Analytics__pageviews_by_week" {
				t.Errorf("the demo provider's tool did not run: %v", events)
			}
			var setup struct{ Setup ask.ConnectionSetup }
			ta.MustDo(t, http.StatusOK, "GET", "/ai/connections/setup?provider=Demo+Analytics", alice, nil, &setup)
			if setup.Setup.NeedsSetup || setup.Setup.Options[0].ConnectionName != "Demo Analytics" {
				t.Errorf("setup after connecting: %+v", setup.Setup)
			}
		})
	}
}

func find(events []ask.Event, typ ask.EventType) *ask.Event {
	for i := range events {
		if events[i].Type == typ {
			return &events[i]
		}
	}
	return nil
}
