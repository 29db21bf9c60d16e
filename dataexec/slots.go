package dataexec

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// The default concurrency bounds, for a source whose pool holds 16
// connections (pgsource's default, internal/pgpool): one source runs at
// most 15 queries at once, leaving a connection for a query's cancel
// request; one team takes at most half of them, so two busy teams cannot
// starve a third; and one principal (a user, with all its keys and
// sessions) takes at most 4, so one agent's heavy previews leave its
// teammates room.
const (
	DefaultMaxPerPrincipal = 4
	DefaultMaxPerTeam      = 8
	DefaultMaxPerSource    = 15
)

// ConcurrencyOptions bound the source work (queries and inspections)
// running at once. A call past any bound is refused at once with
// RateLimited and a retry hint ([askbi.RetryAfter]), never queued: a queue
// would only hold the caller's connection and memory while the bound's
// owner keeps the source busy. Results served from the cache take no
// slot, and neither do calls that join an identical one already running
// (they share its query: single flight). The bounds are per Executor (one
// process), but for the team and source bounds when Shared is set. The
// zero value is valid.
type ConcurrencyOptions struct {
	// MaxPerPrincipal bounds the source work of one user in one team, across
	// its credentials. Default DefaultMaxPerPrincipal (4).
	MaxPerPrincipal int
	// MaxPerTeam bounds the source work of one team. Default
	// DefaultMaxPerTeam (8).
	MaxPerTeam int
	// MaxPerSource bounds the work on one connection, and on one Source
	// value shared by several connections (one pool). Keep it at or below
	// the source's connection pool. Default DefaultMaxPerSource (15).
	MaxPerSource int
	// RetryAfter is the retry hint of a refusal. Default 1 s.
	RetryAfter time.Duration
	// Shared, when set, holds the team and connection bounds across every
	// instance sharing it (pgstore.Leases in the reference server): a
	// call takes a slot there too, under a lease that expires after the
	// query deadline and a margin, so the slots of an instance that died
	// come back. While Shared is unavailable the bounds hold per process
	// again (logged once). The principal bound, and a Source shared by
	// several connections, stay per process. Default nil: per process.
	Shared Leases
	// Logger logs each change of Shared's availability. Default
	// slog.Default().
	Logger *slog.Logger
}

// Leases keeps concurrency slots shared by several instances. It is safe
// for concurrent use, across processes.
type Leases interface {
	// Acquire takes one slot of each of slots, all below their bounds, or
	// none: it returns RateLimited wrapping a *SlotFull when one is at its
	// bound, and Unavailable when the store cannot be reached. A slot not
	// released expires after ttl. release frees the slots; it may return
	// before they are freed.
	Acquire(ctx context.Context, slots []Slot, ttl time.Duration) (release func(), err error)
}

// SlotFull is the cause of a Leases refusal: the slot at its bound.
type SlotFull struct{ Key string }

func (f *SlotFull) Error() string { return "dataexec: slot " + f.Key + " is at its bound" }

// Slot is one bound a shared slot counts against: "team:<id>" or
// "connection:<id>", with its bound.
type Slot struct {
	Key string
	Max int
}

// slots counts the source work running per principal, team and source.
type slots struct {
	perPrincipal, perTeam, perSource int
	retry                            time.Duration
	shared                           Leases
	lease                            time.Duration // of a shared slot
	log                              *slog.Logger
	sharedDown                       atomic.Bool

	mu        sync.Mutex
	principal map[string]int
	team      map[string]int
	source    map[any]int
}

// newSlots returns the bounds of o, for work that runs at most timeout.
func newSlots(o ConcurrencyOptions, timeout time.Duration) *slots {
	s := &slots{perPrincipal: o.MaxPerPrincipal, perTeam: o.MaxPerTeam, perSource: o.MaxPerSource, retry: o.RetryAfter,
		shared: o.Shared, lease: timeout + 10*time.Second, log: o.Logger,
		principal: map[string]int{}, team: map[string]int{}, source: map[any]int{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	setDefault(&s.perPrincipal, DefaultMaxPerPrincipal)
	setDefault(&s.perTeam, DefaultMaxPerTeam)
	setDefault(&s.perSource, DefaultMaxPerSource)
	setDefault(&s.retry, time.Second)
	return s
}

// acquire takes one slot of p, p's team and src, here and in Shared, or
// none: past a bound it returns RateLimited at once. The caller calls
// release when the work is done.
func (s *slots) acquire(ctx context.Context, p access.Principal, src Source, connID string) (func(), error) {
	release, err := s.local(p, src, connID)
	if err != nil || s.shared == nil {
		return release, err
	}
	free, err := s.shared.Acquire(ctx, []Slot{{"team:" + p.TeamID, s.perTeam}, {"connection:" + connID, s.perSource}}, s.lease)
	switch {
	case err == nil:
		if s.sharedDown.CompareAndSwap(true, false) {
			s.log.InfoContext(ctx, "dataexec: the shared concurrency slots answer again; the team and source bounds hold across instances")
		}
		return func() { release(); free() }, nil
	case askbi.ErrorCode(err) == askbi.RateLimited:
		release()
		var full *SlotFull
		if errors.As(err, &full) && strings.HasPrefix(full.Key, "team:") {
			return nil, askbi.Retry(askbi.RateLimited, s.retry, "your team already has %d queries running; try again in a moment", s.perTeam)
		}
		return nil, askbi.Retry(askbi.RateLimited, s.retry, "this data source is busy (%d queries running); try again in a moment", s.perSource)
	case ctx.Err() != nil:
		release()
		return nil, &askbi.Error{Code: askbi.Unavailable, Message: "the request was cancelled", Err: ctx.Err()}
	}
	if !s.sharedDown.Swap(true) {
		s.log.WarnContext(ctx, "dataexec: the shared concurrency slots are unavailable; each instance bounds its own work until they answer", "err", err)
	}
	return release, nil
}

// local takes one slot of p, p's team and src in this process.
func (s *slots) local(p access.Principal, src Source, connID string) (release func(), err error) {
	pk, tk := p.TeamID+"/"+p.UserID, p.TeamID
	// A source counts under its connection, and also as itself when one
	// Source value serves several connections (a shared pool); a source
	// made afresh per call (a remote MCP connection's) counts under its
	// connection only.
	sks := []any{"conn:" + connID}
	if src != nil && reflect.TypeOf(src).Comparable() {
		sks = append(sks, src)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.principal[pk] >= s.perPrincipal:
		return nil, askbi.Retry(askbi.RateLimited, s.retry, "you already have %d queries running; wait for one to finish and try again", s.perPrincipal)
	case s.team[tk] >= s.perTeam:
		return nil, askbi.Retry(askbi.RateLimited, s.retry, "your team already has %d queries running; try again in a moment", s.perTeam)
	}
	for _, sk := range sks {
		if s.source[sk] >= s.perSource {
			return nil, askbi.Retry(askbi.RateLimited, s.retry, "this data source is busy (%d queries running); try again in a moment", s.perSource)
		}
	}
	s.principal[pk]++
	s.team[tk]++
	for _, sk := range sks {
		s.source[sk]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			dec(s.principal, pk)
			dec(s.team, tk)
			for _, sk := range sks {
				dec(s.source, sk)
			}
		})
	}, nil
}

func dec[K comparable](m map[K]int, k K) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}
