package dataexec

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCacheBound: the cache never holds more than MaxBytes, counting what
// each entry really keeps (its one rows buffer at its capacity, its column
// names, the entry's own structures), and keeps no result larger than a
// quarter of it.
func TestCacheBound(t *testing.T) {
	const maxBytes = 256 << 10
	c := newResultCache(CacheOptions{MaxBytes: maxBytes, MaxEntries: 1 << 20})
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	held := func() (n int64) {
		for el := c.lru.Front(); el != nil; el = el.Next() {
			e := el.Value.(*cacheEntry)
			n += entryOverhead + int64(cap(e.res.rows.buf)) + int64(cap(e.res.columns))*16
			for _, col := range e.res.columns {
				n += int64(len(col))
			}
		}
		return n
	}
	for i := range 200 {
		// Results from 0 to about 80 KB of JSON, the largest over a
		// quarter of the bound.
		rows := make([][]any, (i*37)%1200)
		for j := range rows {
			rows[j] = []any{int64(j), strings.Repeat("x", i%50), 1.5, nil}
		}
		res := NewResult([]string{"id", "text", fmt.Sprint("col", i), "none"}, rows, Meta{DataDate: now})
		enc, err := encodeRows(res.Rows(), 0)
		if err != nil {
			t.Fatal(err)
		}
		res.rows.json = enc
		c.put(sha256.Sum256(fmt.Append(nil, i)), res)

		if got := held(); got != c.bytes || got > maxBytes {
			t.Fatalf("after %d puts the cache holds %d bytes and counts %d; want them equal and at most %d", i+1, got, c.bytes, maxBytes)
		}
		_, _, kept := c.get(sha256.Sum256(fmt.Append(nil, i)), now)
		if tooBig := (cachedResult{columns: res.Columns, rows: enc}).bytes() > maxBytes/4; kept == tooBig {
			t.Fatalf("result %d (%d bytes): kept %v; want kept only up to a quarter of the bound", i, enc.bytes(), kept)
		}
	}
	if c.lru.Len() < 4 {
		t.Errorf("the cache keeps %d results; want several", c.lru.Len())
	}
}
