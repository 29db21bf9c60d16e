// Package haproxy runs HAProxy (Debian's haproxy package) on loopback in
// front of several instances of the reference server, as a deployment's
// load balancer would: round robin, health checks on /readyz, and a
// request retried on another instance only when it never reached one (a
// refused connection), since anything later may have run. The
// multi-instance tests and the load command (cmd/mcpload) use it.
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotInstalled is Start's error where no haproxy binary is found.
var ErrNotInstalled = errors.New("haproxy: not installed (apt-get install haproxy)")

// Proxy is a running HAProxy.
type Proxy struct {
	// URL is where it listens: http://127.0.0.1:<port>.
	URL    string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// Listen reserves a free loopback port for the proxy, so that the
// backends can be told the public URL before the proxy starts.
func Listen() (addr string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Start runs HAProxy on addr (from Listen) in front of backends (host:port
// each), with its configuration and log in dir, and returns once it
// answers and at least one backend is up.
func Start(ctx context.Context, dir, addr string, backends []string) (*Proxy, error) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		return nil, ErrNotInstalled
	}
	var servers strings.Builder
	for i, b := range backends {
		fmt.Fprintf(&servers, "    server s%d %s check\n", i+1, b)
	}
	cfg := fmt.Sprintf(`global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 5m
    timeout server 5m
    retries 3
    option redispatch
    retry-on conn-failure
frontend askbi
    bind %s
    default_backend instances
backend instances
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 300ms fall 2 rise 1
%s`, addr, servers.String())
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + addr, addr: addr, exited: make(chan struct{}), log: logf}
	p.cmd = exec.Command(bin, "-db", "-f", path)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	probe := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := probe.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("haproxy exited: %s", b)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, errors.New("haproxy: no backend came up within 30 s")
		}
	}
}

// Stop ends HAProxy and waits for it.
func (p *Proxy) Stop() error {
	p.cmd.Process.Kill()
	<-p.exited
	return p.log.Close()
}
