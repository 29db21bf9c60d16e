package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
)

// TestUnknownRoutesAnswerJSON: a path under /ai/ that does not exist, or a
// method a route does not take, answers the JSON error body.
func TestUnknownRoutesAnswerJSON(t *testing.T) {
	ta := MustApp(t, nil, nil)
	alice := ta.session(t, "alice")
	for _, tc := range []struct {
		method, path string
		status       int
		allow        []string
	}{
		{"GET", "/ai/nope", 404, nil},
		{"GET", "/ai/conversations/x/nope", 404, nil},
		{"PATCH", "/ai/memory", 405, []string{"DELETE", "GET", "POST"}},
		{"PUT", "/ai/conversations/x", 405, []string{"DELETE", "GET"}},
		{"GET", "/ai/conversations/x/messages", 405, []string{"POST"}},
		{"POST", "/ai/context", 405, []string{"GET"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, h, b := ta.do(t, tc.method, tc.path, alice, nil)
			if status != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("status %d, Content-Type %q, body %s", status, h.Get("Content-Type"), b)
			}
			want := askbi.NotFound
			if tc.status == 405 {
				want = askbi.Unsupported
			}
			if got := errorOf(t, b).Code; got != want {
				t.Errorf("code %q, want %q", got, want)
			}
			if tc.allow != nil {
				var got []string
				for m := range strings.SplitSeq(h.Get("Allow"), ",") {
					if m = strings.TrimSpace(m); m != "HEAD" {
						got = append(got, m)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.allow) {
					t.Errorf("Allow %q, want %v", h.Get("Allow"), tc.allow)
				}
			}
		})
	}
}

type statusDoc struct {
	Available bool   `json:"available"`
	Reason    string `json:"reason"`
}

// TestModelNotConfigured: without its API key the server still starts;
// the assistant says it is unavailable and why, and MCP keeps serving.
func TestModelNotConfigured(t *testing.T) {
	ta := MustApp(t, func(c *config) {
		c.provider, c.model, c.providerKeyEnv = "openai", "gpt-4o-mini", "ASKBI_TEST_UNSET_KEY"
	}, nil)
	alice := ta.session(t, "alice")
	var st statusDoc
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", alice, nil, &st)
	if st.Available || st.Reason != "The assistant's model is not configured." {
		t.Errorf("status = %+v", st)
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/ai/conversations", "{}"}, {"GET", "/ai/conversations", ""}, {"POST", "/ai/conversations/conv_x/messages", `{"message":"hi"}`},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		status, _, b := ta.do(t, r.method, r.path, alice, body)
		if status != http.StatusServiceUnavailable || errorOf(t, b).Code != askbi.Unavailable ||
			errorOf(t, b).Message != st.Reason || strings.Contains(string(b), "ASKBI_TEST_UNSET_KEY") {
			t.Errorf("%s %s: %d %s", r.method, r.path, status, b)
		}
	}
	// Memory needs no model.
	ta.MustDo(t, http.StatusOK, "GET", "/ai/memory", alice, nil, nil)
	// MCP serves.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	status, _, b := ta.do(t, "POST", "/mcp", ta.apiKey(t, "alice"), body, "Accept", "application/json, text/event-stream",
		"MCP-Protocol-Version", "2025-11-25")
	if status != http.StatusOK || !strings.Contains(string(b), "run_dataset") {
		t.Errorf("MCP tools/list: %d %s", status, b)
	}
}

// TestAssistantRight: a host that withdraws the assistant from a role
// keeps those members out of every chat route, and the status says why.
func TestAssistantRight(t *testing.T) {
	ta := MustApp(t, func(c *config) { c.assistantRoles = "owner,admin,editor" }, nil)
	vic, alice := ta.session(t, "vic"), ta.session(t, "alice")
	var st statusDoc
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", vic, nil, &st)
	if st.Available || !strings.Contains(st.Reason, "role") {
		t.Errorf("vic's status = %+v", st)
	}
	st = statusDoc{}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/status", alice, nil, &st)
	if !st.Available || st.Reason != "" {
		t.Errorf("alice's status = %+v", st)
	}
	conv := ta.MustConversation(t, alice)
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/ai/conversations", ""},
		{"GET", "/ai/conversations", ""},
		{"GET", "/ai/conversations/" + conv, ""},
		{"DELETE", "/ai/conversations/" + conv, ""},
		{"POST", "/ai/conversations/" + conv + "/messages", `{"message":"hi"}`},
		{"POST", "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/approve", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/" + conv + "/approvals/apr_aaaaaaaaaaaaaaaaaaaa/reject", `{"tool":"delete_dashboard","arguments":{}}`},
		{"POST", "/ai/conversations/" + conv + "/charts/chart_x/add-to-dashboard", `{"dashboard_id":"dash_growth"}`},
		{"GET", "/ai/context?teamId=acme", ""},
		{"GET", "/ai/memory", ""},
		{"POST", "/ai/memory", `{"text":"x"}`},
		{"DELETE", "/ai/memory", ""},
	} {
		var body any
		if r.body != "" {
			body = r.body
		}
		status, _, b := ta.do(t, r.method, r.path, vic, body)
		if status != http.StatusForbidden || errorOf(t, b).Code != askbi.Forbidden {
			t.Errorf("vic %s %s: %d %s", r.method, r.path, status, b)
		}
	}
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, nil)
}

// TestSessionTokenRedacted: a session token pasted into the chat is
// redacted in history, events and what the model sees.
func TestSessionTokenRedacted(t *testing.T) {
	model := mock.New()
	ta := MustApp(t, func(c *config) { c.modelOverride = model }, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	events := ta.MustTurn(t, "/ai/conversations/"+conv+"/messages", alice, map[string]any{"message": "my token is " + alice + ", show signups by week"})
	secret := strings.TrimPrefix(alice, sessionPrefix)
	b, _ := json.Marshal(events)
	var view ask.View
	ta.MustDo(t, http.StatusOK, "GET", "/ai/conversations/"+conv, alice, nil, &view)
	v, _ := json.Marshal(view)
	m, _ := json.Marshal(model.Requests())
	for where, s := range map[string]string{"events": string(b), "history": string(v), "model context": string(m)} {
		if strings.Contains(s, secret) {
			t.Errorf("%s hold the session token", where)
		}
	}
	if !strings.Contains(string(v), "my token is [redacted]") {
		t.Errorf("history: %s", v)
	}
}
