package outbound_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/outbound"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		opts *outbound.Options
		ok   bool
	}{
		{"https://mcp.example.com/mcp", nil, true},
		{"http://127.0.0.1:9000/mcp", nil, true}, // loopback is allowed on purpose
		{"http://[::1]:9000/mcp", nil, true},
		{"http://127.0.0.1:9000/mcp", &outbound.Options{DenyLoopback: true}, false},
		{"https://mcp.example.com/mcp?team=acme", nil, true},
		{"https://user:pw@mcp.example.com/mcp", nil, false},
		{"https://user@mcp.example.com/mcp", nil, false},
		{"ftp://mcp.example.com/mcp", nil, false},
		{"file:///etc/passwd", nil, false},
		{"javascript:alert(1)", nil, false},
		{"/relative/mcp", nil, false},
		{"http://169.254.169.254/latest/meta-data", nil, false},
		{"http://[fe80::1]/mcp", nil, false},
		{"http://100.100.100.200/", nil, false},
		{"http://[fd00:ec2::254]/", nil, false},
		// NAT64 (RFC 6052): checked as the IPv4 address they carry.
		{"http://[64:ff9b::a9fe:a9fe]/", nil, false},
		{"http://[64:ff9b::169.254.169.254]/", nil, false},
		{"http://[64:ff9b::a00:1]/", nil, false},
		{"http://[64:ff9b::808:808]/", nil, true},
		{"http://0.1.2.3/", nil, false},
		{"http://255.255.255.255/", nil, false},
		{"http://240.0.0.1/", nil, false},
		{"http://[64:ff9b:1::a9fe:a9fe]/", nil, false},
		{"http://0.0.0.0:80/", nil, false},
		{"http://10.1.2.3/mcp", nil, false},
		{"http://10.1.2.3/mcp", &outbound.Options{AllowPrivate: true}, true},
		{"http://192.168.1.10/mcp", nil, false},
		{"https://mcp.example.com/mcp?token=abc", nil, false},
		{"https://mcp.example.com/mcp?api_key=abc", nil, false},
		{"https://mcp.example.com/mcp?access-token=abc", nil, false},
		{"https://mcp.example.com/mcp#frag", nil, false},
		{"https:///mcp", nil, false},
	} {
		_, err := outbound.CheckURL(tc.url, tc.opts)
		if tc.ok != (err == nil) {
			t.Errorf("CheckURL(%q) = %v; want ok %v", tc.url, err, tc.ok)
		}
		if err != nil {
			if askbi.ErrorCode(err) != askbi.InvalidArgument {
				t.Errorf("CheckURL(%q) code = %s; want invalid_argument", tc.url, askbi.ErrorCode(err))
			}
			if strings.Contains(askbi.ErrorMessage(err), "abc") || strings.Contains(askbi.ErrorMessage(err), "pw@") {
				t.Errorf("CheckURL(%q) message echoes a secret: %s", tc.url, askbi.ErrorMessage(err))
			}
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true}, {"127.0.0.1", true}, {"::1", true}, {"::ffff:169.254.169.254", false},
		{"169.254.1.1", false}, {"224.0.0.1", false}, {"172.16.0.1", false}, {"100.64.0.1", false}, {"fc00::1", false},
	} {
		err := outbound.CheckAddr(netip.MustParseAddr(tc.addr), nil)
		if tc.ok != (err == nil) || err != nil && !outbound.Refused(err) {
			t.Errorf("CheckAddr(%s) = %v; want ok %v", tc.addr, err, tc.ok)
		}
	}
}

// A name is checked on the address it resolves to, where it is dialled.
func TestDialChecksResolvedAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := outbound.NewClient(&outbound.Options{DenyLoopback: true})
	_, err := c.Get("http://localhost:" + port + "/")
	if !outbound.Refused(err) {
		t.Errorf("GET localhost with loopback denied = %v; want refused", err)
	}
	if resp, err := outbound.NewClient(nil).Get("http://localhost:" + port + "/"); err != nil {
		t.Errorf("GET localhost with loopback allowed: %v", err)
	} else {
		resp.Body.Close()
	}
}

func TestRedirects(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &n)
		switch {
		case r.URL.Path == "/meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		case r.URL.Path == "/userinfo":
			// An allowed address, but a URL the policy refuses.
			http.Redirect(w, r, strings.Replace(srv.URL, "http://", "http://user:pw@", 1)+"/0", http.StatusFound)
		case n > 0:
			http.Redirect(w, r, fmt.Sprintf("%s/%d", srv.URL, n-1), http.StatusFound)
		default:
			io.WriteString(w, "done")
		}
	}))
	defer srv.Close()
	c := outbound.NewClient(&outbound.Options{MaxRedirects: 3})
	for _, tc := range []struct {
		path string
		ok   bool
	}{{"/3", true}, {"/4", false}, {"/meta", false}, {"/userinfo", false}} {
		resp, err := c.Get(srv.URL + tc.path)
		if err == nil {
			resp.Body.Close()
		}
		if tc.ok != (err == nil) || err != nil && !outbound.Refused(err) {
			t.Errorf("GET %s = %v; want ok %v", tc.path, err, tc.ok)
		}
	}
}

func TestResponseCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", "5000")
		} else {
			w.(http.Flusher).Flush() // chunked: no length declared
		}
		io.WriteString(w, strings.Repeat("x", 5000))
	}))
	defer srv.Close()
	c := outbound.NewClient(&outbound.Options{MaxResponseBytes: 1000})
	for _, path := range []string{"/declared", "/chunked"} {
		resp, err := c.Get(srv.URL + path)
		var n int
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			n = len(b)
			resp.Body.Close()
		}
		if !errors.Is(err, outbound.ErrTooLarge) || n > 1000 {
			t.Errorf("GET %s: read %d bytes, err %v; want at most 1000 and ErrTooLarge", path, n, err)
		}
	}
	resp, err := outbound.NewClient(&outbound.Options{MaxResponseBytes: 5000}).Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(b) != 5000 {
		t.Errorf("GET at exactly the cap = %d bytes, %v; want 5000, nil", len(b), err)
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.8.9.10": true, "::1": true, "::ffff:127.0.0.1": true,
		"127.example.com": false, "localhost.example.com": false, "10.0.0.1": false, "::": false, "": false, "example.com": false,
	} {
		if got := outbound.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestPoolSharesConnections: clients of one pool, with their own caps,
// reuse the pool's connections instead of dialling again.
func TestPoolSharesConnections(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	p := outbound.NewPool(nil)
	for i, c := range []*http.Client{p.Client(1<<10, 0), p.Client(1<<20, time.Second), p.Client(0, 0)} {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three requests; want one, shared", n)
	}
}

func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://mcp.example.com/mcp", "https://MCP.example.com:443/other?x=1", true},
		{"http://127.0.0.1/mcp", "http://127.0.0.1:80/", true},
		{"http://[::1]:9000/mcp", "http://[::1]:9000/x", true},
		{"http://127.0.0.1:9000/mcp", "http://127.0.0.1:9001/mcp", false},
		{"http://127.0.0.1:9000/mcp", "http://127.0.0.2:9000/mcp", false},
		{"http://127.0.0.1:9000/mcp", "http://localhost:9000/mcp", false},
		{"https://mcp.example.com/mcp", "http://mcp.example.com/mcp", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", false},
		{"https://mcp.example.com/mcp", "https://evil.mcp.example.com/mcp", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := outbound.Origin(a) == outbound.Origin(b); got != tc.same {
			t.Errorf("Origin(%s) == Origin(%s) is %v (%s, %s); want %v", tc.a, tc.b, got, outbound.Origin(a), outbound.Origin(b), tc.same)
		}
	}
}

// TestCheckURLLoopbackForms: with loopback refused, every spelling of
// this machine a resolver or URL parser may turn into a loopback address
// is refused when the URL is saved, not first when it is dialled; with
// loopback allowed they pass (or fail for what they are besides).
func TestCheckURLLoopbackForms(t *testing.T) {
	deny := &outbound.Options{DenyLoopback: true}
	for _, tc := range []struct {
		host    string
		allowed bool // with loopback allowed
	}{
		{"2130706433", true},           // 127.0.0.1 as one decimal number
		{"0x7f000001", true},           // as one hexadecimal number
		{"0X7F000001", true},           // upper case
		{"0177.0.0.1", true},           // octal first part
		{"0x7f.0.0.1", true},           // hexadecimal first part
		{"127.1", true},                // two parts: 127.0.0.1
		{"127.0.1", true},              // three parts
		{"017700000001", true},         // one octal number
		{"127.0.0.1.", true},           // a trailing dot
		{"127.000.000.001", true},      // zero-padded parts read as octal: still 127.0.0.1
		{"localhost", true},            //
		{"localhost.", true},           // a trailing dot
		{"LOCALHOST", true},            // upper case
		{"LocalHost.", true},           //
		{"foo.localhost", true},        // RFC 6761: every name under localhost
		{"a.b.LOCALHOST.", true},       //
		{"%6cocalhost", false},         // percent-encoded: not a URL Go reads
		{"ｌｏｃａｌｈｏｓｔ", true},            // full-width letters, which IDNA maps to localhost
		{"[::1]", true},                //
		{"[0:0:0:0:0:0:0:1]", true},    //
		{"[::ffff:127.0.0.1]", true},   // IPv4-mapped
		{"[::ffff:7f00:1]", true},      //
		{"[::ffff:0:127.0.0.1]", true}, // IPv4-translated (SIIT)
		{"[::127.0.0.1]", false},       // IPv4-compatible (deprecated: ::/96 is never a server's)
		{"[64:ff9b::127.0.0.1]", true}, // NAT64 of loopback
		{"[64:ff9b::7f00:1]", true},    //
		{"0", false},                   // 0.0.0.0, which Linux dials as this host
		{"0x0", false},                 //
		{"0.0.0.0.", false},            //
		{"[::]", false},                //
		{"[::ffff:0.0.0.0]", false},    //
		{"1.2.3.4.5", false},           // ends in a number but is no address
		{"127.0.0.256", false},         // a part out of range
		{"4294967296", false},          // over 32 bits
		{"0x1ffffffff", false},         //
		{"09.0.0.1", false},            // not octal
	} {
		raw := "http://" + tc.host + ":9000/mcp"
		_, err := outbound.CheckURL(raw, deny)
		if askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("CheckURL(%s) with loopback denied = %v; want invalid_argument", raw, err)
		}
		_, err = outbound.CheckURL(raw, nil)
		if tc.allowed != (err == nil) {
			t.Errorf("CheckURL(%s) with loopback allowed = %v; want ok %v", raw, err, tc.allowed)
		}
	}
	// Names that only look like these are names, checked when dialled.
	for _, host := range []string{"localhost.example.com", "127.example.com", "0x7f000001.example.com", "mylocalhost", "localhost-1", "1e100.net"} {
		if _, err := outbound.CheckURL("http://"+host+"/mcp", deny); err != nil {
			t.Errorf("CheckURL(%s) with loopback denied = %v; want ok (a name)", host, err)
		}
	}
}

