// Command mcpload is the load and fault benchmark of the reference
// server's MCP endpoint. It starts a throwaway PostgreSQL cluster (the
// installed binaries, as internal/pgtest does), builds and starts
// examples/refserver on it with -debug-addr, and drives it with MCP
// clients (the official go-sdk client) calling search_workspace,
// run_dataset (some with refresh) and get_chart_data across the demo's
// principals. It prints the error rate and latency, and the server's
// goroutines, Go heap (after a GC), RSS, open files and database
// connections before and after the run.
//
// Run it from the module root:
//
//	go run ./cmd/mcpload -clients 50 -duration 60s
//	go run ./cmd/mcpload -fault pg-restart     # pg_ctl restart -m fast at 1/3, -m immediate at 2/3
//	go run ./cmd/mcpload -fault slow-readers   # 200 clients ask for a 1 MB run_dataset and never read
//	go run ./cmd/mcpload -fault slow-loris     # 200 connections trickle their headers
//	go run ./cmd/mcpload -instances 3 -fault kill-instance   # three behind HAProxy, one killed (-9) at half time
//	go run ./cmd/mcpload -workload misses -clients 8           # every call a cache miss of 1,000 rows: the peak RSS
//	go run ./cmd/mcpload -workload misses -clients 8 -plain    # then paired with plain SQL in this process: the throughput of misses and hits
//
// -workload misses saves a dataset of 1,000 rows of a 100,000-row table
// (warehouse.bench) and has each client post run_dataset as raw
// JSON-RPC, each call with a filter value no call used before (so every
// call misses the cache and the cache fills), reading the whole answer
// without decoding it; the server gets a response budget that fits the
// answer and concurrency bounds that let every call run. It prints the
// server's peak RSS at start (VmHWM before the load) and during the load
// (VmHWM reset before it). -plain then alternates batches of plain SQL
// reads of the same rows (lib/pq and encoding/json in this process)
// with batches of misses and batches of hits (one call repeated, from
// the result cache), for -duration, and prints the throughput and CPU a
// call of each against plain's: the black-box measure.
//
// With -instances above 1 the servers share the cluster, run behind
// HAProxy (Debian's haproxy) and the figures are the first instance's;
// the clients then retry a call that failed for a reason that passes (a
// closed connection, 502, 503, unavailable) up to three times, as a
// client of a load-balanced service does, and each call counts once with
// the time all its tries took.
//
// It needs PostgreSQL's server binaries; as root it runs the cluster as
// the postgres user. MCPLOAD_KEEP=1 keeps the folder with the logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// cpuProfile is -cpuprofile.
var cpuProfile string

// pgStatements is -statements: the cluster loads pg_stat_statements, and
// the statements the load ran are printed after it.
var pgStatements bool

// retryTransient makes clients retry calls that failed for a reason that
// passes (see the command's doc); it is on with -instances above 1.
var retryTransient bool

func main() {
	clients := flag.Int("clients", 50, "MCP clients calling tools")
	duration := flag.Duration("duration", 60*time.Second, "how long the clients call")
	fault := flag.String("fault", "", "fault to inject during the load: pg-restart, slow-readers, slow-loris or kill-instance")
	instances := flag.Int("instances", 1, "reference servers on the one database; above 1, behind HAProxy")
	slow := flag.Int("slow", 200, "slow readers or slow-loris connections (-fault)")
	resultBytes := flag.Int("mcp-result-bytes", 0, "the server's -mcp-result-bytes (0: its default)")
	inFlight := flag.Int("mcp-max-in-flight", 0, "the server's -mcp-max-in-flight, MCP requests per user (0: its default, 16)")
	settle := flag.Duration("settle", 5*time.Second, "wait after the run before the after figures")
	bin := flag.String("refserver", "", "a built reference server (default: go build ./examples/refserver)")
	workload := flag.String("workload", "mixed", "what the clients call: mixed (tools across the demo's principals) or misses (1,000-row cache misses)")
	plain := flag.Bool("plain", false, "with -workload misses, then compare the misses and hits with plain SQL in this process, for -duration")
	serverFlags := flag.String("server-flags", "", "more flags for the reference server, space-separated (e.g. \"-memory-limit 80MiB\")")
	flag.BoolVar(&pgStatements, "statements", false, "print the PostgreSQL statements the load ran (pg_stat_statements), per tool call")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write the server's CPU profile over the middle half of the load to this file")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	retryTransient = *instances > 1
	if *workload != "mixed" && *workload != "misses" || *plain && *workload != "misses" {
		fmt.Fprintln(os.Stderr, "mcpload: -workload is mixed or misses; -plain needs -workload misses")
		os.Exit(2)
	}
	o := options{clients: *clients, d: *duration, fault: *fault, slow: *slow, resultBytes: *resultBytes, inFlight: *inFlight,
		instances: *instances, settle: *settle, bin: *bin, misses: *workload == "misses", plain: *plain, serverFlags: strings.Fields(*serverFlags)}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	clients           int
	d                 time.Duration
	fault             string
	slow, resultBytes int
	inFlight          int
	instances         int
	settle            time.Duration
	bin               string
	misses, plain     bool     // -workload misses, -plain
	serverFlags       []string // -server-flags
}

