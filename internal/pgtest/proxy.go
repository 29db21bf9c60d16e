package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a PostgreSQL server, for outage tests:
// Cut resets every connection through it and refuses new ones, as a client
// sees a server that went away, and Restore lets connections through
// again. Clients that reach the server directly are not affected, so a
// test can take the database away from one process of several while the
// others, and the test itself, keep using it. Its methods are safe for
// concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

// MustProxy starts a Proxy on a free loopback port in front of the server
// of dbURL (a postgres:// URL, as [MustDatabase] returns) and returns it with
// dbURL rewritten to reach that server through it. The proxy stops when tb
// ends.
func MustProxy(tb testing.TB, dbURL string) (*Proxy, string) {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		tb.Fatalf("pgtest: MustProxy needs a postgres:// URL with a host, not %q", dbURL)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	p := &Proxy{target: u.Host, ln: ln, conns: map[net.Conn]bool{}}
	go p.serve()
	tb.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	u.Host = ln.Addr().String()
	return p, u.String()
}

// Cut resets every connection through the proxy, on both sides, and
// resets each new one at once until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		reset(c)
	}
	clear(p.conns)
}

// Restore lets new connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

// relay copies between client c and a new connection to the server until
// either side ends, or Cut.
func (p *Proxy) relay(c net.Conn) {
	if !p.track(c) {
		reset(c)
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(c)
		reset(c)
		return
	}
	if !p.track(s) {
		p.untrack(c)
		reset(c)
		reset(s)
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	p.untrack(c)
	p.untrack(s)
	c.Close()
	s.Close()
	<-done
}

// track records c unless the proxy is cut, and reports whether it did.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// reset closes c with a TCP reset rather than an orderly close: what the
// peer of a server that went away sees.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}
