package oauth

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document,
// the MCP authorization spec's first way to register since 2025-11-25): a
// client whose client_id is an https URL publishes its metadata there,
// and the server fetches it instead of a registration.

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ory/fosite"
	"golang.org/x/net/idna"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/internal/outbound"
)

// DocumentOptions configures Client ID Metadata Documents: a client whose
// client_id is an https URL, such as Claude Code's, is described by the
// JSON document at that URL, which the server fetches under askbi's
// outbound policy (no private, link-local or cloud-metadata targets,
// bounded size and time, redirects within the document's origin only).
// The zero value is valid; each zero field means its default.
type DocumentOptions struct {
	// Disabled turns documents off: the metadata then says
	// client_id_metadata_document_supported false, and a URL client_id
	// is an unknown client. Default false.
	Disabled bool
	// AllowLoopback accepts documents on this machine: http and https
	// URLs on 127.0.0.1, [::1] or localhost, for tests and a demo on one
	// machine. Never set it on a server others reach: it lets anyone
	// make the server fetch from its own loopback ports. Default false.
	AllowLoopback bool
	// MaxBytes caps a document. Default DefaultDocumentBytes (5 KiB, the
	// MCP authorization spec's figure).
	MaxBytes int64
	// Timeout bounds one fetch, redirects and body included. Default 5
	// seconds.
	Timeout time.Duration
	// MaxCacheAge bounds how long a fetched document is used before it
	// is fetched again, whatever its Cache-Control or Expires say. Its
	// own shorter freshness, no-store and no-cache are honoured.
	// Default 1 hour.
	MaxCacheAge time.Duration
	// DefaultCacheAge is how long a document that says nothing about its
	// freshness is used. Default 5 minutes.
	DefaultCacheAge time.Duration
	// MaxCached bounds the documents kept. Default 256.
	MaxCached int
	// MaxFetches bounds the fetches in flight at once; past it a client
	// is told to try again (Unavailable). Default 8.
	MaxFetches int
	// RootCAs are the certificate authorities a document's https server
	// must chain to. Default the system's.
	RootCAs *x509.CertPool
	// Resolver resolves documents' host names. Default the system's.
	// Every address it answers is checked where it is dialled.
	Resolver Resolver
}

// Resolver resolves a host name to its addresses; *net.Resolver is one.
// It must be safe for concurrent use.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultDocumentBytes is the default cap on a client ID metadata
// document.
const DefaultDocumentBytes = 5 << 10

func (o *DocumentOptions) defaults() {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultDocumentBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxCacheAge <= 0 {
		o.MaxCacheAge = time.Hour
	}
	if o.DefaultCacheAge <= 0 {
		o.DefaultCacheAge = 5 * time.Minute
	}
	o.DefaultCacheAge = min(o.DefaultCacheAge, o.MaxCacheAge)
	if o.MaxCached <= 0 {
		o.MaxCached = 256
	}
	if o.MaxFetches <= 0 {
		o.MaxFetches = 8
	}
}

// isDocumentID reports whether a client_id names a metadata document
// rather than a registered client: registered IDs are "mcpc_" and 128
// random bits, never a URL.
func isDocumentID(id string) bool {
	return strings.HasPrefix(id, "https://") || strings.HasPrefix(id, "http://")
}

// documents fetches, checks and caches client ID metadata documents. It
// is safe for concurrent use.
type documents struct {
	o      DocumentOptions
	http   *http.Client
	self   string // the authorization server's origin, never a document's
	policy outbound.Options
	now    func() time.Time

	mu       sync.Mutex
	cache    map[string]cachedDocument
	inflight map[string]*fetchCall
	fetches  int
}

type cachedDocument struct {
	c       Client
	expires time.Time
}

// fetchCall is one fetch that concurrent resolutions of a URL share.
type fetchCall struct {
	done chan struct{}
	c    Client
	err  error
}

func newDocuments(o DocumentOptions, issuer string, now func() time.Time) *documents {
	o.defaults()
	policy := outbound.Options{DenyLoopback: !o.AllowLoopback, Timeout: o.Timeout, DialTimeout: o.Timeout,
		MaxRedirects: 3, MaxResponseBytes: o.MaxBytes, RootCAs: o.RootCAs}
	if o.Resolver != nil {
		policy.Resolver = o.Resolver
	}
	hc := outbound.NewClient(&policy)
	checkPolicy := hc.CheckRedirect
	// A document is the client's word about itself at its own URL: a
	// redirect may move it within that origin, never to another.
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if outbound.Origin(req.URL) != outbound.Origin(via[0].URL) {
			return fmt.Errorf("%w: a redirect to another origin", outbound.ErrRefused)
		}
		return checkPolicy(req, via)
	}
	self, _ := url.Parse(issuer)
	return &documents{o: o, http: hc, self: outbound.Origin(self), policy: policy, now: now,
		cache: map[string]cachedDocument{}, inflight: map[string]*fetchCall{}}
}

