package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func numCPU() int { return runtime.NumCPU() }

// window is when a fault was in effect, since the run began.
type window struct {
	name       string
	start, end time.Duration
}

// withRestarts runs the load and restarts PostgreSQL twice during it:
// pg_ctl restart -m fast at a third of the run, -m immediate at two
// thirds. It reports, per restart, how long pg_ctl took and when calls
// failed, and any failure outside a restart plus 2 s.
func withRestarts(ctx context.Context, t *target, clients int, d time.Duration) ([]call, error) {
	var (
		wins []window
		errs []error
		wg   sync.WaitGroup
	)
	calls, err := runLoad(ctx, t, clients, d, func(begin time.Time) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, mode := range []string{"fast", "immediate"} {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(begin.Add(d * time.Duration(i+1) / 3))):
				}
				w := window{name: "pg_ctl restart -m " + mode, start: time.Since(begin)}
				if err := t.pgCtl("restart", "-m", mode, "-w"); err != nil {
					errs = append(errs, err)
				}
				w.end = time.Since(begin)
				wins = append(wins, w)
			}
		}()
	})
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	const grace = 2 * time.Second
	outside := 0
	for _, w := range wins {
		var in []call
		for _, c := range calls {
			if c.fail != "" && c.end >= w.start && c.start <= w.end+grace {
				in = append(in, c)
			}
		}
		fmt.Printf("%s: took %s (at %s); %d calls failed around it", w.name, round(w.end-w.start), round(w.start), len(in))
		if len(in) > 0 {
			last := slices.MaxFunc(in, func(a, b call) int { return int(a.end - b.end) })
			fmt.Printf(", the last ending %s after pg_ctl returned", round(last.end-w.end))
		}
		fmt.Println()
		if len(in) > 0 {
			fmt.Println("  ", summarize(in, w.end-w.start+grace))
		}
	}
	var late []call
	for _, c := range calls {
		if c.fail == "" {
			continue
		}
		if !slices.ContainsFunc(wins, func(w window) bool { return c.end >= w.start && c.start <= w.end+grace }) {
			outside++
			late = append(late, c)
		}
	}
	fmt.Printf("failed calls outside a restart plus %s: %d\n", grace, outside)
	if outside > 0 {
		fmt.Println("  ", summarize(late, d))
		fmt.Printf("   first at %s, last at %s\n", round(late[0].start), round(late[len(late)-1].end))
	}
	return calls, nil
}

// sampleRSS records the server's peak RSS until stop is called.
func sampleRSS(t *target) (stop func() float64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if r, _ := t.rss(); uint64(r*1000) > peak.Load() {
				peak.Store(uint64(r * 1000))
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-finished
		return float64(peak.Load()) / 1000
	}
}

// bigDataset saves a dataset whose run is about 1 MB of rows and returns
// its ID.
func bigDataset(ctx context.Context, t *target) (string, error) {
	return saveDataset(ctx, t, "Load test rows", "SELECT g AS n, repeat('x', 1000) AS pad FROM generate_series(1, 1000) AS g")
}

// saveDataset saves a dataset of sql on the demo warehouse, through
// explore_data as alice, and returns its ID.
func saveDataset(ctx context.Context, t *target, name, sql string) (string, error) {
	key, err := t.key("alice")
	if err != nil {
		return "", err
	}
	c := newClient(t.creds.MCPURL, key)
	defer c.close()
	if err := c.connect(ctx); err != nil {
		return "", err
	}
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: "explore_data", Arguments: map[string]any{
		"operation": "save", "connection_id": "conn_acme_wh", "name": name, "dashboard_id": "dash_growth", "sql": sql}})
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Dataset struct {
			ID string `json:"id"`
		} `json:"dataset"`
	}
	if json.Unmarshal(b, &out); res.IsError || out.Dataset.ID == "" {
		return "", fmt.Errorf("saving the dataset %q: %s", name, b)
	}
	return out.Dataset.ID, nil
}

