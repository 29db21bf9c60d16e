package dataexec

import (
	"context"
	"sync"
)

// flights lets identical source work share one query within an Executor:
// while a fetch for a cache key runs, another call for the same key waits
// for its result instead of querying again (single flight), so a burst
// of identical cold-cache calls costs the source one query. The shared
// fetch runs until its result is in, or until every caller waiting for
// it has gone away, which cancels it: one caller's hang-up never fails
// the others.
type flights struct {
	mu sync.Mutex
	m  map[cacheKey]*flight
}

type flight struct {
	done    chan struct{}
	res     *Result
	err     error
	waiting int // callers still waiting
	cancel  context.CancelFunc
}

// do returns the result of fetch for key: the one already running for
// key, or a new one. fetch gets a context that ends when every caller has
// gone; a caller whose own ctx ends stops waiting with ctx's error.
func (fs *flights) do(ctx context.Context, key cacheKey, fetch func(ctx context.Context) (*Result, error)) (*Result, error) {
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[cacheKey]*flight{}
	}
	f, ok := fs.m[key]
	if !ok {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		fs.m[key] = f
		go func() {
			f.res, f.err = fetch(fctx)
			fs.mu.Lock()
			delete(fs.m, key)
			fs.mu.Unlock()
			cancel()
			close(f.done)
		}()
	}
	f.waiting++
	fs.mu.Unlock()
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		fs.mu.Lock()
		if f.waiting--; f.waiting == 0 {
			f.cancel()
		}
		fs.mu.Unlock()
		return nil, ctx.Err()
	}
}
