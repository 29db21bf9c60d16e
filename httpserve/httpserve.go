// Package httpserve is what a host puts around the SDK's HTTP handlers
// (the MCP server, the chat API) to survive load and faults: recommended
// http.Server settings, a readiness check that follows the dependencies
// and recovers by itself, a drain that refuses requests cleanly while
// the server shuts down, the Go runtime's soft memory limit
// ([SetMemoryLimit]), and the check of a sign-in page's return address
// ([LocalPath]).
//
// Quick start:
//
//	drain := &httpserve.Drain{}
//	ready := httpserve.NewReadiness([]httpserve.Check{
//		{Name: "database", Func: db.PingContext},
//		drain.Check(),
//	}, nil)
//	mux.Handle("GET /readyz", ready)
//	mux.HandleFunc("GET /healthz", httpserve.Live)
//	srv := httpserve.NewServer(drain.Handler(mux), nil)
//	go srv.Serve(ln)
//	<-ctx.Done()
//	drain.Start()               // readiness fails, new requests get 503
//	time.Sleep(2 * time.Second) // let the load balancer notice
//	srv.Shutdown(shutdownCtx)
package httpserve

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/httpjson"
)

// ServerOptions are the limits of [NewServer]. The zero value is valid;
// each zero field means its default.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers, so
	// slow-loris connections are closed. Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. Default 30 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a response from the end of its request's
	// headers, so a client that never reads cannot hold its answer (and
	// the memory behind it) longer. Streaming handlers (the chat API's
	// event streams) move their own deadline per write. Default 60 s.
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections. Default 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers. Default 64 KiB.
	MaxHeaderBytes int
}

// NewServer returns an http.Server for h with the limits of opts (nil
// for the defaults): no slow-loris on headers or bodies, and no answer
// held open forever by a slow reader.
func NewServer(h http.Handler, opts *ServerOptions) *http.Server {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 30*time.Second)
	def(&o.WriteTimeout, 60*time.Second)
	def(&o.IdleTimeout, 2*time.Minute)
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
	}
}

// HandleTree registers h on mux for path and every path below it
// (path and path/), as the SDK's handlers that serve a tree of routes
// (the OAuth account pages, connections, usage) want to be mounted.
// path has no trailing slash.
func HandleTree(mux *http.ServeMux, path string, h http.Handler) {
	mux.Handle(path, h)
	mux.Handle(path+"/", h)
}

// Live answers a liveness probe: 200 while the process serves HTTP at
// all, whatever its dependencies do (a restart would not fix them).
func Live(w http.ResponseWriter, _ *http.Request) {
	httpjson.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Check is one dependency of readiness: Func returns nil while it can
// be used. A *sql.DB's or *sqlx.DB's PingContext is one.
type Check struct {
	Name string
	Func func(ctx context.Context) error
}

// ReadinessOptions configures a Readiness. The zero value is valid.
type ReadinessOptions struct {
	// Timeout bounds each check. Default 2 s.
	Timeout time.Duration
	// Logger logs when a check starts failing and when it recovers,
	// once each. Default slog.Default().
	Logger *slog.Logger
}

// Readiness answers readiness probes from its checks, run on every probe
// (so it recovers as soon as its dependencies do, without a restart). It
// is safe for concurrent use.
type Readiness struct {
	checks  []Check
	timeout time.Duration
	log     *slog.Logger

	mu   sync.Mutex
	down map[string]bool // the checks failing at the last probe
}

// NewReadiness returns a Readiness over checks; opts may be nil.
func NewReadiness(checks []Check, opts *ReadinessOptions) *Readiness {
	var o ReadinessOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Readiness{checks: checks, timeout: o.Timeout, log: o.Logger, down: map[string]bool{}}
}

// Check runs every check and returns nil when all pass, or Unavailable
// naming the first that failed (its cause is logged, never answered).
func (r *Readiness) Check(ctx context.Context) error {
	var first error
	for _, c := range r.checks {
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		err := c.Func(cctx)
		cancel()
		r.note(c.Name, err)
		if err != nil && first == nil {
			first = askbi.Retry(askbi.Unavailable, time.Second, "not ready: %s is unavailable", c.Name)
		}
	}
	return first
}

// note logs a check's change of state, once.
func (r *Readiness) note(name string, err error) {
	r.mu.Lock()
	was := r.down[name]
	r.down[name] = err != nil
	r.mu.Unlock()
	switch {
	case err != nil && !was:
		r.log.Warn("httpserve: not ready", "check", name, "err", err)
	case err == nil && was:
		r.log.Info("httpserve: ready again", "check", name)
	}
}

// ServeHTTP answers a readiness probe: 200 {"status":"ready"}, or 503
// with Retry-After and the error body {"error":{"code":"unavailable",...}}.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if err := r.Check(req.Context()); err != nil {
		httpjson.WriteError(w, req, r.log, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Drain refuses requests while the server shuts down. The zero value
// serves; after Start, its Handler answers every request 503 unavailable
// with Retry-After and Connection: close, and its Check fails, so a load
// balancer sends the traffic elsewhere while the requests already running
// finish (http.Server.Shutdown). It is safe for concurrent use.
type Drain struct{ draining atomic.Bool }

// Start begins the drain.
func (d *Drain) Start() { d.draining.Store(true) }

// Handler refuses requests once the drain started, and passes them to
// next before.
func (d *Drain) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
			httpjson.WriteError(w, r, slog.Default(), errShuttingDown)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Check is a readiness check that fails once the drain started.
func (d *Drain) Check() Check {
	return Check{Name: "shutdown", Func: func(context.Context) error {
		if d.draining.Load() {
			return errShuttingDown
		}
		return nil
	}}
}

var errShuttingDown = askbi.Retry(askbi.Unavailable, time.Second, "the server is shutting down; try again in a moment")