// resolve returns the client that the document at id describes: from the
// cache while it is fresh, else fetched (one fetch for concurrent
// callers). Errors: InvalidArgument for a client_id or document that is
// not acceptable (the message says why, for the person connecting the
// app); Unavailable when the document could not be fetched now (a
// timeout, a network failure, an HTTP 5xx or 429, too many fetches at
// once), which a retry may fix. Failures are not cached.
func (d *documents) resolve(ctx context.Context, id string) (Client, error) {
	u, err := d.checkID(id)
	if err != nil {
		return Client{}, err
	}
	d.mu.Lock()
	if e, ok := d.cache[id]; ok && d.now().Before(e.expires) {
		d.mu.Unlock()
		return e.c, nil
	}
	if call, ok := d.inflight[id]; ok {
		d.mu.Unlock()
		select {
		case <-call.done:
			return call.c, call.err
		case <-ctx.Done():
			return Client{}, askbi.Errorf(askbi.Unavailable, "the app's metadata document could not be fetched in time; try again")
		}
	}
	if d.fetches >= d.o.MaxFetches {
		d.mu.Unlock()
		return Client{}, askbi.Errorf(askbi.Unavailable, "too many app metadata documents are being fetched at once; try again shortly")
	}
	d.fetches++
	call := &fetchCall{done: make(chan struct{})}
	d.inflight[id] = call
	d.mu.Unlock()

	// The fetch is shared: one caller's hang-up must not fail the others.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.o.Timeout)
	c, maxAge, err := d.fetch(fctx, id, u)
	cancel()
	call.c, call.err = c, err

	d.mu.Lock()
	d.fetches--
	delete(d.inflight, id)
	if err == nil && maxAge > 0 {
		d.put(id, cachedDocument{c: c, expires: d.now().Add(maxAge)})
	}
	d.mu.Unlock()
	close(call.done)
	return c, err
}

// put caches e under id, making room first: the expired entries go,
// then, while full, the one that expires first. d.mu is held.
func (d *documents) put(id string, e cachedDocument) {
	if _, ok := d.cache[id]; !ok && len(d.cache) >= d.o.MaxCached {
		now := d.now()
		for k, v := range d.cache {
			if !now.Before(v.expires) {
				delete(d.cache, k)
			}
		}
		for len(d.cache) >= d.o.MaxCached {
			var first string
			for k, v := range d.cache {
				if first == "" || v.expires.Before(d.cache[first].expires) {
					first = k
				}
			}
			delete(d.cache, first)
		}
	}
	d.cache[id] = e
}

// invalidID is the refusal of a client_id that is no document URL.
func invalidID(why string) error {
	return askbi.Errorf(askbi.InvalidArgument, "the app's client_id is not a valid metadata document URL: %s", why)
}

// checkID checks a client_id URL as the draft says (§3: https, a path,
// no fragment, no user information, no dot segments) and the outbound
// policy allows it (no literal private or link-local address, no
// credential in the query), and that it is not on this server's own
// origin.
func (d *documents) checkID(id string) (*url.URL, error) {
	u, err := url.Parse(id)
	switch {
	case err != nil || len(id) > 2048:
		return nil, invalidID("it is not a URL of at most 2,048 characters")
	case strings.HasPrefix(id, "http://") && !(d.o.AllowLoopback && outbound.LoopbackHost(u.Hostname())):
		return nil, invalidID("it must be an https URL")
	case !strings.HasPrefix(id, "https://") && !strings.HasPrefix(id, "http://"):
		return nil, invalidID("it must be an https URL")
	case strings.Contains(id, "#"):
		return nil, invalidID("it must not have a fragment")
	case u.User != nil:
		return nil, invalidID("it must not hold user information")
	case u.Hostname() == "":
		return nil, invalidID("it needs a host")
	case u.EscapedPath() == "" || u.EscapedPath() == "/":
		return nil, invalidID("it needs a path")
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if s, err := url.PathUnescape(seg); err != nil || s == "." || s == ".." {
			return nil, invalidID("it must not have . or .. path segments")
		}
	}
	if outbound.Origin(u) == d.self {
		return nil, invalidID("it is on this server's own origin")
	}
	if _, err := outbound.CheckURL(id, &d.policy); err != nil {
		return nil, invalidID(strings.TrimPrefix(askbi.ErrorMessage(err), "url: "))
	}
	return u, nil
}