// TestCheckAddrRanges covers the ranges that are never a public server's.
func TestCheckAddrRanges(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		ok, okPrivate bool // by default, and with private networks allowed
	}{
		{"198.18.0.1", false, true}, // benchmarking (RFC 2544)
		{"198.19.255.254", false, true},
		{"198.17.255.255", true, true},
		{"198.20.0.0", true, true},
		{"fec0::1", false, true}, // site-local (deprecated, RFC 3879)
		{"feff::1", false, true},
		{"fe80::1", false, false},            // link-local stays refused
		{"::ffff:0:a00:1", false, true},      // IPv4-translated 10.0.0.1
		{"::ffff:0:a9fe:a9fe", false, false}, // IPv4-translated metadata
		{"::a9fe:a9fe", false, false},        // IPv4-compatible metadata
		{"::ffff:0:808:808", true, true},     // IPv4-translated 8.8.8.8
	} {
		ip := netip.MustParseAddr(tc.addr)
		if err := outbound.CheckAddr(ip, nil); tc.ok != (err == nil) || err != nil && !outbound.Refused(err) {
			t.Errorf("CheckAddr(%s) = %v; want ok %v", tc.addr, err, tc.ok)
		}
		if err := outbound.CheckAddr(ip, &outbound.Options{AllowPrivate: true}); tc.okPrivate != (err == nil) {
			t.Errorf("CheckAddr(%s) with private allowed = %v; want ok %v", tc.addr, err, tc.okPrivate)
		}
	}
}

// TestDialChecksResolvedNames: a name that passes CheckURL is refused
// where it is dialled when it resolves to a refused address, each address
// checked before a connection is attempted. Only loopback addresses are
// resolved here (the ranges themselves are TestCheckAddr's): no test
// sends traffic to another address, or asks a DNS server.
func TestDialChecksResolvedNames(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	res := outbound.MapResolver{
		"loop.test":   {netip.MustParseAddr("127.0.0.1")},
		"mapped.test": {netip.MustParseAddr("::ffff:127.0.0.1")},
		// The first address does not answer (nothing listens on
		// 127.0.0.2): the next one is tried.
		"two.test": {netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")},
	}
	for _, tc := range []struct {
		host string
		opts outbound.Options
		ok   bool
	}{
		{"loop.test", outbound.Options{DenyLoopback: true}, false},
		{"mapped.test", outbound.Options{DenyLoopback: true}, false},
		{"two.test", outbound.Options{DenyLoopback: true}, false},
		{"loop.test", outbound.Options{}, true},
		{"mapped.test", outbound.Options{}, true},
		{"two.test", outbound.Options{}, true},
		{"unknown.test", outbound.Options{}, false},
	} {
		if _, err := outbound.CheckURL("http://"+tc.host+":"+port+"/", &tc.opts); err != nil {
			t.Fatalf("CheckURL(%s) = %v; want a name to pass until it is dialled", tc.host, err)
		}
		o := tc.opts
		o.Resolver = res
		resp, err := outbound.NewClient(&o).Get("http://" + tc.host + ":" + port + "/")
		if err == nil {
			resp.Body.Close()
		}
		if tc.ok != (err == nil) {
			t.Errorf("GET %s with %+v = %v; want ok %v", tc.host, tc.opts, err, tc.ok)
		}
		if !tc.ok && tc.host != "unknown.test" && !outbound.Refused(err) {
			t.Errorf("GET %s = %v; want refused by the policy", tc.host, err)
		}
	}
}

// TestRootCAs: an https server whose certificate no trusted authority
// signed is refused; trusted through Options.RootCAs, it answers.
func TestRootCAs(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	if _, err := outbound.NewClient(nil).Get(srv.URL); err == nil {
		t.Error("a certificate of an unknown authority was accepted")
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	resp, err := outbound.NewClient(&outbound.Options{RootCAs: pool}).Get(srv.URL)
	if err != nil {
		t.Fatalf("with the test authority trusted: %v", err)
	}
	resp.Body.Close()
}
