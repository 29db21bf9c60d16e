// Package outbound is the one request policy for every call askbi makes to
// a server a team configured (remote MCP discovery and tool calls, and
// later outbound OAuth): http or https only, no credentials in the URL, no
// link-local or cloud-metadata targets (nor private ones unless allowed),
// checked on the address actually dialled after DNS resolution and again
// on every redirect, a bounded number of redirects, timeouts, and a cap on
// every response body.
//
// Loopback is allowed by default on purpose: a team owner may run an MCP
// server on the same machine as the product. A host that serves many
// tenants sets DenyLoopback.
package outbound

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/askbi/askbi"
)

// Options configures a Client. The zero value is valid; each zero field
// means its default.
type Options struct {
	// DenyLoopback refuses 127.0.0.0/8 and ::1. Default false: loopback is
	// allowed, so an owner can run a server on the same machine.
	DenyLoopback bool
	// AllowPrivate allows the private ranges (10/8, 172.16/12,
	// 192.168/16, 100.64/10, fc00::/7). Default false.
	AllowPrivate bool
	// Timeout bounds one whole request, body included. Default 30 seconds.
	Timeout time.Duration
	// DialTimeout bounds one connection attempt. Default 10 seconds.
	DialTimeout time.Duration
	// MaxRedirects is how many redirects a request may follow. Default 3;
	// negative means none.
	MaxRedirects int
	// MaxResponseBytes caps every response body; reading past it fails
	// with ErrTooLarge. Default 8 MiB.
	MaxResponseBytes int64
}

// ErrTooLarge is what reading a response body past MaxResponseBytes
// returns.
var ErrTooLarge = errors.New("outbound: response body over the size cap")

// ErrRefused is the error of a request whose target the policy refuses.
var ErrRefused = errors.New("outbound: target refused by the outbound policy")

// metadata are the cloud metadata addresses outside the link-local range:
// Alibaba's, Oracle's and AWS's IPv6 one. (169.254.169.254 and fd00:ec2::254
// are refused as link-local and private already; listed to be explicit.)
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("fd00:ec2::254"),
}

// nat64 is the well-known prefix of IPv6 addresses that a NAT64 gateway
// translates to the IPv4 address in their last 32 bits (RFC 6052): they
// are checked as that address. The local-use prefix (RFC 8215) embeds it
// where the network says, so it counts as private.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// thisNetwork (0.0.0.0/8, which Linux dials as this host) and reserved
// (240.0.0.0/4, with the broadcast address) are never a server's.
var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	reserved    = netip.MustParsePrefix("240.0.0.0/4")
)

var private = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("fc00::/7"),
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = 3
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 8 << 20
	}
}

// CheckAddr reports whether the policy allows dialling ip. It returns
// nil, or an error wrapping ErrRefused that says why.
func CheckAddr(ip netip.Addr, o *Options) error {
	var opts Options
	if o != nil {
		opts = *o
	}
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		return CheckAddr(netip.AddrFrom4([4]byte(b[12:])), o)
	}
	refuse := func(why string) error { return fmt.Errorf("%w: %s address", ErrRefused, why) }
	for _, m := range metadata {
		if ip == m {
			return refuse("cloud metadata")
		}
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified():
		return refuse("unspecified")
	case thisNetwork.Contains(ip), reserved.Contains(ip):
		return refuse("reserved")
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return refuse("link-local")
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return refuse("multicast")
	case ip.IsLoopback():
		if opts.DenyLoopback {
			return refuse("loopback")
		}
		return nil
	}
	for _, p := range private {
		if p.Contains(ip) && !opts.AllowPrivate {
			return refuse("private")
		}
	}
	return nil
}

