package dataexec

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"
)

// CacheOptions configures the Executor's cache of fresh results. The zero
// value is valid.
type CacheOptions struct {
	// TTL is how long a result is served without running the request
	// again. Default 5 minutes.
	TTL time.Duration
	// KeepLastGood is how long, from when its data was fetched, a result
	// is kept as the last good result: after a failed refresh or fresh run
	// it is served with a Warning. Default 24 hours; never less than TTL.
	KeepLastGood time.Duration
	// MaxEntries bounds the number of cached results. Default 1,000.
	MaxEntries int
	// MaxBytes bounds the estimated serialized size of all cached results;
	// a result larger than a quarter of it is not cached. Default 64 MiB.
	MaxBytes int64
}

// cacheKey is the SHA-256 of the canonical encoding of everything that
// shapes a result.
type cacheKey [sha256.Size]byte

// keyDoc is encoded with encoding/json, which writes struct fields in
// order and map keys sorted, so equal requests encode equally.
type keyDoc struct {
	DatasetID    string
	Version      int64
	ConnectionID string
	SQL          string // as written; the source binds Variables
	Tool         string
	Arguments    json.RawMessage // re-encoded by renderArguments
	Fields       []Field
	Filters      []Filter
	Variables    map[string]any // resolved, defaults included: the values SQL binds
	MaxRows      int
	MaxBytes     int64
}

func (d keyDoc) sum() (cacheKey, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return cacheKey{}, err
	}
	return sha256.Sum256(b), nil
}

// resultCache is a bounded LRU of results. It is safe for concurrent use.
// Cached results are shared: nobody may change them.
type resultCache struct {
	ttl, keep  time.Duration
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *cacheEntry, most recent first
	items map[cacheKey]*list.Element
}

type cacheEntry struct {
	key  cacheKey
	res  *Result // DataDate is the fetch time
	size int64
}

func newResultCache(o CacheOptions) *resultCache {
	c := &resultCache{ttl: o.TTL, keep: o.KeepLastGood, maxEntries: o.MaxEntries, maxBytes: o.MaxBytes,
		lru: list.New(), items: map[cacheKey]*list.Element{}}
	if c.ttl <= 0 {
		c.ttl = 5 * time.Minute
	}
	if c.keep <= 0 {
		c.keep = 24 * time.Hour
	}
	c.keep = max(c.keep, c.ttl)
	if c.maxEntries <= 0 {
		c.maxEntries = 1000
	}
	if c.maxBytes <= 0 {
		c.maxBytes = 64 << 20
	}
	return c
}

// get returns the result under k and whether it is still fresh. Results
// older than KeepLastGood are dropped.
func (c *resultCache) get(k cacheKey, now time.Time) (res *Result, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false, false
	}
	e := el.Value.(*cacheEntry)
	age := now.Sub(e.res.DataDate)
	if age > c.keep {
		c.remove(el)
		return nil, false, false
	}
	c.lru.MoveToFront(el)
	return e.res, age < c.ttl, true
}

// put stores res under k, evicting the least recently used results to stay
// within bounds.
func (c *resultCache) put(k cacheKey, res *Result, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	if size > c.maxBytes/4 {
		return
	}
	c.items[k] = c.lru.PushFront(&cacheEntry{key: k, res: res, size: size})
	c.bytes += size
	for c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *resultCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.bytes -= e.size
}
