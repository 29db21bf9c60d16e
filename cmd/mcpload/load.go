package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// call is one tool call a client made.
type call struct {
	tool       string
	start, end time.Duration // since the run began
	fail       string        // "" when it succeeded, else the error kind
}

// workload is what each client calls, in turn: mixed tools across the
// demo's principals and teams.
type workload struct {
	principal string
	calls     []mcp.CallToolParams
}

func workloads() []workload {
	p := func(name string, args map[string]any) mcp.CallToolParams {
		return mcp.CallToolParams{Name: name, Arguments: args}
	}
	acme := []mcp.CallToolParams{
		p("search_workspace", map[string]any{"query": "signups"}),
		p("run_dataset", map[string]any{"dataset_id": "ds_weekly_signups"}),
		p("get_chart_data", map[string]any{"chart_id": "chart_signups_country"}),
	}
	return []workload{
		// alice also refreshes: those calls reach the warehouse each time.
		{"alice", append(slices.Clone(acme), p("run_dataset", map[string]any{"dataset_id": "ds_weekly_signups", "refresh": true}))},
		{"bob", acme},
		{"vic", acme},
		{"alice-read", acme},
		{"carol", []mcp.CallToolParams{
			p("search_workspace", map[string]any{"query": "tickets"}),
			p("run_dataset", map[string]any{"dataset_id": "ds_tickets"}),
			p("get_chart_data", map[string]any{"chart_id": "chart_tickets"}),
			p("run_dataset", map[string]any{"dataset_id": "ds_tickets", "refresh": true}),
		}},
	}
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// client is one MCP client (the go-sdk's) with its own connections.
type client struct {
	url       string
	transport *http.Transport
	http      *http.Client
	session   *mcp.ClientSession
}

func newClient(url, token string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &client{url: url, transport: tr, http: &http.Client{Transport: bearer{token, tr}, Timeout: 60 * time.Second}}
}

func (c *client) connect(ctx context.Context) error {
	cl := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
	s, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, HTTPClient: c.http, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return err
	}
	c.session = s
	return nil
}

func (c *client) close() {
	if c.session != nil {
		c.session.Close()
		c.session = nil
	}
	c.transport.CloseIdleConnections()
}

// do makes one call and classifies its outcome. A transport failure
// drops the session; the next call connects again, as a real client
// would.
func (c *client) do(ctx context.Context, p mcp.CallToolParams) string {
	if c.session == nil {
		if err := c.connect(ctx); err != nil {
			return "connect: " + short(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := c.session.CallTool(cctx, &p)
	if err != nil {
		c.session.Close()
		c.session = nil
		return "transport: " + short(err)
	}
	if res.IsError {
		var te struct {
			Code string `json:"code"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &te)
		return "tool: " + te.Code
	}
	return ""
}

// transient reports whether a call's failure may pass on a retry: the
// connection went (an instance died), or the server said unavailable.
func transient(fail string) bool {
	return strings.HasPrefix(fail, "transport: ") || strings.HasPrefix(fail, "connect: ") || fail == "tool: unavailable"
}

// short is the first line of an error, without the varying parts that
// would split one kind of failure into many.
func short(err error) string {
	s := err.Error()
	s, _, _ = strings.Cut(s, "\n")
	for _, cut := range []string{": dial tcp", "127.0.0.1:"} {
		if i := strings.Index(s, cut); i > 0 {
			s = s[:i]
		}
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// failurePause is how long a client waits after a failed request before
// its next one.
const failurePause = 100 * time.Millisecond

// runLoad runs n clients for d, each calling its workload in turn, and
// returns every call. Clients connect before the clock starts; onStart,
// when not nil, is called with the time it starts.
func runLoad(ctx context.Context, t *target, n int, d time.Duration, onStart func(begin time.Time)) ([]call, error) {
	ws := workloads()
	clients := make([]*client, n)
	for i := range clients {
		w := ws[i%len(ws)]
		key, err := t.key(w.principal)
		if err != nil {
			return nil, err
		}
		clients[i] = newClient(t.creds.MCPURL, key)
		if err := clients[i].connect(ctx); err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
	}
	var (
		mu  sync.Mutex
		all []call
		wg  sync.WaitGroup
	)
	begin := time.Now()
	if onStart != nil {
		onStart(begin)
	}
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.close()
			w := ws[i%len(ws)]
			var mine []call
			for j := i; ctx.Err() == nil && time.Since(begin) < d; j++ {
				p := w.calls[j%len(w.calls)]
				start := time.Since(begin)
				fail := c.do(ctx, p)
				for try := 1; retryTransient && try < 4 && transient(fail); try++ {
					time.Sleep(failurePause)
					fail = c.do(ctx, p)
				}
				mine = append(mine, call{tool: p.Name, start: start, end: time.Since(begin), fail: fail})
				if fail != "" && !strings.HasPrefix(fail, "tool: ") {
					time.Sleep(failurePause) // as a client backs off
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	return all, nil
}

// stats summarizes calls.
type stats struct {
	calls, failed int
	p50, p99, max time.Duration
	perSecond     float64
	kinds         map[string]int
}

func summarize(calls []call, d time.Duration) stats {
	s := stats{calls: len(calls), kinds: map[string]int{}}
	lat := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		lat = append(lat, c.end-c.start)
		if c.fail != "" {
			s.failed++
			s.kinds[c.fail]++
		}
	}
	if len(lat) == 0 {
		return s
	}
	slices.Sort(lat)
	s.p50, s.p99, s.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	s.perSecond = float64(len(calls)) / d.Seconds()
	return s
}

func (s stats) String() string {
	var b strings.Builder
	rate := 0.0
	if s.calls > 0 {
		rate = 100 * float64(s.failed) / float64(s.calls)
	}
	fmt.Fprintf(&b, "%d calls (%.0f/s), %d failed (%.3f%%), p50 %s, p99 %s, max %s",
		s.calls, s.perSecond, s.failed, rate, round(s.p50), round(s.p99), round(s.max))
	kinds := make([]string, 0, len(s.kinds))
	for k := range s.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n    %6d × %s", s.kinds[k], k)
	}
	return b.String()
}

func round(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
