package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/outbound"
)

// Probe records what the transport saw of one session's HTTP exchanges,
// so errors are classified from facts, not from the text of an error the
// MCP client built (which may quote the remote body: that is never shown).
type Probe struct {
	mu       sync.Mutex
	status   int // the first non-2xx status
	tooLarge bool
	// otherOrigin is set when a request (a redirect) left the
	// connection's origin and was refused.
	otherOrigin bool
	// timedOut is set when the transport's own timers (the client's
	// timeout, the response header timeout, the context's deadline)
	// ended a request or the reading of its body.
	timedOut bool
	// challenge is the WWW-Authenticate of the first 401 or 403.
	challenge http.Header
}

// Reset forgets the status, after an authorization that fixed it.
func (p *Probe) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status, p.challenge = 0, nil
}

// Challenge is the WWW-Authenticate of the first 401 or 403, or nil.
func (p *Probe) Challenge() http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.challenge
}

func (p *Probe) get() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.tooLarge
}

func (p *Probe) leftOrigin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.otherOrigin
}

// note records what a transport error says: the response cap or a
// timeout.
func (p *Probe) note(err error) {
	large, late := outbound.TooLarge(err), isTimeout(err)
	if !large && !late {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tooLarge = p.tooLarge || large
	p.timedOut = p.timedOut || late
}

func (p *Probe) late() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.timedOut
}

// isTimeout reports whether err is a timeout of the transport.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// timedOut reports whether a session failed by running out of time: the
// transport saw a timeout, or ctx's deadline has passed. The deadline is
// read, not only ctx.Err: the transport's own timer, set for about the
// same instant, can end a request a moment before ctx's timer fires, and
// the MCP client does not always keep the error's chain.
func (se *Session) timedOut(ctx context.Context) bool {
	if se.probe.late() || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// errOtherOrigin refuses a request outside the connection's origin.
var errOtherOrigin = errors.New("mcpsource: a request to another origin than the connection's")

// authTransport adds the connection's own bearer token (never the user's
// product credential: requests are built here, from nothing the user
// sent) and feeds the probe. For an OAuth connection the MCP transport
// sets the header from the connection's tokens (oauthSession), and it is
// kept.
//
// Every request must be to origin, the connection URL's: the token (or
// the OAuth access token, which Go's client forwards on a redirect to
// another port of the same host) belongs to that server alone, so a
// redirect elsewhere is refused here, before anything is sent.
type authTransport struct {
	next   http.RoundTripper
	origin string
	token  string
	oauth  bool
	probe  *Probe
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if outbound.Origin(req.URL) != t.origin {
		t.probe.mu.Lock()
		t.probe.otherOrigin = true
		t.probe.mu.Unlock()
		return nil, errOtherOrigin
	}
	req = req.Clone(req.Context())
	if !t.oauth {
		req.Header.Del("Authorization")
	}
	req.Header.Del("Cookie")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.probe.note(err)
		return nil, err
	}
	if resp.StatusCode >= 300 {
		t.probe.mu.Lock()
		if t.probe.status == 0 {
			t.probe.status = resp.StatusCode
		}
		if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && t.probe.challenge == nil {
			t.probe.challenge = http.Header{"Www-Authenticate": resp.Header.Values("WWW-Authenticate")}
		}
		t.probe.mu.Unlock()
	}
	resp.Body = &probedBody{ReadCloser: resp.Body, probe: t.probe}
	return resp, nil
}

type probedBody struct {
	io.ReadCloser
	probe *Probe
}

func (b *probedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.probe.note(err)
	}
	return n, err
}

// OAuth is the OAuth side of a session (package signin's): the
// go-sdk handler that gives the transport its access token and answers a
// 401 or 403, and what the session's errors need of it.
type OAuth interface {
	auth.OAuthHandler
	// Watch hands the handler the session's Probe, before the first
	// request: it resets the status after a refresh that fixed a 401.
	Watch(*Probe)
	// Failure is the handler's own failure (a refused refresh, a scope
	// step-up), which the session returns instead of the transport's.
	Failure() error
	// Rejected is the failure of a 401 the handler could not fix.
	Rejected(ctx context.Context) error
}