// document is the part of a client ID metadata document the server
// reads: registration metadata (RFC 7591) plus the fields it must not
// have.
type document struct {
	ClientID string `json:"client_id"`
	registration
	ClientSecret          json.RawMessage `json:"client_secret"`
	ClientSecretExpiresAt json.RawMessage `json:"client_secret_expires_at"`
}

// fetch gets and checks the document at id. maxAge is how long it may be
// cached (zero: not at all).
func (d *documents) fetch(ctx context.Context, id string, u *url.URL) (_ Client, maxAge time.Duration, err error) {
	host := displayHost(u)
	bad := func(format string, args ...any) error {
		return askbi.Errorf(askbi.InvalidArgument, "the app's metadata document at %s "+format, append([]any{host}, args...)...)
	}
	busy := func(why string) error {
		return askbi.Errorf(askbi.Unavailable, "the app's metadata document at %s could not be fetched (%s); try again", host, why)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, 0, invalidID("it is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.http.Do(req)
	switch {
	case outbound.Refused(err):
		return Client{}, 0, bad("is at an address or behind a redirect this server does not fetch from")
	case outbound.TooLarge(err):
		return Client{}, 0, bad("is larger than %s", httpjson.Size(d.o.MaxBytes))
	case err != nil:
		return Client{}, 0, busy("no answer")
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return Client{}, 0, busy("HTTP " + strconv.Itoa(resp.StatusCode))
	default:
		return Client{}, 0, bad("answered HTTP %d, not 200", resp.StatusCode)
	}
	var doc document
	dec := json.NewDecoder(httpjson.NewStrictReader(resp.Body, d.o.MaxBytes))
	if err := dec.Decode(&doc); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case outbound.TooLarge(err):
			return Client{}, 0, bad("is larger than %s", httpjson.Size(d.o.MaxBytes))
		case errors.As(err, &syntax), errors.As(err, &typ), askbi.ErrorCode(err) == askbi.InvalidArgument,
			err == io.EOF, errors.Is(err, io.ErrUnexpectedEOF):
			return Client{}, 0, bad("is not one JSON object with each member once")
		}
		// The body broke off or took too long: the next fetch may do.
		return Client{}, 0, busy("it took too long")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Client{}, 0, bad("is not one JSON object with each member once")
	}
	if doc.ClientID != id {
		return Client{}, 0, bad("names another client_id than its own URL")
	}
	if doc.ClientSecret != nil || doc.ClientSecretExpiresAt != nil {
		return Client{}, 0, bad("holds a client secret, which a public client's document must not")
	}
	reg := doc.registration
	if reg.TokenEndpointAuthMethod == "" {
		reg.TokenEndpointAuthMethod = "none"
	}
	if reg.TokenEndpointAuthMethod != "none" {
		return Client{}, 0, bad("asks for token_endpoint_auth_method %.40q; a document's client authenticates with none (PKCE)", reg.TokenEndpointAuthMethod)
	}
	if code, msg := validateRegistration(&reg); code != "" {
		return Client{}, 0, bad("is not valid: %s", msg)
	}
	scopes := access.AllScopes
	if reg.Scope != "" {
		scopes = withDataRead(knownScopes(strings.Fields(reg.Scope)))
	}
	c := Client{ID: id, AuthMethod: "none", Name: reg.ClientName, RedirectURIs: slices.Clone(reg.RedirectURIs),
		Scopes: scopes, CreatedAt: d.now().UTC()}
	return c, d.freshness(resp.Header), nil
}

// freshness is how long a response with header h may be used (RFC 9111
// §4.2: max-age, else Expires less Date, less Age), within
// [0, MaxCacheAge]; DefaultCacheAge when it says nothing; zero for
// no-store and no-cache, which this cache cannot revalidate.
func (d *documents) freshness(h http.Header) time.Duration {
	var age time.Duration
	explicit := false
	for _, cc := range h.Values("Cache-Control") {
		for dir := range strings.SplitSeq(cc, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(dir), "=")
			switch strings.ToLower(name) {
			case "no-store", "no-cache", "private":
				return 0
			case "max-age":
				n, err := strconv.Atoi(strings.Trim(value, `"`))
				if err != nil || n < 0 {
					return 0
				}
				age, explicit = time.Duration(n)*time.Second, true
			}
		}
	}
	if !explicit && h.Get("Expires") != "" {
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil {
			return 0 // an invalid Expires means already expired (§5.3)
		}
		date, err := http.ParseTime(h.Get("Date"))
		if err != nil {
			date = d.now()
		}
		age, explicit = exp.Sub(date), true
	}
	if !explicit {
		return d.o.DefaultCacheAge
	}
	if a, err := strconv.Atoi(h.Get("Age")); err == nil && a > 0 {
		age -= time.Duration(a) * time.Second
	}
	return min(max(age, 0), d.o.MaxCacheAge)
}

