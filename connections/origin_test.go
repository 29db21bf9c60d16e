package connections_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/conntest"
)

// elsewhere is a server at another origin that records the
// Authorization header of every request it gets.
type elsewhere struct {
	URL   string
	mu    sync.Mutex
	auths []string
}

// newElsewhere listens on host (a loopback address), port chosen.
func newElsewhere(t *testing.T, host string) *elsewhere {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	el := &elsewhere{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		el.mu.Lock()
		el.auths = append(el.auths, r.Header.Get("Authorization"))
		el.mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	el.URL = srv.URL + "/mcp"
	return el
}

func (el *elsewhere) seen() []string {
	el.mu.Lock()
	defer el.mu.Unlock()
	return append([]string(nil), el.auths...)
}

// redirectTo answers every request with a 307 to url.
func redirectTo(url string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", url)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}
}

// wantOtherOrigin checks err is the refusal of a redirect to another
// origin, with a message that says so.
func wantOtherOrigin(t *testing.T, what string, err error) {
	t.Helper()
	kind, _ := dataexec.FailureOf(err)
	if askbi.ErrorCode(err) != askbi.Forbidden || kind != dataexec.FailAccess || !strings.Contains(askbi.ErrorMessage(err), "another origin") {
		t.Errorf("%s = %v (kind %q); want forbidden, access, saying the redirect led to another origin", what, err, kind)
	}
}

// TestTokenStaysOnItsOrigin: a server that redirects to another origin
// (another port, another loopback address) gets the redirect refused,
// and the connection's token never reaches the new target; a redirect
// within the origin is followed.
func TestTokenStaysOnItsOrigin(t *testing.T) {
	for _, tc := range []struct{ name, host string }{{"another port", "127.0.0.1"}, {"another host", "127.0.0.2"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := newRemote(t)
			r.Token = "conn-token"
			r.Set(tool("top_pages", "Top pages.", readOnly, nil, nil))
			c := e.MustConnection(t, "Analytics", r, r.Token)
			e.MustAllow(t, c.ID, "top_pages")
			fp := e.MustTool(t, c.ID, "top_pages").Fingerprint()
			el := newElsewhere(t, tc.host)
			r.Mu.Lock()
			r.Raw = redirectTo(el.URL)
			r.Mu.Unlock()

			_, err := e.Conns.Discover(t.Context(), alice, c.ID, nil, e.SignIn)
			wantOtherOrigin(t, "Discover redirected to "+tc.name, err)
			_, err = e.Tools.Call(t.Context(), alice, c.ID, "top_pages", fp, nil)
			wantOtherOrigin(t, "Call redirected to "+tc.name, err)
			for _, a := range el.seen() {
				if a != "" {
					t.Errorf("the other origin got Authorization %q", a)
				}
			}
		})
	}

	t.Run("within the origin", func(t *testing.T) {
		e := newEnv(t, nil)
		r := newRemote(t)
		r.Token = "conn-token"
		r.Set(tool("top_pages", "Top pages.", readOnly, nil, nil))
		moved := r.Srv.URL + "/old"
		c, err := e.Conns.Create(t.Context(), alice, connections.Input{Name: "Analytics", URL: moved, Token: r.Token})
		if err != nil {
			t.Fatal(err)
		}
		r.Mu.Lock()
		r.Front = func(w http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path != "/old" {
				return false
			}
			redirectTo(r.URL)(w, req)
			return true
		}
		r.Mu.Unlock()
		if _, err := e.Conns.Discover(t.Context(), alice, c.ID, nil, e.SignIn); err != nil {
			t.Errorf("Discover redirected within its origin = %v; want it followed, with the token", err)
		}
	})
}

