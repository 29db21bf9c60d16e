package usagehttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
	"github.com/askbi/askbi/usage"
	"github.com/askbi/askbi/usage/usagehttp"
)

var now = time.Date(2026, 12, 9, 15, 0, 0, 0, time.UTC)

// server is the routes over an in-memory store holding a call of each
// of alice, bob and vic, with tokens "alice", "bob" and "vic".
func server(t *testing.T) *httptest.Server {
	t.Helper()
	store := usage.NewMemoryStore(nil)
	for _, u := range []string{"alice", "bob", "vic"} {
		store.Record(context.Background(), access.AuditEntry{Time: now.Add(-time.Hour), Action: access.ActionChatTurn, UserID: u, TeamID: "acme", Outcome: access.OutcomeOK})
	}
	gate := access.NewGate(access.NewChecker(accesstest.Teams(), nil), nil)
	svc := usage.NewService(store, store, gate, &usage.Options{Now: func() time.Time { return now }})
	authn := func(r *http.Request) (access.Principal, error) {
		p, ok := accesstest.Sessions[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			return access.Principal{}, askbi.E(askbi.Unauthenticated)
		}
		return p, nil
	}
	mux := http.NewServeMux()
	h := usagehttp.New(svc, authn, &usagehttp.Options{Now: func() time.Time { return now }})
	mux.Handle("/ai/usage", h)
	mux.Handle("/ai/usage/", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, ts *httptest.Server, method, path, who, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+who)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	json.Unmarshal(b, &doc)
	return resp.StatusCode, doc
}

// TestRoutes: the view is the team's for an owner and one's own for a
// viewer; budgets are set and removed by owners only; errors carry their
// code's status.
func TestRoutes(t *testing.T) {
	ts := server(t)
	users := func(doc map[string]any) int { l, _ := doc["users"].([]any); return len(l) }
	if status, doc := do(t, ts, "GET", "/ai/usage", "alice", ""); status != 200 || users(doc) != 3 {
		t.Errorf("alice's view: %d, %v users; want 200 and 3", status, doc["users"])
	}
	if status, doc := do(t, ts, "GET", "/ai/usage?from=2026-12-09T00:00:00Z&to=2026-12-10T00:00:00Z", "vic", ""); status != 200 || users(doc) != 1 || doc["user_id"] != "vic" {
		t.Errorf("vic's view: %d, %v; want 200 and his own row", status, doc)
	}
	for _, tc := range []struct {
		method, path, who, body string
		status                  int
	}{
		{"GET", "/ai/usage", "", "", 401},
		{"GET", "/ai/usage?from=yesterday", "alice", "", 400},
		{"GET", "/ai/usage?from=2026-12-10T00:00:00Z&to=2026-12-09T00:00:00Z", "alice", "", 400},
		{"PUT", "/ai/usage/budgets", "bob", `{"period":"day","tokens":100}`, 403},
		{"PUT", "/ai/usage/budgets", "alice", `{"period":"week","tokens":100}`, 400},
		{"PUT", "/ai/usage/budgets", "alice", `{"period":"day","tokens":100}`, 200},
		{"GET", "/ai/usage/budgets", "vic", "", 200},
		{"DELETE", "/ai/usage/budgets?period=day", "bob", "", 403},
		{"DELETE", "/ai/usage/budgets?period=day", "alice", "", 204},
		{"DELETE", "/ai/usage/budgets?period=day", "alice", "", 404},
		{"GET", "/ai/usage/nope", "alice", "", 404},
		{"POST", "/ai/usage", "alice", "", 405},
	} {
		if status, doc := do(t, ts, tc.method, tc.path, tc.who, tc.body); status != tc.status {
			t.Errorf("%s %s as %q: %d %v, want %d", tc.method, tc.path, tc.who, status, doc, tc.status)
		}
	}
}