// Credential is how a session authenticates: a bearer token ("" for
// none), or an [OAuth] connection's handler.
type Credential struct {
	Bearer string
	OAuth  OAuth
}

// ClientOptions configures a Client. The zero value is valid.
type ClientOptions struct {
	// DenyLoopback refuses loopback addresses where they are dialled.
	DenyLoopback bool
	// AllowPrivateNetworks allows private addresses (10/8, 172.16/12,
	// 192.168/16, 100.64/10, 198.18/15, fc00::/7, fec0::/10).
	AllowPrivateNetworks bool
	// Resolver resolves server names. Default the system's.
	Resolver Resolver
	// Timeout bounds one HTTP exchange of a session. Default 30 s.
	Timeout time.Duration
}

// Resolver resolves a host name to its addresses; *net.Resolver is one.
// It must be safe for concurrent use.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Client opens MCP client sessions (go-sdk, Streamable HTTP) to remote
// servers, every request through the one outbound request policy
// (internal/outbound): http(s) only, no link-local, cloud-metadata or
// private targets after DNS resolution, bounded redirects, timeouts and
// response byte caps; the credential goes to the URL's own origin only.
// It is safe for concurrent use.
type Client struct {
	pool    *outbound.Pool
	timeout time.Duration
}

// NewClient returns a client; o may be nil.
func NewClient(o *ClientOptions) *Client {
	var opts ClientOptions
	if o != nil {
		opts = *o
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	var res outbound.Resolver
	if opts.Resolver != nil {
		res = opts.Resolver
	}
	return &Client{timeout: opts.Timeout,
		pool: outbound.NewPool(&outbound.Options{DenyLoopback: opts.DenyLoopback, AllowPrivate: opts.AllowPrivateNetworks, Resolver: res})}
}

// Bounded returns a client on the same connections and outbound policy
// whose HTTP exchanges are each bounded by d instead: one for tool calls
// beside one for listings, say.
func (c *Client) Bounded(d time.Duration) *Client {
	if d <= 0 {
		return c
	}
	return &Client{pool: c.pool, timeout: d}
}

// CheckURL checks a server URL before it is saved, under the client's
// outbound policy: absolute http(s), no user information, fragment or
// credential in the query, and no refused address where the host stands
// for one without a resolver. Errors are InvalidArgument naming the
// problem, never echoing the URL.
func (c *Client) CheckURL(raw string) (*url.URL, error) { return c.pool.CheckURL(raw) }

// HTTPClient is a plain HTTP client under the same outbound policy, for
// the sign-in's requests (metadata, registration, tokens): responses
// capped at limit bytes, each exchange bounded by timeout.
func (c *Client) HTTPClient(limit int64, timeout time.Duration) *http.Client {
	return c.pool.Client(limit, timeout)
}

// Session is one MCP client session to a connection's server.
type Session struct {
	cs    *mcp.ClientSession
	probe *Probe
	limit int64
	oauth OAuth // nil unless the connection uses OAuth
	// listChanged is set when the server sent
	// notifications/tools/list_changed during the session (read it after
	// close, which waits for the notification's handler).
	listChanged atomic.Bool
}

// Open opens a session to rawURL, authenticated with cred, with response
// cap limit. Its errors are the safe failure kinds (Fail): the remote
// server's own words never pass.
func (c *Client) Open(ctx context.Context, rawURL string, cred Credential, limit int64) (*Session, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &askbi.Error{Code: askbi.Internal, Message: "the connection's URL cannot be read", Err: err}
	}
	pr := &Probe{}
	base := c.pool.Client(limit, c.timeout)
	hc := &http.Client{Transport: &authTransport{next: base.Transport, origin: outbound.Origin(u), token: cred.Bearer, oauth: cred.OAuth != nil, probe: pr},
		CheckRedirect: base.CheckRedirect, Timeout: base.Timeout}
	se := &Session{probe: pr, limit: limit, oauth: cred.OAuth}
	// Sessions are short (one listing or one call), so a list_changed
	// reaches askbi only while one is open: on a response's event stream,
	// or on the subscription a server of the stateless protocol opens for
	// this handler (ListChanged).
	client := mcp.NewClient(&mcp.Implementation{Name: "askbi", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { se.listChanged.Store(true) }})
	tr := &mcp.StreamableClientTransport{Endpoint: rawURL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
		MaxEventSize: int(limit)}
	if cred.OAuth != nil {
		cred.OAuth.Watch(pr)
		tr.OAuthHandler = cred.OAuth
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return nil, se.fail(ctx, err)
	}
	se.cs = cs
	return se, nil
}