// displayHost is u's host as the consent page shows it: in ASCII, so a
// name that only looks like another (Cyrillic letters) shows what it is.
func displayHost(u *url.URL) string {
	host := u.Host
	if a, err := idna.Lookup.ToASCII(u.Hostname()); err == nil && a != u.Hostname() {
		host = a
		if p := u.Port(); p != "" {
			host += ":" + p
		}
	}
	return host
}

// clientKey holds the client a request resolved before fosite's calls
// (withClient), so that fosite's GetClient neither fetches a document
// again nor sees a failure it would report as invalid_client.
const clientKey ctxKey = 101

func withClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey, c)
}

// client returns client id: the one this request resolved already, a
// registered one, or the one its metadata document describes. Errors:
// NotFound for an unknown registered client, or a URL while documents
// are off; those of documents.resolve.
func (s *Server) client(ctx context.Context, id string) (Client, error) {
	if c, ok := ctx.Value(clientKey).(Client); ok && c.ID == id {
		return c, nil
	}
	if !isDocumentID(id) {
		return s.store.Client(ctx, id)
	}
	if s.docs == nil {
		return Client{}, askbi.Errorf(askbi.NotFound, "client not found")
	}
	return s.docs.resolve(ctx, id)
}

// clientPage shows why the client of an authorization request cannot be
// used: the app is unknown, its document is not acceptable (the reason),
// or its document could not be fetched now (503: try again).
func (s *Server) clientPage(w http.ResponseWriter, r *http.Request, err error) {
	switch askbi.ErrorCode(err) {
	case askbi.NotFound:
		s.errorPage(w, http.StatusBadRequest, "This app is not registered here. Connect it again from the app.")
	case askbi.InvalidArgument:
		s.errorPage(w, http.StatusBadRequest, "This app cannot connect: "+askbi.ErrorMessage(err)+".")
	case askbi.Unavailable:
		w.Header().Set("Retry-After", "5")
		s.errorPage(w, http.StatusServiceUnavailable, "This app cannot connect right now: "+askbi.ErrorMessage(err)+".")
	default:
		s.pageError(w, r, err, "")
	}
}

// tokenClient resolves the document client of a token request before
// fosite runs it, so that a document that cannot be fetched now is
// answered temporarily_unavailable with nothing used up (fosite would
// report it invalid_client), and, for a code, checks that the document
// still lists the redirect URI the code was issued for: a document that
// dropped it no longer vouches for it. It returns the context for
// fosite, or the error to answer with.
func (s *Server) tokenClient(ctx context.Context, r *http.Request) (context.Context, error) {
	id := r.PostFormValue("client_id")
	if user, _, ok := r.BasicAuth(); ok && id == "" {
		id, _ = url.QueryUnescape(user)
	}
	if !isDocumentID(id) {
		return ctx, nil
	}
	c, err := s.client(ctx, id)
	if err != nil {
		return ctx, fositeClientError(err)
	}
	if r.PostFormValue("grant_type") == "authorization_code" {
		code := r.PostFormValue("code")
		t, err := s.store.Token(ctx, hashSignature(s.strategy.AuthorizeCodeSignature(ctx, code)))
		switch {
		case askbi.ErrorCode(err) == askbi.NotFound: // fosite answers invalid_grant
		case err != nil:
			return ctx, fosite.ErrServerError.WithWrap(err)
		case t.Kind == KindCode && t.ClientID == id && !matchRedirect(c.RedirectURIs, t.RedirectURI):
			return ctx, fosite.ErrInvalidGrant.WithHint("The app's metadata document no longer lists the redirect URI this code was issued for.")
		}
	}
	return withClient(ctx, c), nil
}

// fositeClientError is a client lookup's failure as fosite answers it.
func fositeClientError(err error) error {
	switch askbi.ErrorCode(err) {
	case askbi.NotFound:
		return fosite.ErrInvalidClient.WithHint("The client is not known.")
	case askbi.InvalidArgument:
		return fosite.ErrInvalidClient.WithHint(askbi.ErrorMessage(err) + ".")
	case askbi.Unavailable:
		return fosite.ErrTemporarilyUnavailable.WithHint(askbi.ErrorMessage(err) + ".")
	}
	return fosite.ErrServerError.WithWrap(err)
}