// LoopbackHost reports whether host (a URL's Hostname) is this machine:
// "localhost", or a literal loopback address (127.0.0.0/8, ::1). A name
// that only starts like one ("127.example.com") is not.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// CheckURL validates a server URL a team configures: absolute http or
// https, a host, no user information, no fragment, and no credential-like
// query parameter (a token belongs in the auth settings, where it is
// sealed, not in a URL that is shown and logged). A literal IP host is
// checked with CheckAddr too; names are checked when dialled. Errors are
// InvalidArgument naming the problem, never echoing the URL.
func CheckURL(raw string, o *Options) (*url.URL, error) {
	bad := func(msg string) error { return askbi.Errorf(askbi.InvalidArgument, "url: %s", msg) }
	if len(raw) > 2048 {
		return nil, bad("must be at most 2,048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() {
		return nil, bad("must be an absolute http or https URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("the scheme must be http or https")
	case u.User != nil:
		return nil, bad("must not hold a user name or password; use the connection's auth settings")
	case u.Hostname() == "":
		return nil, bad("needs a host")
	case u.Fragment != "":
		return nil, bad("must not have a fragment")
	}
	for k := range u.Query() {
		switch strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(k)) {
		case "token", "accesstoken", "apikey", "key", "secret", "password", "auth", "authorization", "bearer", "clientsecret":
			return nil, bad("must not carry a credential in its query (" + k + "); use the connection's bearer token")
		}
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
		if err := CheckAddr(ip, o); err != nil {
			return nil, bad("this address is not allowed (" + strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ") + ")")
		}
	}
	return u, nil
}

// Origin is u's origin (RFC 6454): scheme, host and port, lower-cased,
// with the scheme's default port made explicit, so that
// "https://Example.com/a" and "https://example.com:443/b" share one. A
// credential that belongs to a server goes to its origin only.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// NewClient returns an http.Client that enforces the policy on every
// request, redirect and dial. opts may be nil. Wrap its Transport to add
// headers; the policy stays underneath.
func NewClient(opts *Options) *http.Client {
	p := NewPool(opts)
	return p.Client(p.o.MaxResponseBytes, p.o.Timeout)
}

// Pool is the policy's transport, made once: every Client of a Pool
// shares its idle connections, so calls to one server do not dial and
// shake hands again. It is safe for concurrent use.
type Pool struct {
	o  Options
	tr *http.Transport
}

// NewPool returns a pool under the policy of opts (nil: the defaults).
// Its Timeout bounds waiting for a response's headers.
func NewPool(opts *Options) *Pool {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.defaults()
	dialer := &net.Dialer{
		Timeout: o.DialTimeout,
		// Control runs on the resolved address of every attempt, so a name
		// that resolves to a refused address (DNS rebinding included) is
		// refused where it is dialled.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: unparsable address", ErrRefused)
			}
			return CheckAddr(ap.Addr(), &o)
		},
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the policy
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.DialTimeout,
		ResponseHeaderTimeout: o.Timeout,
		ExpectContinueTimeout: time.Second,
	}
	return &Pool{o: o, tr: tr}
}

// Client returns an http.Client over the pool with its own response cap
// and overall timeout (zero: the pool's).
func (p *Pool) Client(maxResponseBytes int64, timeout time.Duration) *http.Client {
	o := p.o
	if maxResponseBytes > 0 {
		o.MaxResponseBytes = maxResponseBytes
	}
	if timeout > 0 {
		o.Timeout = timeout
	}
	return &http.Client{
		Transport: &capped{next: p.tr, max: o.MaxResponseBytes},
		Timeout:   o.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if o.MaxRedirects < 0 || len(via) > o.MaxRedirects {
				return fmt.Errorf("%w: more than %d redirects", ErrRefused, max(o.MaxRedirects, 0))
			}
			if _, err := CheckURL(req.URL.String(), &o); err != nil {
				return fmt.Errorf("%w: redirect to a URL the policy refuses", ErrRefused)
			}
			if len(via) > 0 && via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect from https to http", ErrRefused)
			}
			return nil
		},
	}
}

// capped caps every response body.
type capped struct {
	next http.RoundTripper
	max  int64
}

func (c *capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, ErrTooLarge
	}
	resp.Body = &cappedBody{rc: resp.Body, left: c.max}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - int(-b.left), ErrTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// Refused reports whether err comes from the policy refusing a target.
func Refused(err error) bool { return errors.Is(err, ErrRefused) }

// TooLarge reports whether err comes from the response cap.
func TooLarge(err error) bool { return errors.Is(err, ErrTooLarge) }
