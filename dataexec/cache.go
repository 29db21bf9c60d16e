package dataexec

import (
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"
	"unsafe"

	"github.com/askbi/askbi/workspace"
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
	// MaxBytes bounds the memory all cached results hold, counted as it
	// is allocated: each result is kept as one buffer of its rows' JSON
	// (the bytes an MCP answer writes, with their row offsets and cell
	// types), beside its column names, meta and the cache's own entry. A
	// result larger than a quarter of it is not cached. Default 64 MiB.
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
	Fields       []workspace.Field
	Filters      []workspace.Filter
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

// resultCache is a bounded LRU of results, kept encoded (cachedResult).
// It is safe for concurrent use.
type resultCache struct {
	ttl, keep  time.Duration
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	bytes int64      // the sum of the entries' size
	lru   *list.List // of *cacheEntry, most recent first
	items map[cacheKey]*list.Element
}

type cacheEntry struct {
	key  cacheKey
	res  cachedResult // meta.DataDate is the fetch time
	size int64        // res.bytes(), fixed when the entry is made
}

// cachedResult is what the cache keeps of a result: its columns, its
// meta and its rows as JSON, never its cells.
type cachedResult struct {
	columns []string
	meta    Meta
	rows    *rowsJSON
}

// entryOverhead is the memory of one entry besides its rows and column
// names: the entry, its rowsJSON, its list element and its map slot (key
// and element pointer).
const entryOverhead = int64(unsafe.Sizeof(cacheEntry{})+unsafe.Sizeof(rowsJSON{})+unsafe.Sizeof(list.Element{})) +
	int64(unsafe.Sizeof(cacheKey{})) + 8

// bytes is the memory c holds: its rows' buffer, its column names and
// the entry around it.
func (c cachedResult) bytes() int64 {
	n := entryOverhead + c.rows.bytes() + int64(cap(c.columns))*int64(unsafe.Sizeof(""))
	for _, col := range c.columns {
		n += int64(len(col))
	}
	return n
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

// get returns a new result of the one under k, holding its rows as JSON,
// and whether it is still fresh. Results older than KeepLastGood are
// dropped.
func (c *resultCache) get(k cacheKey, now time.Time) (res *Result, fresh, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false, false
	}
	e := el.Value.(*cacheEntry)
	age := now.Sub(e.res.meta.DataDate)
	if age > c.keep {
		c.remove(el)
		return nil, false, false
	}
	c.lru.MoveToFront(el)
	return &Result{Columns: e.res.columns, Meta: e.res.meta, rows: &resultRows{json: e.res.rows}}, age < c.ttl, true
}

// put keeps res, which must hold its rows as JSON (a result without is
// not kept), under k, evicting the least recently used results to stay
// within bounds.
func (c *resultCache) put(k cacheKey, res *Result) {
	if res.rows == nil || res.rows.json == nil {
		return
	}
	meta := res.Meta
	meta.Cached, meta.Warning = false, ""
	cr := cachedResult{columns: res.Columns, meta: meta, rows: res.rows.json}
	size := cr.bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	if size > c.maxBytes/4 {
		return
	}
	c.items[k] = c.lru.PushFront(&cacheEntry{key: k, res: cr, size: size})
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