// withSlowReaders runs the load while slow clients each POST a
// run_dataset of the 1 MB dataset and never read the answer; it reports
// the server's peak RSS and how much each slow client was sent when it
// finally reads.
func withSlowReaders(ctx context.Context, t *target, clients int, d time.Duration, slow int) ([]call, error) {
	id, err := bigDataset(ctx, t)
	if err != nil {
		return nil, err
	}
	key, _ := t.key("alice")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "run_dataset", "arguments": map[string]any{"dataset_id": id}}})
	u, _ := url.Parse(t.creds.MCPURL)
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, key, len(body), body)

	// One answer read in full, for its size.
	full, err := rawCall(u.Host, req, true)
	if err != nil {
		return nil, err
	}
	fmt.Printf("slow readers: %d connections each POST run_dataset (an answer of %d bytes) and do not read it\n", slow, full)
	if err := t.resetPeak(); err != nil {
		fmt.Println("  (cannot reset VmHWM:", err, ")")
	}
	base, _ := t.rss()
	stop := sampleRSS(t)
	// A small receive buffer from the start (before the handshake sets
	// the window), so the answer stays on the server's side.
	dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	var conns []net.Conn
	for range slow {
		c, err := dialer.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte(req)); err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	calls, err := runLoad(ctx, t, clients, d, nil)
	peak := stop()
	_, hwm := t.rss()
	if err != nil {
		return nil, err
	}
	fmt.Printf("  RSS %.1f MB before, peak %.1f MB sampled (VmHWM %.1f MB) while they hung\n", base, peak, hwm)
	// Now read what each was sent, all at once.
	got := make([]int, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			got[i], _ = readAnswer(c, 20*time.Second)
		}()
	}
	wg.Wait()
	var whole, cut int
	for _, n := range got {
		if n >= full {
			whole++
		} else {
			cut++
		}
	}
	slices.Sort(got)
	fmt.Printf("  then read: %d got the whole answer, %d less (median %d bytes)\n", whole, cut, got[len(got)/2])
	return calls, nil
}

// rawCall sends req on a new connection and returns the size of the
// answer; with read false it only sends.
func rawCall(host, req string, read bool) (int, error) {
	c, err := net.Dial("tcp", host)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte(req)); err != nil {
		return 0, err
	}
	return readAnswer(c, 30*time.Second)
}

// readAnswer reads one HTTP answer from c, whole or until the server
// closes c or the timeout passes, and returns its size in bytes.
func readAnswer(c net.Conn, timeout time.Duration) (int, error) {
	c.SetReadDeadline(time.Now().Add(timeout))
	var buf bytes.Buffer
	// The server keeps the connection open: read until the body is in.
	tmp := make([]byte, 64<<10)
	for {
		n, err := c.Read(tmp)
		buf.Write(tmp[:n])
		b := buf.Bytes()
		if i := bytes.Index(b, []byte("\r\n\r\n")); i > 0 {
			length := -1
			for _, line := range bytes.Split(b[:i], []byte("\r\n")) {
				fmt.Sscanf(string(bytes.ToLower(line)), "content-length: %d", &length)
			}
			if length >= 0 && len(b) >= i+4+length || length < 0 && bytes.HasSuffix(b, []byte("\r\n0\r\n\r\n")) {
				return len(b), nil
			}
		}
		if err != nil {
			return buf.Len(), err
		}
	}
}

// withSlowLoris runs the load while slow connections trickle header
// bytes (one header line a second, never the blank line); each one the
// server closes is dialled again. It reports how many the server closed
// and how long they lived.
func withSlowLoris(ctx context.Context, t *target, clients int, d time.Duration, slow int) ([]call, error) {
	u, _ := url.Parse(t.creds.MCPURL)
	lctx, cancel := context.WithCancel(ctx)
	var (
		closed, dialed atomic.Int64
		lived          atomic.Int64 // total lifetime of closed ones, ms
		wg             sync.WaitGroup
	)
	for range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil {
				c, err := net.Dial("tcp", u.Host)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				dialed.Add(1)
				born := time.Now()
				_, err = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.Path, u.Host)
				for err == nil && lctx.Err() == nil {
					select {
					case <-lctx.Done():
					case <-time.After(time.Second):
						_, err = c.Write([]byte("X-Slow: 1\r\n"))
					}
				}
				if err != nil {
					closed.Add(1)
					lived.Add(time.Since(born).Milliseconds())
				}
				c.Close()
			}
		}()
	}
	calls, err := runLoad(ctx, t, clients, d, nil)
	cancel()
	wg.Wait()
	if n := closed.Load(); n > 0 {
		fmt.Printf("slow loris: %d connections held; %d dialled in all, %d closed by the server after %.1f s on average\n",
			slow, dialed.Load(), n, float64(lived.Load())/float64(n)/1000)
	} else {
		fmt.Printf("slow loris: %d connections held; %d dialled, none closed by the server\n", slow, dialed.Load())
	}
	return calls, err
}

// withKill runs the load on several instances and kills the last one
// (kill -9) at half time, as a crash would. It reports when, and any
// failure that remained after the clients' retries.
func withKill(ctx context.Context, t *target, clients int, d time.Duration) ([]call, error) {
	killed := make(chan time.Duration, 1)
	calls, err := runLoad(ctx, t, clients, d, func(begin time.Time) {
		go func() {
			select {
			case <-ctx.Done():
				killed <- 0
				return
			case <-time.After(d / 2):
			}
			victim := t.others[len(t.others)-1]
			victim.cmd.Process.Kill()
			<-victim.exited
			killed <- time.Since(begin)
		}()
	})
	if err != nil {
		return nil, err
	}
	failed := 0
	for _, c := range calls {
		if c.fail != "" {
			failed++
		}
	}
	fmt.Printf("kill -9 of instance %d at %s; %d calls failed after their retries\n", len(t.others), round(<-killed), failed)
	return calls, nil
}
