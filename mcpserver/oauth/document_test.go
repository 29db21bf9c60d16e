package oauth_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// docServer serves one client ID metadata document on loopback, as a test
// changes it, and counts its fetches.
type docServer struct {
	srv *httptest.Server
	URL string // the document's URL: its client_id

	mu      sync.Mutex
	status  int
	doc     map[string]any
	raw     []byte // sent instead of doc when set
	header  http.Header
	handler http.HandlerFunc // replaces the whole answer when set
	hits    int
}

const docRedirect = "http://127.0.0.1:3000/callback"

func newDocServer(t *testing.T) *docServer {
	t.Helper()
	d := &docServer{status: http.StatusOK, header: http.Header{"Cache-Control": {"no-store"}}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	d.URL = d.srv.URL + "/oauth/client.json"
	d.doc = map[string]any{"client_id": d.URL, "client_name": "Doc agent", "redirect_uris": []string{docRedirect},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}}
	return d
}

func (d *docServer) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.hits++
	h, status, header, body := d.handler, d.status, d.header.Clone(), d.raw
	if body == nil {
		body, _ = json.Marshal(d.doc)
	}
	d.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// set changes the document's member k (deleted when v is nil).
func (d *docServer) set(k string, v any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v == nil {
		delete(d.doc, k)
	} else {
		d.doc[k] = v
	}
}

func (d *docServer) with(f func(d *docServer)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

func (d *docServer) fetches() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits
}

// newDocEnv is an authorization server that takes documents on loopback.
func newDocEnv(t *testing.T, edit func(*oauth.DocumentOptions)) *env {
	t.Helper()
	return newEnvWith(t, func(o *oauth.Options) {
		o.ClientDocuments.AllowLoopback = true
		if edit != nil {
			edit(&o.ClientDocuments)
		}
	})
}

func (d *docServer) flow() *flow { return newFlow(d.URL, docRedirect) }

func metadataSupports(t *testing.T, e *env) any {
	t.Helper()
	resp, err := http.Get(e.url + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return m["client_id_metadata_document_supported"]
}

// TestDocumentClient: a client whose client_id is the URL of its metadata
// document connects without registering: the consent page names it as
// unverified with its return host and the document's host; the code is
// exchanged and the refresh token rotated as the public client's.
func TestDocumentClient(t *testing.T) {
	e := newDocEnv(t, nil)
	d := newDocServer(t)
	if got := metadataSupports(t, e); got != true {
		t.Errorf("client_id_metadata_document_supported = %v, want true", got)
	}
	f := d.flow()
	p := e.open(t, f.authorizeURL(e), "alice")
	if p.status != http.StatusOK {
		t.Fatalf("consent page: %d %s", p.status, p.body)
	}
	docHost := strings.TrimPrefix(d.srv.URL, "http://")
	for _, want := range []string{"Doc agent", "unverified", "127.0.0.1:3000", "published by <strong>" + docHost + "</strong>"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the consent page does not show %q:\n%s", want, p.body)
		}
	}
	tok := e.MustTokens(t, f, "alice", "acme", access.ScopeDataRead)
	pr, err := e.as.Verify(t.Context(), tok.AccessToken)
	if err != nil || pr.UserID != "alice" || pr.TeamID != "acme" {
		t.Fatalf("Verify = %+v, %v", pr, err)
	}
	if r := e.refresh(t, f, tok.RefreshToken); r.Status != http.StatusOK || r.AccessToken == "" {
		t.Errorf("refresh = %+v", r)
	}
	// The connected clients list names the app from its document.
	req, _ := http.NewRequest("GET", e.url+"/account/mcp/clients", nil)
	req.Header.Set("X-Test-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Clients []map[string]any }
	json.NewDecoder(resp.Body).Decode(&list)
	if len(list.Clients) != 1 || list.Clients[0]["app_name"] != "Doc agent" || list.Clients[0]["unverified"] != true {
		t.Errorf("connected clients = %+v", list.Clients)
	}
}

// TestDocumentsDisabled: with documents off, the metadata says so and a
// URL client_id is an unknown client, whose document is never fetched.
func TestDocumentsDisabled(t *testing.T) {
	e := newEnvWith(t, func(o *oauth.Options) { o.ClientDocuments = oauth.DocumentOptions{Disabled: true, AllowLoopback: true} })
	d := newDocServer(t)
	if got := metadataSupports(t, e); got != false {
		t.Errorf("client_id_metadata_document_supported = %v, want false", got)
	}
	p := e.open(t, d.flow().authorizeURL(e), "alice")
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "not registered") || d.fetches() != 0 {
		t.Errorf("a URL client_id with documents off: %d, %d fetches: %s", p.status, d.fetches(), p.body)
	}
}

