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
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"

	"github.com/askbi/askbi"
)

// Options configures a Client. The zero value is valid; each zero field
// means its default.
type Options struct {
	// DenyLoopback refuses 127.0.0.0/8 and ::1 (in every form they are
	// written, and localhost names at CheckURL). Default false: loopback
	// is allowed, so an owner can run a server on the same machine.
	DenyLoopback bool
	// AllowPrivate allows the private ranges (10/8, 172.16/12,
	// 192.168/16, 100.64/10, 198.18/15, fc00::/7, fec0::/10). Default
	// false.
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
	// Resolver resolves host names. Default the system's (the Go
	// resolver's DialContext). Every address it answers is checked where
	// it is dialled, as the system's are.
	Resolver Resolver
	// RootCAs are the certificate authorities https servers' chains must
	// end in. Default the system's; tests set their own test server's.
	RootCAs *x509.CertPool
}

// Resolver resolves a host name to its addresses; *net.Resolver is one.
// It must be safe for concurrent use.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// MapResolver is an in-memory Resolver of fixed names, for tests (which
// then ask no DNS server) and hosts with a static map. It must not be
// changed while in use.
type MapResolver map[string][]netip.Addr

// LookupNetIP implements Resolver: the addresses of host of network's
// family ("ip", "ip4", "ip6"), or a not-found error.
func (m MapResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range m[strings.ToLower(host)] {
		if network == "ip" || network == "ip4" && a.Unmap().Is4() || network == "ip6" && !a.Unmap().Is4() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
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

// translated IPv6 addresses (::ffff:0:0/96, RFC 2765) carry an IPv4
// address in their last 32 bits, as IPv4-mapped ones do: they are
// checked as that address. Compatible ones (::/96 but :: and ::1,
// deprecated by RFC 4291) are never a server's.
var (
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	compatible = netip.MustParsePrefix("::/96")
)

// private are the ranges of networks of one's own: refused unless
// AllowPrivate. Besides RFC 1918, shared address space and unique local
// addresses: benchmarking (198.18.0.0/15, RFC 2544, which some proxies
// also use for their own mapped addresses) and the deprecated site-local
// fec0::/10 (RFC 3879), both still routed inside networks.
var private = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fec0::/10"),
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
// nil, or an error wrapping [ErrRefused] that says why.
func CheckAddr(ip netip.Addr, o *Options) error {
	var opts Options
	if o != nil {
		opts = *o
	}
	ip = ip.Unmap()
	if nat64.Contains(ip) || translated.Contains(ip) {
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
	case thisNetwork.Contains(ip), reserved.Contains(ip), compatible.Contains(ip) && !ip.IsLoopback():
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
// sealed, not in a URL that is shown and logged). A host that stands for
// an address without asking a resolver (a literal IP address in any of
// the forms URL parsers and resolvers read, localhost and the names
// under it) is checked with [CheckAddr] too, so the refusal comes when the
// URL is saved; other names are checked when dialled, which stays the
// wall. Errors are InvalidArgument naming the problem, never echoing the
// URL.
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
	ip, named, err := hostAddr(u.Hostname())
	if err != nil {
		return nil, bad(err.Error())
	}
	if ip.IsValid() {
		if err := CheckAddr(ip, o); err != nil {
			what := "this address"
			if named {
				what = "this host"
			}
			return nil, bad(what + " is not allowed (" + strings.TrimPrefix(err.Error(), ErrRefused.Error()+": ") + ")")
		}
	}
	return u, nil
}

// hostAddr is the address a URL's host stands for before any resolver
// is asked, as an URL parser or a resolver (getaddrinfo, whose IPv4
// parsing is inet_aton's) would read it, or the zero Addr for a name to
// resolve: a literal address, also written the ways WHATWG's URL
// standard reads IPv4 (one to four parts, each decimal, octal with a
// leading 0 or hexadecimal with 0x: "2130706433", "0x7f000001",
// "0177.0.0.1", "127.1", with a trailing dot); or 127.0.0.1 for
// localhost and every name under it (RFC 6761), named set. Names are
// compared in their ASCII form (IDNA, as net/http dials them: full-width
// letters are letters) and without case. A host that ends in a number
// but is no address is an error: it is no name either.
func hostAddr(host string) (ip netip.Addr, named bool, err error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, false, nil
	}
	name := host
	if !ascii(name) {
		if name, err = idna.Lookup.ToASCII(name); err != nil {
			return netip.Addr{}, false, errors.New("the host is not a valid name")
		}
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if labels := strings.Split(name, "."); endsInNumber(labels[len(labels)-1]) {
		ip, ok := parseIPv4(labels)
		if !ok {
			return netip.Addr{}, false, errors.New("the host ends in a number but is not an IPv4 address")
		}
		return ip, false, nil
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true, nil
	}
	return netip.Addr{}, false, nil
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// endsInNumber reports whether a host's last label makes it an IPv4
// address to WHATWG's URL parser: digits, or a number in 0x notation.
func endsInNumber(label string) bool {
	if label == "" {
		return false
	}
	if strings.Trim(label, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(label)
	return ok
}

// ipv4Number parses one part of an IPv4 address: decimal, octal with a
// leading 0, hexadecimal with 0x ("0x" alone is 0).
func ipv4Number(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
		if s == "" {
			return 0, true
		}
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" || strings.ContainsAny(s, "+-_") {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

// parseIPv4 reads one to four parts as WHATWG's IPv4 parser (and
// inet_aton) does: every part but the last is one byte, the last fills
// the bytes left.
func parseIPv4(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v = v<<8 | n
			continue
		}
		left := uint(5-len(parts)) * 8
		if n >= 1<<left {
			return netip.Addr{}, false
		}
		v = v<<left | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
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
	dial := dialer.DialContext
	if o.Resolver != nil {
		dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			return dialResolved(ctx, dialer, o.Resolver, network, address)
		}
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the policy
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.DialTimeout,
		ResponseHeaderTimeout: o.Timeout,
		ExpectContinueTimeout: time.Second,
	}
	if o.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
	}
	return &Pool{o: o, tr: tr}
}

// CheckURL is [CheckURL] under the pool's policy.
func (p *Pool) CheckURL(raw string) (*url.URL, error) { return CheckURL(raw, &p.o) }

// dialResolved dials address, its host resolved with r, one address
// after the other until one connects; the dialer's Control refuses each
// address the policy refuses before anything is sent to it.
func dialResolved(ctx context.Context, d *net.Dialer, r Resolver, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return d.DialContext(ctx, network, address)
	}
	ipNet := "ip"
	switch network {
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		// A refusal says more than a later address's failure.
		if first == nil || Refused(err) && !Refused(first) {
			first = err
		}
	}
	return nil, first
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
