package ask_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/connresolve"
)

// teamConns is a connresolve.Connections a test changes; while err is
// set it fails.
type teamConns struct {
	mu   sync.Mutex
	list []connresolve.Connected
	err  error
}

func (c *teamConns) Connections(context.Context, access.Principal) ([]connresolve.Connected, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	return slices.Clone(c.list), nil
}

func (c *teamConns) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

func (c *teamConns) set(list ...connresolve.Connected) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = list
}

var warehouse = connresolve.Connected{ID: "wh", TeamID: "acme", Name: "Warehouse", Type: "postgres", Provider: "postgresql",
	Capabilities: []connresolve.Capability{connresolve.Database}, Ready: true}

func connEnv(t *testing.T) (*env, *teamConns) { return connEnvModel(t, nil) }

// connEnvModel is connEnv with model answering (nil: the mock).
func connEnvModel(t *testing.T, model ask.Provider) (*env, *teamConns) {
	t.Helper()
	conns := &teamConns{list: []connresolve.Connected{warehouse}}
	natives := []connresolve.NativeSource{{Type: "postgres", Name: "PostgreSQL", Providers: []string{"postgresql", "postgres"},
		Capabilities: []connresolve.Capability{connresolve.Database}},
		{Type: "mysql", Name: "MySQL", Providers: []string{"mysql"}, Capabilities: []connresolve.Capability{connresolve.Database}}}
	tool := ask.ListConnections(connresolve.NewResolver(conns, natives, nil))
	return newEnv(t, model, func(c *envConfig) { c.extra = append(c.extra, tool) }), conns
}

// setupOf returns the connection setup result of a turn's list_connections.
func setupOf(t *testing.T, events []ask.Event) ask.ConnectionSetup {
	t.Helper()
	for _, e := range events {
		if e.Type == ask.EventToolCompleted && e.Tool.Name == "list_connections" {
			var s ask.ConnectionSetup
			if err := json.Unmarshal(e.Tool.Result, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no list_connections result in %v", types(events))
	return ask.ConnectionSetup{}
}

func optionStates(s ask.ConnectionSetup) []string {
	var out []string
	for _, o := range s.Options {
		out = append(out, string(o.State)+" "+o.Provider)
	}
	return out
}

func TestListConnections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		who     access.Principal
		message string
		want    []string
		setup   bool
	}{
		// Seed 000 test plan 30: an existing native connection wins.
		{"an existing native connection wins", alice, "show orders from PostgreSQL", []string{"connected Warehouse"}, false},
		// 31: an installed native source before any MCP suggestion.
		{"an installed native source", alice, "show orders from MySQL", []string{"native_setup MySQL"}, true},
		// 32: the OAuth action comes from the verified catalog.
		{"a verified MCP provider", alice, "show pageviews from PostHog by week", []string{"mcp_oauth_setup PostHog"}, true},
		{"an unknown provider opens manual setup", alice, "show visitors from Plausible", []string{"manual_mcp_setup Plausible"}, true},
		{"a viewer is told to ask an admin", vic, "show pageviews from PostHog", []string{"admin_required PostHog"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := connEnv(t)
			conv := e.MustConversation(t, tc.who)
			events := e.MustSend(t, tc.who, conv, tc.message, nil)
			s := setupOf(t, events)
			if diff := cmp.Diff(tc.want, optionStates(s)); diff != "" {
				t.Errorf("options mismatch (-want +got):\n%s", diff)
			}
			if s.Type != ask.ConnectionSetupType || s.NeedsSetup != tc.setup || (s.Missing != "") != tc.setup {
				t.Errorf("setup result %+v; want type %s, needs_setup %v with the missing access explained", s, ask.ConnectionSetupType, tc.setup)
			}
			b, _ := json.Marshal(s)
			for _, secret := range []string{"token", "secret", "password", "input_schema"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("the setup result mentions %q: %s", secret, b)
				}
			}
			done := find(events, ask.EventMessageCompleted)
			if tc.setup && (done == nil || done.Text != s.Missing) {
				t.Errorf("answer %v; want the missing access explained: %q", done, s.Missing)
			}
			if got := types(events); got[len(got)-1] != ask.EventRequestCompleted {
				t.Errorf("events %v", got)
			}
		})
	}
}

// TestSetupCardRefreshes: opening the conversation resolves its setup
// card afresh (without a model request); "I added the connection" is a
// normal message that makes Ask check again, and grants nothing.
func TestSetupCardRefreshes(t *testing.T) {
	e, conns := connEnv(t)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show pageviews from PostHog", nil)
	card := func() ask.ConnectionSetup {
		t.Helper()
		for _, r := range e.MustOpen(t, alice, conv).WorkSummary {
			if r.Tool == "list_connections" {
				var s ask.ConnectionSetup
				json.Unmarshal(r.Result, &s)
				return s
			}
		}
		t.Fatal("no setup card in the work summary")
		return ask.ConnectionSetup{}
	}
	if s := card(); !s.NeedsSetup {
		t.Fatalf("card %+v; want setup needed", s)
	}
	events := e.MustSend(t, alice, conv, "I added the connection", nil)
	if s := setupOf(t, events); !s.NeedsSetup || s.Options[0].State != connresolve.StateMCPOAuthSetup {
		t.Errorf("after \"I added the connection\" with nothing added: %+v; want still setup needed (the button grants nothing)", s)
	}
	if got := find(events, ask.EventToolCompleted).Tool.Name; got != "list_connections" {
		t.Errorf("the check again called %s", got)
	}
	conns.set(warehouse, connresolve.Connected{ID: "ph", TeamID: "acme", Name: "PostHog", Type: "mcp", Provider: "posthog",
		Capabilities: []connresolve.Capability{connresolve.ProductAnalytics}, Ready: true})
	before := len(e.model.Requests())
	if s := card(); s.NeedsSetup || s.Options[0].State != connresolve.StateConnected || s.Options[0].ConnectionName != "PostHog" {
		t.Errorf("reopened card %+v; want PostHog connected", s)
	}
	if got := len(e.model.Requests()); got != before {
		t.Errorf("opening the conversation sent %d model requests", got-before)
	}
	events = e.MustSend(t, alice, conv, "Continue request", nil)
	if s := setupOf(t, events); s.NeedsSetup {
		t.Errorf("Continue request: %+v; want connected", s)
	}
}

// TestSetupCardRefreshFails: a setup card that cannot be resolved afresh
// (the connections unavailable) shows as it was saved; the conversation
// still opens.
func TestSetupCardRefreshFails(t *testing.T) {
	e, conns := connEnv(t)
	conv := e.MustConversation(t, alice)
	e.MustSend(t, alice, conv, "show pageviews from PostHog", nil)
	conns.fail(askbi.Errorf(askbi.Unavailable, "the connections cannot be listed"))
	v, err := e.a.Open(t.Context(), alice, conv)
	if err != nil {
		t.Fatalf("Open with the resolver failing = %v; want the conversation with its saved card", err)
	}
	var s ask.ConnectionSetup
	for _, r := range v.WorkSummary {
		if r.Tool == "list_connections" {
			json.Unmarshal(r.Result, &s)
		}
	}
	if !s.NeedsSetup || len(s.Options) == 0 || s.Options[0].State != connresolve.StateMCPOAuthSetup {
		t.Errorf("card %+v; want the saved one (setup needed)", s)
	}
}