func run(ctx context.Context, o options) error {
	clients, d, fault, slow, instances, settle := o.clients, o.d, o.fault, o.slow, o.instances, o.settle
	var extra []string
	if o.misses {
		extra = missesFlags(o.resultBytes)
	} else if o.resultBytes > 0 {
		extra = append(extra, "-mcp-result-bytes", fmt.Sprint(o.resultBytes))
	}
	if o.inFlight > 0 {
		extra = append(extra, "-mcp-max-in-flight", fmt.Sprint(o.inFlight))
	}
	extra = append(extra, o.serverFlags...)
	if o.misses && fault != "" {
		return errors.New("-fault needs -workload mixed")
	}
	switch fault {
	case "", "pg-restart", "slow-readers", "slow-loris":
	case "kill-instance":
		if instances < 2 {
			return errors.New("-fault kill-instance needs -instances 2 or more")
		}
	default:
		return fmt.Errorf("-fault %q: want pg-restart, slow-readers, slow-loris or kill-instance", fault)
	}
	t, err := startTarget(ctx, o.bin, extra, instances)
	if err != nil {
		return err
	}
	defer t.stop()
	fmt.Printf("reference server %s (pid %d; %d instances), PostgreSQL in %s\n", t.creds.BaseURL, t.proc.Process.Pid, max(instances, 1), t.pgData)
	fmt.Printf("%d clients, %s, fault %q; machine: %d CPUs (shared with other work unless said otherwise)\n",
		clients, d, orNone(fault), numCPU())

	if start, err := t.snapshot(ctx); err == nil {
		fmt.Println("at start (before any call):", start)
	}
	var datasetID string // the misses' dataset
	if o.misses {
		if datasetID, err = setupMisses(ctx, t); err != nil {
			return err
		}
	}
	// Warm up: every client connects and calls each tool, so pools and
	// caches are filled before the "before" figures.
	if o.misses {
		_, err = runMisses(ctx, t, clients, 3*time.Second, datasetID)
	} else {
		_, err = runLoad(ctx, t, clients, 3*time.Second, nil)
	}
	if err != nil {
		return err
	}
	time.Sleep(settle)
	t.settleRSS(2 * time.Minute)
	before, err := t.snapshot(ctx)
	if err != nil {
		return err
	}
	fmt.Println("before (after a warm-up, RSS settled):", before)
	if o.misses {
		// The peak so far is the start's and the warm-up's; from here on
		// it is the load's.
		fmt.Printf("peak RSS from start through the warm-up: %.1f MB\n", before.PeakRSSMB)
		if err := t.resetPeak(); err != nil {
			fmt.Println("  (cannot reset VmHWM:", err, ")")
		}
	}

	if cpuProfile != "" {
		go func() {
			time.Sleep(d / 4)
			body, err := get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", t.debug, max(int(d.Seconds()/2), 1)))
			if err == nil {
				err = os.WriteFile(cpuProfile, []byte(body), 0o644)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "mcpload: cpu profile:", err)
			}
		}()
	}
	if pgStatements {
		if err := t.resetStatements(ctx); err != nil {
			return err
		}
	}
	// A reading while the clients are still at work, near the end.
	duringc := make(chan snapshot, 1)
	go func() {
		time.Sleep(d * 9 / 10)
		s, _ := t.snapshot(ctx)
		duringc <- s
	}()
	var calls []call
	switch fault {
	case "":
		if o.misses {
			calls, err = runMisses(ctx, t, clients, d, datasetID)
		} else {
			calls, err = runLoad(ctx, t, clients, d, nil)
		}
	case "pg-restart":
		calls, err = withRestarts(ctx, t, clients, d)
	case "slow-readers":
		calls, err = withSlowReaders(ctx, t, clients, d, slow)
	case "slow-loris":
		calls, err = withSlowLoris(ctx, t, clients, d, slow)
	case "kill-instance":
		calls, err = withKill(ctx, t, clients, d)
	}
	if err != nil {
		return err
	}
	during := <-duringc
	fmt.Println("during the load:", during)
	fmt.Println("calls:", summarize(calls, d))
	if pgStatements {
		if err := t.printStatements(ctx, len(calls)); err != nil {
			return err
		}
	}
	if o.misses {
		_, peak := t.rss()
		fmt.Printf("peak RSS during the load (%d clients of distinct misses, %s): %.1f MB\n", clients, d, peak)
	}
	time.Sleep(settle)
	t.settleRSS(2 * time.Minute)
	after, err := t.snapshot(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("after (%s later, RSS settled): %s\n", settle, after)
	fmt.Println(flatness(before, after))
	if o.plain {
		return comparePlain(ctx, t, clients, d, datasetID)
	}
	return nil
}

// flatness compares the figures before and after the run.
func flatness(b, a snapshot) string {
	var notes []string
	if a.Goroutines > b.Goroutines+5 {
		notes = append(notes, fmt.Sprintf("goroutines +%d", a.Goroutines-b.Goroutines))
	}
	if a.OpenFiles > b.OpenFiles+5 {
		notes = append(notes, fmt.Sprintf("open files +%d", a.OpenFiles-b.OpenFiles))
	}
	if a.HeapMB > 1.5*b.HeapMB+5 {
		notes = append(notes, fmt.Sprintf("Go heap %.1f → %.1f MB", b.HeapMB, a.HeapMB))
	}
	if a.RSSMB > 1.25*b.RSSMB+10 {
		notes = append(notes, fmt.Sprintf("RSS %.1f → %.1f MB", b.RSSMB, a.RSSMB))
	}
	if a.DBConns > b.DBConns+2 {
		notes = append(notes, fmt.Sprintf("database connections %d → %d", b.DBConns, a.DBConns))
	}
	if len(notes) == 0 {
		return "flat: goroutines, open files, Go heap, RSS and database connections are back to their before figures"
	}
	return "NOT flat: " + strings.Join(notes, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
