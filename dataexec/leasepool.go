package dataexec

import (
	"context"

	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// LeasePoolOptions configures a [LeasePool]. The zero value is valid.
type LeasePoolOptions struct {
	// Idle is how long a slot this instance holds stays held once its
	// work is done, for the next call to take without a round trip;
	// then it goes back to the shared store. It is how long another
	// instance may find the bound full while this one runs nothing.
	// Default 1 s.
	Idle time.Duration
	// Reuse is how much longer than a call's ttl a slot is leased for, so
	// that it can serve later calls: a slot is given to a call only while
	// its lease outlasts the call's ttl. It is how much later than
	// without a pool the slots of an instance that died come back.
	// Default 30 s.
	Reuse time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// LeasePool is a [Leases] that keeps the slots it took from a shared one
// and gives them to the next calls on this instance, so work that runs
// all the time takes and releases no slot in the shared store: each slot
// is one lease there, taken when this instance needs one more and given
// back once it has been idle for Idle. The bounds hold across instances
// as before, since a slot an instance keeps is a slot the others cannot
// take; the price is that a busy instance may keep one idle for Idle.
// It is safe for concurrent use; call Close to give every idle slot
// back.
type LeasePool struct {
	shared Leases
	idle   time.Duration
	reuse  time.Duration
	now    func() time.Time

	mu     sync.Mutex
	held   map[string][]*pooled // by key
	sweep  bool                 // the sweeper runs
	closed bool
	stop   chan struct{}
}

// pooled is one slot of the shared store this instance holds.
type pooled struct {
	release func()
	expires time.Time
	ttl     time.Duration // of the call it was leased for: it serves calls while it outlasts one
	busy    bool
	freed   time.Time // when its last work ended
}

// NewLeasePool returns a pool over shared; opts may be nil.
func NewLeasePool(shared Leases, opts *LeasePoolOptions) *LeasePool {
	var o LeasePoolOptions
	if opts != nil {
		o = *opts
	}
	setDefault(&o.Idle, time.Second)
	setDefault(&o.Reuse, 30*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	return &LeasePool{shared: shared, idle: o.Idle, reuse: o.Reuse, now: o.Now, held: map[string][]*pooled{}, stop: make(chan struct{})}
}

// Acquire implements [Leases]: for each of slots, a slot this instance
// holds and no work uses, or one more from the shared store; all or
// none.
func (p *LeasePool) Acquire(ctx context.Context, slots []Slot, ttl time.Duration) (func(), error) {
	slots = slices.Clone(slots)
	slices.SortFunc(slots, func(a, b Slot) int { return strings.Compare(a.Key, b.Key) })
	var taken []*pooled
	giveBack := func() {
		p.mu.Lock()
		now := p.now()
		for _, l := range taken {
			l.busy, l.freed = false, now
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			p.giveBack(true)
		}
	}
	for _, s := range slots {
		l, err := p.take(ctx, s, ttl)
		if err != nil {
			giveBack()
			return nil, err
		}
		taken = append(taken, l)
	}
	var once sync.Once
	return func() { once.Do(giveBack) }, nil
}

// take returns a held slot of s free for ttl, or leases one more.
func (p *LeasePool) take(ctx context.Context, s Slot, ttl time.Duration) (*pooled, error) {
	p.mu.Lock()
	now := p.now()
	for _, l := range p.held[s.Key] {
		if !l.busy && l.expires.Sub(now) >= ttl {
			l.busy = true
			p.mu.Unlock()
			return l, nil
		}
	}
	p.mu.Unlock()
	release, err := p.shared.Acquire(ctx, []Slot{s}, ttl+p.reuse)
	if err != nil {
		return nil, err
	}
	l := &pooled{release: release, expires: now.Add(ttl + p.reuse), ttl: ttl, busy: true}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		release()
		return nil, errPoolClosed
	}
	p.held[s.Key] = append(p.held[s.Key], l)
	if !p.sweep {
		p.sweep = true
		go p.sweeper()
	}
	return l, nil
}

var errPoolClosed = askbi.Errorf(askbi.Unavailable, "the shared concurrency slots are closed")

// sweeper gives back, every tenth of Idle, the slots idle for Idle and
// those whose lease can serve no call any more.
func (p *LeasePool) sweeper() {
	tick := time.NewTicker(max(p.idle/10, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		p.giveBack(false)
	}
}

// giveBack releases the idle slots (all of them with all).
func (p *LeasePool) giveBack(all bool) {
	p.mu.Lock()
	now := p.now()
	var out []func()
	for key, ls := range p.held {
		kept := ls[:0]
		for _, l := range ls {
			if !l.busy && (all || now.Sub(l.freed) >= p.idle || l.expires.Sub(now) < l.ttl) {
				out = append(out, l.release)
				continue
			}
			kept = append(kept, l)
		}
		if len(kept) == 0 {
			delete(p.held, key)
		} else {
			p.held[key] = kept
		}
	}
	p.mu.Unlock()
	for _, release := range out {
		release()
	}
}

// Close gives every idle slot back and stops the pool; a slot still in
// use goes back when its work ends.
func (p *LeasePool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
	}
	p.mu.Unlock()
	p.giveBack(true)
}
