package httpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbi/askbi/httpserve"
)

// serve runs srv on a loopback port until the test ends.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func errorCode(b []byte) string {
	var doc struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &doc)
	return doc.Error.Code
}

// TestReadiness: /readyz fails while a dependency is down, recovers by
// itself, and logs each change once; the drain makes it fail too and
// refuses every request with 503 unavailable, while /healthz stays a
// plain liveness answer until then.
// TestHandleTree: the path, the paths below it, and nothing beside it.
func TestHandleTree(t *testing.T) {
	mux := http.NewServeMux()
	httpserve.HandleTree(mux, "/ai/usage", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for path, want := range map[string]int{"/ai/usage": http.StatusTeapot, "/ai/usage/": http.StatusTeapot, "/ai/usage/budgets/x": http.StatusTeapot,
		"/ai/usages": http.StatusNotFound, "/ai": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("GET %s = %d, want %d", path, rec.Code, want)
		}
	}
}

func TestReadiness(t *testing.T) {
	var down atomic.Bool
	var logs bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) }), nil))
	drain := &httpserve.Drain{}
	ready := httpserve.NewReadiness([]httpserve.Check{
		{Name: "database", Func: func(context.Context) error {
			if down.Load() {
				return errors.New("dial tcp: connection refused")
			}
			return nil
		}},
		drain.Check(),
	}, &httpserve.ReadinessOptions{Logger: log})
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", ready)
	mux.HandleFunc("GET /healthz", httpserve.Live)
	url := serve(t, httpserve.NewServer(drain.Handler(mux), nil))

	if status, _, b := get(t, url+"/readyz"); status != http.StatusOK {
		t.Fatalf("ready: %d %s", status, b)
	}
	down.Store(true)
	for range 3 {
		status, h, b := get(t, url+"/readyz")
		if status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || errorCode(b) != "unavailable" || strings.Contains(string(b), "refused") {
			t.Errorf("database down: %d %v %s; want 503 unavailable with Retry-After and no cause", status, h, b)
		}
		if status, _, _ := get(t, url+"/healthz"); status != http.StatusOK {
			t.Errorf("liveness while the database is down = %d, want 200", status)
		}
	}
	down.Store(false)
	if status, _, b := get(t, url+"/readyz"); status != http.StatusOK {
		t.Errorf("after recovery: %d %s", status, b)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if n, m := strings.Count(out, "not ready"), strings.Count(out, "ready again"); n != 1 || m != 1 {
		t.Errorf("logged %d failures and %d recoveries for one outage, want 1 and 1:\n%s", n, m, out)
	}

	drain.Start()
	for _, path := range []string{"/readyz", "/healthz", "/anything"} {
		status, h, b := get(t, url+path)
		if status != http.StatusServiceUnavailable || errorCode(b) != "unavailable" || h.Get("Retry-After") == "" {
			t.Errorf("%s while draining: %d %v %s; want 503 unavailable with Retry-After", path, status, h, b)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestSlowClients: 200 slow-loris connections (headers never finished)
// and 50 clients that never read a 1 MB answer do not stop another
// client from being served, and the server lets go of every one of them
// by itself (header and write deadlines).
func TestSlowClients(t *testing.T) {
	var writing atomic.Int64
	big := bytes.Repeat([]byte("x"), 1<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		writing.Add(1)
		defer writing.Add(-1)
		for range 8 { // 8 MB, far more than the socket buffers hold
			if _, err := w.Write(big); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	url := serve(t, httpserve.NewServer(mux, &httpserve.ServerOptions{ReadHeaderTimeout: 300 * time.Millisecond, WriteTimeout: 500 * time.Millisecond}))
	addr := strings.TrimPrefix(url, "http://")

	var loris []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET /small HTTP/1.1\r\nHost: x\r\n")) // never finished
		loris = append(loris, c)
	}
	var readers []net.Conn
	for range 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")) // never read
		readers = append(readers, c)
	}
	for range 5 {
		if status, _, b := get(t, url+"/small"); status != http.StatusOK || string(b) != "ok" {
			t.Fatalf("another client while 250 slow ones are connected: %d %s", status, b)
		}
	}
	// The server closes the slow-loris connections and stops writing to
	// the readers that never read (generous bound: the deadlines are
	// below 1 s).
	for _, c := range loris {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("a slow-loris connection is still open after 10 s: %v", err)
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for writing.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := writing.Load(); n > 0 {
		t.Errorf("%d handlers still write to clients that never read, 10 s on", n)
	}
	for _, c := range readers {
		c.Close()
	}
}