// TestOAuthTokenStaysOnItsOrigin: the OAuth access token of an MCP
// request does not follow a redirect to another port of the same host
// (which Go's client would forward it to), while the sign-in's own
// requests to the authorization server, another origin, work.
func TestOAuthTokenStaysOnItsOrigin(t *testing.T) {
	var mu sync.Mutex
	var to string
	e := conntest.NewOAuthEnvWrapped(t, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			url := to
			mu.Unlock()
			if url != "" {
				redirectTo(url)(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c := e.MustOAuthConnection(t, "Analytics")
	e.MustSignIn(t, c.ID, "") // the authorization server is another origin: it works
	e.MustAllow(t, c.ID, "top_pages")
	fp := e.MustTool(t, c.ID, "top_pages").Fingerprint()
	el := newElsewhere(t, "127.0.0.1")
	mu.Lock()
	to = el.URL
	mu.Unlock()
	_, err := e.Tools.Call(t.Context(), alice, c.ID, "top_pages", fp, nil)
	wantOtherOrigin(t, "an OAuth call redirected to another port", err)
	for _, a := range el.seen() {
		if a != "" {
			t.Errorf("the other origin got Authorization %q", a)
		}
	}
	if got := e.MustGet(t, c.ID); !got.HasToken || !got.Active {
		t.Errorf("after a refused redirect %+v; want the sign-in kept", got)
	}
}

// TestURLChangeToAnotherOriginDropsToken: a bearer connection moved to
// another origin needs its token entered again (the stored one is never
// sent there); a move within the origin keeps it.
func TestURLChangeToAnotherOriginDropsToken(t *testing.T) {
	e := newEnv(t, nil)
	r := newRemote(t)
	r.Token = "conn-token"
	r.Set(tool("top_pages", "Top pages.", readOnly, nil, nil))
	c := e.MustConnection(t, "Analytics", r, r.Token)
	before, _ := e.Store.Get(t.Context(), c.ID)

	for _, other := range []string{
		strings.Replace(r.URL, "127.0.0.1", "127.0.0.2", 1), // another host
		"http://127.0.0.1:1/mcp",                            // another port
		strings.Replace(r.URL, "http://", "https://", 1),    // another scheme
	} {
		_, err := e.Conns.Update(t.Context(), alice, c.ID, connections.Patch{URL: &other})
		if askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), "token") {
			t.Errorf("Update(url %s) without a token = %v; want invalid_argument asking for the token again", other, err)
		}
	}
	if after, _ := e.Store.Get(t.Context(), c.ID); after.Version != before.Version || after.URL != before.URL {
		t.Errorf("a refused move changed the connection: %+v", after.Connection)
	}

	// Within the origin: the token stays.
	same := r.URL + "?v=2"
	got, err := e.Conns.Update(t.Context(), alice, c.ID, connections.Patch{URL: &same})
	if err != nil || !got.HasToken {
		t.Fatalf("Update(url in the origin) = %+v, %v; want the token kept", got, err)
	}
	if _, err := e.Conns.Discover(t.Context(), alice, c.ID, nil, e.SignIn); err != nil {
		t.Errorf("Discover after a move within the origin = %v; want the kept token to work", err)
	}

	// Another origin with the token entered again.
	el := newElsewhere(t, "127.0.0.2")
	tok := "new-token"
	got, err = e.Conns.Update(t.Context(), alice, c.ID, connections.Patch{URL: &el.URL, Token: &tok})
	if err != nil || !got.HasToken || got.Active {
		t.Fatalf("Update(url, token) = %+v, %v; want the new token, inactive", got, err)
	}
	e.Conns.Discover(t.Context(), alice, c.ID, nil, e.SignIn)
	for _, a := range el.seen() {
		if a != "Bearer new-token" {
			t.Errorf("the new origin got Authorization %q; want only the token entered for it", a)
		}
	}
	// Switching to no auth with the move is fine too.
	none := connections.AuthNone
	back, empty := r.URL, ""
	if got, err := e.Conns.Update(t.Context(), alice, c.ID, connections.Patch{URL: &back, Auth: &none, Token: &empty}); err != nil || got.HasToken {
		t.Errorf("Update(url, auth none) = %+v, %v; want no token", got, err)
	}
}