// Close ends the session.
func (se *Session) Close() {
	if se.cs != nil {
		se.cs.Close()
	}
}

// ListChanged reports whether the server said its tool list changed
// during the session; read it after Close.
func (se *Session) ListChanged() bool { return se.listChanged.Load() }

// fail classifies an error of the session: each failure kind with a safe
// message of its own. The remote server's own words never pass.
func (se *Session) fail(ctx context.Context, err error) error {
	status, tooLarge := se.probe.get()
	if o := se.oauth; o != nil {
		if ferr := o.Failure(); ferr != nil {
			return ferr
		}
		if status == http.StatusUnauthorized {
			return o.Rejected(ctx)
		}
	}
	switch {
	case tooLarge || outbound.TooLarge(err):
		return dataexec.Fail(dataexec.FailInvalidResult, askbi.TooLarge, err,
			"the MCP server's answer is larger than %d MiB; ask for less (fewer rows, a shorter period)", max(se.limit>>20, 1))
	case se.timedOut(ctx) || isTimeout(err):
		return dataexec.Fail(dataexec.FailTimeout, askbi.Timeout, err, "the MCP server did not answer in time; try again, or ask for less")
	case ctx.Err() != nil:
		return &askbi.Error{Code: askbi.Unavailable, Message: "the request was cancelled", Err: err}
	case se.probe.leftOrigin():
		return dataexec.Fail(dataexec.FailAccess, askbi.Forbidden, err,
			"the MCP server redirected to another origin (scheme, host or port) than the connection's URL; askbi sends the connection's credentials to its own origin only, so it stopped. If the server moved, change the connection's URL")
	case outbound.Refused(err):
		return dataexec.Fail(dataexec.FailAccess, askbi.Forbidden, err,
			"the connection's URL leads to an address askbi may not call (link-local, cloud metadata, private, or too many redirects)")
	case status == http.StatusUnauthorized:
		return dataexec.Fail(dataexec.FailSignIn, askbi.Forbidden, err, "the MCP server refused the connection's credentials; sign in again or update the token")
	case status == http.StatusForbidden:
		return dataexec.Fail(dataexec.FailAccess, askbi.Forbidden, err, "the MCP server refused access to this request")
	case status == http.StatusNotFound:
		return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "there is no MCP server at this URL; check the connection's URL")
	case status >= 300:
		return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the MCP server answered HTTP %d; try again later", status)
	}
	return dataexec.Fail(dataexec.FailUnavailableTool, askbi.Unavailable, err, "the MCP server could not be reached or did not speak MCP; check the URL and try again")
}

// ListTools reads the server's tool list page by page, handing each page
// to each, within time (ctx), maxPages pages and maxBytes bytes in total.
// Past the page or byte bound it stops reading, and unread says that
// pages were left (how many tools they hold is not known). A response
// over the cap fails whole.
func (se *Session) ListTools(ctx context.Context, maxPages int, maxBytes int64, each func([]*mcp.Tool)) (unread bool, err error) {
	var size int64
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return true, nil
		}
		res, err := se.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return false, se.fail(ctx, err)
		}
		for _, t := range res.Tools {
			b, _ := json.Marshal(t)
			size += int64(len(b))
		}
		each(res.Tools)
		if res.NextCursor == "" || res.NextCursor == cursor {
			return false, nil
		}
		if size > maxBytes {
			return true, nil
		}
		cursor = res.NextCursor
	}
}

// CallTool calls one tool ({} for no arguments).
func (se *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := se.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, se.fail(ctx, err)
	}
	return res, nil
}
