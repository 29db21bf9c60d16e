package httpserve

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// DebugOptions configures ListenDebug. The zero value is valid.
type DebugOptions struct {
	// Metrics, when set, is served at /metrics: the Prometheus scrape
	// handler (telemetry/otelexport's Setup.Metrics). Default none.
	Metrics http.Handler
}

// ListenDebug starts listening for an opt-in debug endpoint on addr:
// the Go runtime's profiles under /debug/pprof/ (goroutine counts, heap
// after a GC with ?gc=1), for load tools and operators, and the metrics
// for Prometheus at /metrics when o gives them. It refuses any address
// that is not loopback: profiles name code paths and hold request data.
// The caller serves the server on the listener and closes it. o may be
// nil.
func ListenDebug(addr string, o *DebugOptions) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, nil, fmt.Errorf("%s: must be a loopback address such as 127.0.0.1:6060", addr)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if o != nil && o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}
