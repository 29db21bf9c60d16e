package remote_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"context"
	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/internal/conntest"
)

func TestModelNames(t *testing.T) {
	e := newEnv(t, nil)
	r1, r2, r3 := newRemote(t), newRemote(t), newRemote(t)
	r1.Set(tool("search", "", readOnly, nil, nil), tool("get.page", "", readOnly, nil, nil))
	r2.Set(tool("search", "", readOnly, nil, nil))
	r3.Set(tool(strings.Repeat("long_tool_name_", 6), "", readOnly, nil, nil))
	c1 := e.MustConnection(t, "CRM (prod)", r1, "")
	c2 := e.MustConnection(t, "CRM prod", r2, "") // sanitizes to the same prefix
	c3 := e.MustConnection(t, "Analytics", r3, "")
	e.MustAllow(t, c1.ID, "search", "get.page")
	e.MustAllow(t, c2.ID, "search")
	e.MustAllow(t, c3.ID, strings.Repeat("long_tool_name_", 6))
	names := func() map[string]string {
		tools, _, err := e.Tools.ApprovedTools(t.Context(), alice)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, at := range tools {
			if len(at.ModelName) > 64 || strings.Trim(at.ModelName, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				t.Errorf("model name %q is not ^[a-zA-Z0-9_-]{1,64}$", at.ModelName)
			}
			if _, dup := out[at.ModelName]; dup {
				t.Errorf("model name %q is used twice", at.ModelName)
			}
			out[at.ModelName] = at.ConnectionID + "/" + at.Tool.Name
		}
		return out
	}
	first := names()
	if len(first) != 4 {
		t.Fatalf("names = %v; want 4 distinct", first)
	}
	if first["CRM_prod__get_page"] != c1.ID+"/get.page" {
		t.Errorf("names = %v; want CRM_prod__get_page for get.page", first)
	}
	if diff := cmp.Diff(first, names()); diff != "" {
		t.Errorf("names are not deterministic (-first +second):\n%s", diff)
	}
}

func TestCallLimits(t *testing.T) {
	e := newEnv(t, &conntest.Options{Tools: remote.Options{CallTimeout: 300 * time.Millisecond, MaxResultBytes: 4 << 20}})
	r := newRemote(t)
	r.Token = "conn-token"
	slowDone := make(chan struct{}, 1)
	r.Set(
		tool("huge", "", readOnly, nil, answer(strings.Repeat("x", 50<<20))),
		tool("slow", "", readOnly, nil, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			slowDone <- struct{}{}
			return &mcp.CallToolResult{}, nil
		}),
		tool("failing", "", readOnly, nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Traceback: at /srv/app.py line 3"}}}, nil
		}),
		tool("fine", "", readOnly, nil, nil),
	)
	c := e.MustConnection(t, "Analytics", r, "conn-token")
	e.MustAllow(t, c.ID, "huge", "slow", "failing", "fine")
	tools, _, _ := e.Tools.ApprovedTools(t.Context(), alice)
	fp := map[string]string{}
	for _, at := range tools {
		fp[at.Tool.Name] = at.Tool.Fingerprint()
	}
	call := func(name string) error {
		_, err := e.Tools.Call(t.Context(), alice, c.ID, name, fp[name], json.RawMessage(`{}`))
		return err
	}
	// The 50 MB answer takes the server a while to build: a service with
	// a roomier deadline, so the cap, not the clock, stops it.
	_, _, roomy := e.Instance(e.Store, &conntest.Options{Tools: remote.Options{CallTimeout: time.Minute, MaxResultBytes: 4 << 20}})
	if _, err := roomy.Call(t.Context(), alice, c.ID, "huge", fp["huge"], json.RawMessage(`{}`)); askbi.ErrorCode(err) != askbi.TooLarge {
		t.Errorf("a 50 MB result = %v; want too_large", err)
	}
	start := time.Now()
	if err := call("slow"); askbi.ErrorCode(err) != askbi.Timeout {
		t.Errorf("a slow server = %v; want timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the slow call took %s; want it stopped at the deadline", d)
	}
	if err := call("failing"); askbi.ErrorCode(err) != askbi.Unavailable || contains(askbi.ErrorMessage(err), "Traceback", "app.py") {
		t.Errorf("a failing tool = %v; want unavailable without its text", err)
	}
	if err := call("fine"); err != nil {
		t.Errorf("a fine call: %v", err)
	}
	// A stale fingerprint (what an old approval bound) runs nothing.
	n := r.Requests.Load()
	if _, err := e.Tools.Call(t.Context(), alice, c.ID, "fine", "stale", nil); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("a call with a stale fingerprint = %v; want unavailable", err)
	}
	if r.Requests.Load() != n {
		t.Error("a call with a stale fingerprint reached the server")
	}
	for _, a := range r.Auths {
		if a != "" && a != "Bearer conn-token" {
			t.Errorf("the server saw Authorization %q; want only the connection's token", a)
		}
	}
}

// TestTransportTimeoutIsTimeout: when the transport's own timer ends a
// request first (a dataset run whose deadline is longer than the
// service's), the failure is a timeout, not unavailable.
func TestTransportTimeoutIsTimeout(t *testing.T) {
	e := newEnv(t, &conntest.Options{Conns: connections.Options{DiscoveryTimeout: 200 * time.Millisecond}, Tools: remote.Options{CallTimeout: 200 * time.Millisecond}})
	r := newRemote(t)
	r.Set(tool("hang", "", readOnly, nil, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-r.HTTPContext().Done() // until the client goes away
		return nil, context.Canceled
	}))
	c := e.MustConnection(t, "Analytics", r, "")
	e.MustAllow(t, c.ID, "hang")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := mcpsource.NewSource(e.Tools, c.ID).Query(ctx, dataexec.Query{Tool: "hang", Arguments: json.RawMessage(`{}`), MaxRows: 10, MaxBytes: 1 << 20})
	if kind, _ := dataexec.FailureOf(err); askbi.ErrorCode(err) != askbi.Timeout || kind != dataexec.FailTimeout {
		t.Errorf("a hung tool stopped by the transport's timer = %v (kind %q); want timeout", err, kind)
	}
}