// refused opens the consent page of f and wants it refused with status
// and a message containing want, no consent request made and nothing
// sent back to the app.
func refused(t *testing.T, e *env, f *flow, status int, want string) {
	t.Helper()
	p := e.open(t, f.authorizeURL(e), "alice")
	if p.status != status || !strings.Contains(p.body, want) || p.form.Get("request_id") != "" || p.header.Get("Location") != "" {
		t.Errorf("consent page of %s = %d (Location %q), want %d with %q:\n%s", f.ClientID, p.status, p.header.Get("Location"), status, want, p.body)
	}
}

// TestDocumentHostile: each document or client_id an attacker would try
// is refused on the consent page, before anything is asked of the user.
func TestDocumentHostile(t *testing.T) {
	resolver := mapResolver{"docs.internal.example": {netip.MustParseAddr("10.1.2.3")},
		"rebind.example": {netip.MustParseAddr("169.254.169.254")}}
	e := newDocEnv(t, func(o *oauth.DocumentOptions) { o.Resolver = resolver; o.Timeout = 300 * time.Millisecond })
	other := newDocServer(t) // another origin on loopback
	for _, tc := range []struct {
		name   string
		id     string                      // the client_id; the document's URL when empty
		change func(d *docServer)          // the document server's answer
		status int                         // the consent page's status
		want   string                      // in the page
		params func(f *flow, d *docServer) // the authorization request's changes
		self   bool                        // the client_id is on the authorization server's origin
	}{
		{name: "private address", id: "https://10.0.0.1/client.json", status: 400, want: "not allowed (private address)"},
		{name: "private address in another form", id: "https://0x0a000001/client.json", status: 400, want: "not allowed"},
		{name: "IPv4-mapped private address", id: "https://[::ffff:10.0.0.1]/client.json", status: 400, want: "not allowed"},
		{name: "cloud metadata", id: "http://169.254.169.254/latest/meta-data", status: 400, want: "must be an https URL"},
		{name: "cloud metadata over https", id: "https://169.254.169.254/latest/meta-data", status: 400, want: "not allowed"},
		{name: "a name for a private address", id: "https://docs.internal.example/client.json", status: 400, want: "does not fetch from"},
		{name: "a name for the metadata address", id: "https://rebind.example/client.json", status: 400, want: "does not fetch from"},
		{name: "redirect to a private address", change: func(d *docServer) {
			d.handler = func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://10.0.0.1/client.json", http.StatusFound)
			}
		}, status: 400, want: "does not fetch from"},
		{name: "redirect to another origin", change: func(d *docServer) {
			d.handler = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL, http.StatusFound) }
		}, status: 400, want: "does not fetch from"},
		{name: "redirect loop", change: func(d *docServer) {
			d.handler = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path+"x", http.StatusFound) }
		}, status: 400, want: "does not fetch from"},
		{name: "client_id differs from its URL", change: func(d *docServer) { d.doc["client_id"] = other.URL },
			status: 400, want: "names another client_id than its own URL"},
		{name: "client_id differs only in case", change: func(d *docServer) { d.doc["client_id"] = strings.ToUpper(d.URL[:5]) + d.URL[5:] },
			status: 400, want: "names another client_id"},
		{name: "client_id twice", change: func(d *docServer) {
			d.raw = []byte(`{"client_id":"` + d.URL + `","client_name":"x","redirect_uris":["` + docRedirect + `"],"client_id":"https://other.example/c"}`)
		}, status: 400, want: "each member once"},
		{name: "redirect URI not in the document", params: func(f *flow, _ *docServer) {
			f.Redirect = "http://127.0.0.1:3000/elsewhere"
		}, status: 400, want: "not one it registered"},
		{name: "redirect URI of another host", params: func(f *flow, _ *docServer) {
			f.Redirect = "https://attacker.example/callback"
		}, status: 400, want: "not one it registered"},
		{name: "10 MB document", change: func(d *docServer) {
			d.raw = []byte(`{"client_id":"` + d.URL + `","pad":"` + strings.Repeat("a", 10<<20) + `"}`)
		}, status: 400, want: "larger than 5 KiB"},
		{name: "10 MB document, gzipped", change: func(d *docServer) {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			fmt.Fprintf(z, `{"client_id":%q,"pad":"%s"}`, d.URL, strings.Repeat("a", 10<<20))
			z.Close()
			d.handler = func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(b.Bytes())
			}
		}, status: 400, want: "larger than 5 KiB"},
		{name: "a document that hangs", change: func(d *docServer) {
			d.handler = func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		}, status: 503, want: "could not be fetched"},
		{name: "a document that dribbles", change: func(d *docServer) {
			d.handler = func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"client_id":`))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		}, status: 503, want: "could not be fetched"},
		{name: "not found", change: func(d *docServer) { d.status = http.StatusNotFound }, status: 400, want: "answered HTTP 404"},
		{name: "server error", change: func(d *docServer) { d.status = http.StatusBadGateway }, status: 503, want: "HTTP 502"},
		{name: "not JSON", change: func(d *docServer) { d.raw = []byte("<html>") }, status: 400, want: "not one JSON object"},
		{name: "a client secret", change: func(d *docServer) { d.doc["client_secret"] = "s3cret" }, status: 400, want: "holds a client secret"},
		{name: "a secret auth method", change: func(d *docServer) { d.doc["token_endpoint_auth_method"] = "client_secret_basic" },
			status: 400, want: "authenticates with none"},
		{name: "no redirect URIs", change: func(d *docServer) { delete(d.doc, "redirect_uris") }, status: 400, want: "redirect_uris"},
		{name: "a javascript redirect URI", change: func(d *docServer) { d.doc["redirect_uris"] = []string{"javascript:alert(1)"} },
			status: 400, want: "not allowed"},
		{name: "fragment", id: "https://client.example/c.json#x", status: 400, want: "must not have a fragment"},
		{name: "empty fragment", id: "https://client.example/c.json#", status: 400, want: "must not have a fragment"},
		{name: "userinfo", id: "https://user:pass@client.example/c.json", status: 400, want: "user information"},
		{name: "user name only", id: "https://user@client.example/c.json", status: 400, want: "user information"},
		{name: "dot segment", id: "https://client.example/a/../c.json", status: 400, want: "path segments"},
		{name: "encoded dot segment", id: "https://client.example/a/%2e%2e/c.json", status: 400, want: "path segments"},
		{name: "no path", id: "https://client.example", status: 400, want: "needs a path"},
		{name: "root path", id: "https://client.example/", status: 400, want: "needs a path"},
		{name: "http", id: "http://client.example/c.json", status: 400, want: "must be an https URL"},
		{name: "this server's own origin", self: true, status: 400, want: "own origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDocServer(t)
			if tc.change != nil {
				d.with(tc.change)
			}
			f := d.flow()
			if tc.id != "" {
				f.ClientID = tc.id
			}
			if tc.self {
				f.ClientID = e.url + "/oauth/client.json"
			}
			if tc.params != nil {
				tc.params(f, d)
			}
			refused(t, e, f, tc.status, tc.want)
		})
	}
}

// mapResolver answers fixed addresses and nothing else.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestDocumentLoopbackOffByDefault: without AllowLoopback a document on
// this machine is refused, by name or address, http or https, also when
// its TLS certificate is trusted; with it, the same https document is
// read.
func TestDocumentLoopbackOffByDefault(t *testing.T) {
	tlsDoc := httptest.NewTLSServer(nil)
	defer tlsDoc.Close()
	id := tlsDoc.URL + "/client.json"
	tlsDoc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_name": "TLS agent", "redirect_uris": []string{docRedirect}})
	})
	roots := x509.NewCertPool()
	roots.AddCert(tlsDoc.Certificate())
	off := newEnvWith(t, func(o *oauth.Options) { o.ClientDocuments.RootCAs = roots })
	d := newDocServer(t)
	refused(t, off, d.flow(), http.StatusBadRequest, "must be an https URL")
	refused(t, off, newFlow(id, docRedirect), http.StatusBadRequest, "not allowed (loopback address)")
	refused(t, off, newFlow(strings.Replace(id, "127.0.0.1", "localhost", 1), docRedirect), http.StatusBadRequest, "not allowed (loopback address)")

	on := newEnvWith(t, func(o *oauth.Options) { o.ClientDocuments.RootCAs = roots; o.ClientDocuments.AllowLoopback = true })
	if p := on.open(t, newFlow(id, docRedirect).authorizeURL(on), "alice"); p.status != http.StatusOK || !strings.Contains(p.body, "TLS agent") {
		t.Errorf("an https document on loopback, allowed: %d %s", p.status, p.body)
	}
	refused(t, on, newFlow("https://10.0.0.1/client.json", docRedirect), http.StatusBadRequest, "private address")
}

// TestDocumentSameOriginRedirect: a redirect within the document's origin
// is followed (the document still names its client_id URL).
func TestDocumentSameOriginRedirect(t *testing.T) {
	e := newDocEnv(t, nil)
	d := newDocServer(t)
	body, _ := json.Marshal(d.doc)
	d.with(func(d *docServer) {
		d.handler = func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/moved.json" {
				http.Redirect(w, r, "/moved.json", http.StatusMovedPermanently)
				return
			}
			w.Write(body)
		}
	})
	if p := e.open(t, d.flow().authorizeURL(e), "alice"); p.status != http.StatusOK {
		t.Errorf("a same-origin redirect: %d %s", p.status, p.body)
	}
}

// TestDocumentCache: a document is used while HTTP caching rules say it
// is fresh, within MaxCacheAge; no-store, no-cache and failures are not
// kept.
func TestDocumentCache(t *testing.T) {
	for _, tc := range []struct {
		name    string
		header  http.Header
		fresh   time.Duration // still cached just before
		refetch time.Duration // fetched again at
	}{
		{"max-age", http.Header{"Cache-Control": {"public, max-age=60"}}, 59 * time.Second, 61 * time.Second},
		{"max-age less Age", http.Header{"Cache-Control": {"max-age=60"}, "Age": {"30"}}, 29 * time.Second, 31 * time.Second},
		{"max-age past the bound", http.Header{"Cache-Control": {"max-age=999999999"}}, 59 * time.Minute, 61 * time.Minute},
		{"Expires", http.Header{"Date": {"Mon, 02 Nov 2026 10:00:00 GMT"}, "Expires": {"Mon, 02 Nov 2026 10:02:00 GMT"}}, 119 * time.Second, 121 * time.Second},
		{"nothing said", http.Header{}, 4 * time.Minute, 6 * time.Minute},
		{"no-store", http.Header{"Cache-Control": {"no-store"}}, 0, 0},
		{"no-cache", http.Header{"Cache-Control": {"max-age=60, no-cache"}}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDocEnv(t, nil)
			d := newDocServer(t)
			d.with(func(d *docServer) { d.header = tc.header })
			open := func() {
				t.Helper()
				if p := e.open(t, d.flow().authorizeURL(e), "alice"); p.status != http.StatusOK {
					t.Fatalf("consent page: %d %s", p.status, p.body)
				}
			}
			open()
			start := e.clock.Now()
			if tc.fresh > 0 {
				e.clock.advance(tc.fresh)
				open()
				if n := d.fetches(); n != 1 {
					t.Errorf("fetched %d times within its freshness, want 1", n)
				}
			}
			e.clock.advance(tc.refetch - e.clock.Now().Sub(start))
			open()
			if n := d.fetches(); n != 2 && tc.fresh > 0 || n != 2 && tc.fresh == 0 {
				t.Errorf("fetched %d times after its freshness, want 2", n)
			}
		})
	}
	t.Run("failures are not kept", func(t *testing.T) {
		e := newDocEnv(t, nil)
		d := newDocServer(t)
		d.with(func(d *docServer) { d.status = http.StatusServiceUnavailable })
		refused(t, e, d.flow(), http.StatusServiceUnavailable, "HTTP 503")
		d.with(func(d *docServer) { d.status = http.StatusOK })
		if p := e.open(t, d.flow().authorizeURL(e), "alice"); p.status != http.StatusOK {
			t.Errorf("after the document recovered: %d %s", p.status, p.body)
		}
	})
}

// TestDocumentFetchBound: fetches in flight are bounded (MaxFetches);
// past it a client is told to try again, and concurrent requests for
// one document share its one fetch.
func TestDocumentFetchBound(t *testing.T) {
	e := newDocEnv(t, func(o *oauth.DocumentOptions) { o.MaxFetches = 1 })
	slow, fast := newDocServer(t), newDocServer(t)
	arrived, release := make(chan struct{}, 4), make(chan struct{})
	body, _ := json.Marshal(slow.doc)
	slow.with(func(d *docServer) {
		d.handler = func(w http.ResponseWriter, _ *http.Request) {
			arrived <- struct{}{}
			<-release
			w.Write(body)
		}
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if p := e.open(t, slow.flow().authorizeURL(e), "alice"); p.status != http.StatusOK {
				t.Errorf("the slow document: %d %s", p.status, p.body)
			}
		})
	}
	<-arrived
	refused(t, e, fast.flow(), http.StatusServiceUnavailable, "too many")
	close(release)
	wg.Wait()
	if n := slow.fetches(); n != 1 {
		t.Errorf("two concurrent requests fetched the document %d times, want 1", n)
	}
}

// TestDocumentChangesBeforeToken: the document is read again for the
// token request (it says no-store). A document that dropped the code's
// redirect URI, names another client_id or holds a secret now gets the
// exchange refused; one that cannot be fetched gets temporarily_unavailable
// and the code stays usable: a transient failure uses nothing up.
func TestDocumentChangesBeforeToken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(d *docServer)
		status int
		err    string
	}{
		{"redirect URI dropped", func(d *docServer) { d.doc["redirect_uris"] = []string{"http://127.0.0.1:3000/other"} }, 400, "invalid_grant"},
		{"client_id changed", func(d *docServer) { d.doc["client_id"] = "https://other.example/c.json" }, 401, "invalid_client"},
		{"a secret added", func(d *docServer) { d.doc["client_secret"] = "x" }, 401, "invalid_client"},
		{"gone", func(d *docServer) { d.status = http.StatusNotFound }, 401, "invalid_client"},
		{"unreachable", func(d *docServer) { d.status = http.StatusServiceUnavailable }, 503, "temporarily_unavailable"},
		{"hangs", func(d *docServer) { d.handler = func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() } }, 503, "temporarily_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDocEnv(t, func(o *oauth.DocumentOptions) { o.Timeout = 300 * time.Millisecond })
			d := newDocServer(t)
			f := d.flow()
			code := e.MustCode(t, f, "alice", "acme", access.ScopeDataRead)
			saved := d.doc
			d.with(func(d *docServer) {
				d.doc = map[string]any{}
				for k, v := range saved {
					d.doc[k] = v
				}
				tc.change(d)
			})
			if tok := e.exchange(t, f, code); tok.Status != tc.status || tok.Error != tc.err || tok.AccessToken != "" {
				t.Fatalf("exchange after the change = %+v; want %d %s", tok, tc.status, tc.err)
			}
			// Back as it was, the code was not used up by the refusal.
			d.with(func(d *docServer) { d.doc, d.status, d.handler = saved, http.StatusOK, nil })
			if tok := e.exchange(t, f, code); tok.Status != http.StatusOK || tok.AccessToken == "" {
				t.Errorf("exchange once the document is back = %+v", tok)
			}
		})
	}
}

// TestDocumentTransientKeepsSingleUse: a document that cannot be fetched
// when the consent form is answered, or when a refresh token is used,
// leaves the form and the token usable.
func TestDocumentTransientKeepsSingleUse(t *testing.T) {
	e := newDocEnv(t, nil)
	d := newDocServer(t)
	f := d.flow()
	p := e.open(t, f.authorizeURL(e), "alice")
	if p.status != http.StatusOK || p.form.Get("client_id") != d.URL {
		t.Fatalf("consent page: %d, client_id field %q", p.status, p.form.Get("client_id"))
	}
	allow := url.Values{"decision": {"allow"}, "team": {"acme"}, "scope": {"data:read"}}
	d.with(func(d *docServer) { d.status = http.StatusBadGateway })
	if status, _, body := e.answer(t, p, "alice", allow); status != http.StatusServiceUnavailable || !strings.Contains(body, "try again") {
		t.Fatalf("the answer while the document is down: %d %s", status, body)
	}
	d.with(func(d *docServer) { d.status = http.StatusOK })
	status, loc, body := e.answer(t, p, "alice", allow)
	if status != http.StatusSeeOther || loc.Query().Get("code") == "" {
		t.Fatalf("the same answer once the document is back: %d %s", status, body)
	}
	tok := e.exchange(t, f, loc.Query().Get("code"))
	if tok.Status != http.StatusOK {
		t.Fatalf("exchange: %+v", tok)
	}
	d.with(func(d *docServer) { d.status = http.StatusBadGateway })
	if r := e.refresh(t, f, tok.RefreshToken); r.Status != http.StatusServiceUnavailable || r.Error != "temporarily_unavailable" {
		t.Fatalf("refresh while the document is down = %+v", r)
	}
	d.with(func(d *docServer) { d.status = http.StatusOK })
	if r := e.refresh(t, f, tok.RefreshToken); r.Status != http.StatusOK || r.AccessToken == "" {
		t.Errorf("the same refresh token once the document is back = %+v", r)
	}
}

// TestDocumentConsentNamesItsClient: the consent answer's client_id field
// says which document to read; a form whose field names another client
// than its request is refused.
func TestDocumentConsentNamesItsClient(t *testing.T) {
	e := newDocEnv(t, nil)
	d, other := newDocServer(t), newDocServer(t)
	p := e.open(t, d.flow().authorizeURL(e), "alice")
	for _, id := range []string{other.URL, ""} {
		p.form.Set("client_id", id)
		if id == "" {
			p = e.open(t, d.flow().authorizeURL(e), "alice")
			p.form.Del("client_id")
		}
		status, _, body := e.answer(t, p, "alice", url.Values{"decision": {"allow"}, "team": {"acme"}})
		if status != http.StatusForbidden {
			t.Errorf("an answer naming client %q: %d %s", id, status, body)
		}
	}
}
