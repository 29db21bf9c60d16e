package signintest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/oauthfake"
	"github.com/askbi/askbi/seal"
)

// Instance is one of several servers sharing connections: its own
// handle on the shared connection store (its own pool, for a database)
// and on the shared leases.
type Instance struct {
	Store  connections.Store
	Leases dataexec.Leases
}

// RunRefresh proves that two instances sharing a store and leases renew
// an OAuth connection's tokens once when both find them refused at the
// same moment: the authorization server sees one refresh and no refresh
// token used twice (a provider that rotates them revokes the grant on a
// replay), and both instances call the tool with the new access token.
// The first refresh is held at the token endpoint until the other
// instance found it running (its lease refused) or, where nothing keeps
// refreshes apart, until the second refresh arrives, so the two always
// overlap. newInstances returns two instances on one fresh store.
func RunRefresh(t *testing.T, newInstances func(t *testing.T) [2]Instance) {
	ctx := t.Context()
	var mu sync.Mutex
	var calledWith []string // the bearer of each tools/call
	srv := mcp.NewServer(&mcp.Implementation{Name: "refresh", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "top_pages", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	fake, err := oauthfake.New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			mu.Lock()
			calledWith = append(calledWith, r.Header.Get("Authorization"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })

	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	keys, err := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	if err != nil {
		t.Fatal(err)
	}
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	refused := make(chan struct{}) // closed once a lease was found taken, or a second refresh arrived
	var once sync.Once
	overlap := func() { once.Do(func() { close(refused) }) }
	var conns [2]*connections.Service
	var sign [2]*signin.Service
	var svc [2]*remote.Tools // each instance's calls
	for i, in := range newInstances(t) {
		if in.Leases != nil {
			in.Leases = watchedLeases{in.Leases, overlap}
		}
		conns[i] = connections.NewService(in.Store, keys, gate, nil)
		sign[i] = signin.New(conns[i], keys, &signin.Options{RedirectURL: "http://127.0.0.1:9/callback", Leases: in.Leases})
		svc[i] = remote.New(conns[i], sign[i], nil)
	}

	// Instance 0 sets the connection up: signed in, its tool approved.
	c, start, err := sign[0].Connect(ctx, alice, connections.Input{Name: "Analytics", URL: fake.MCPURL}, "")
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	q := mustAuthorize(t, start.AuthorizationURL)
	if _, err := sign[0].CompleteOAuth(ctx, signin.OAuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss"),
		Binding: start.Binding}); err != nil {
		t.Fatalf("CompleteOAuth: %v", err)
	}
	if _, err := conns[0].SetAccess(ctx, alice, c.ID, "top_pages", true); err != nil {
		t.Fatal(err)
	}
	tools, _, err := svc[0].ApprovedTools(ctx, alice)
	if err != nil || len(tools) != 1 {
		t.Fatalf("ApprovedTools = %v, %v; want the one tool", tools, err)
	}
	fp := tools[0].Tool.Fingerprint()

	// The provider forgets the access token: both instances get a 401 on
	// their call, and both refresh.
	var arrivals atomic.Int32
	fake.Set(func(o *oauthfake.Options) {
		o.BeforeToken = func(grant string) {
			if grant != "refresh_token" {
				return
			}
			if arrivals.Add(1) > 1 {
				overlap()
				return
			}
			select {
			case <-refused:
			case <-time.After(10 * time.Second): // nothing overlapped: the counts below say so
			}
		}
	})
	fake.ExpireTokens()
	var errs [2]error
	var wg sync.WaitGroup
	for i := range svc {
		wg.Go(func() { _, errs[i] = svc[i].Call(ctx, alice, c.ID, "top_pages", fp, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d's call with the refused token = %v; want it to run with the renewed one", i, err)
		}
	}
	if got := fake.Stats(); got.Refreshes != 1 || got.Replays != 0 {
		t.Errorf("the authorization server saw %d refreshes and %d replays; want 1 and 0", got.Refreshes, got.Replays)
	}
	// Each instance calls again with the token it ended with.
	for i := range svc {
		if _, err := svc[i].Call(ctx, alice, c.ID, "top_pages", fp, nil); err != nil {
			t.Errorf("instance %d's next call = %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calledWith) != 4 || calledWith[0] == "" || calledWith[0] != calledWith[1] || calledWith[1] != calledWith[2] || calledWith[2] != calledWith[3] {
		t.Errorf("the calls went with %d bearers, %q; want 4, all the one renewed token", len(calledWith), calledWith)
	}
	if got := fake.Stats().Refreshes; got != 1 {
		t.Errorf("%d refreshes after the next calls; want still 1", got)
	}
}

// watchedLeases tells refused when a lease is found taken.
type watchedLeases struct {
	dataexec.Leases
	refused func()
}

func (w watchedLeases) Acquire(ctx context.Context, slots []dataexec.Slot, ttl time.Duration) (func(), error) {
	release, err := w.Leases.Acquire(ctx, slots, ttl)
	if err != nil {
		w.refused()
	}
	return release, err
}

// mustAuthorize plays the browser at the provider, which approves at
// once, and returns the query of its redirect to the callback.
func mustAuthorize(t *testing.T, authURL string) url.Values {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query()
}
