package httpserve_test

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/askbi/askbi/httpserve"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"96MiB", 96 << 20, true},
		{"1GiB", 1 << 30, true},
		{"512KiB", 512 << 10, true},
		{"2TiB", 2 << 40, true},
		{"1000B", 1000, true},
		{"123456", 123456, true},
		{"off", math.MaxInt64, true},
		{"", 0, false},
		{"96MB", 0, false},
		{"-1MiB", 0, false},
		{"1.5GiB", 0, false},
		{"9999999TiB", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := httpserve.ParseMemoryLimit(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

// TestSetMemoryLimit: the limit is applied, unless GOMEMLIMIT is set,
// which wins; a bad limit changes nothing.
func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	if n, env, err := httpserve.SetMemoryLimit("80MiB"); err != nil || env || n != 80<<20 || debug.SetMemoryLimit(-1) != 80<<20 {
		t.Errorf("SetMemoryLimit(80MiB) = %d, %v, %v; runtime limit %d; want 80 MiB applied", n, env, err, debug.SetMemoryLimit(-1))
	}
	if _, _, err := httpserve.SetMemoryLimit("lots"); err == nil || debug.SetMemoryLimit(-1) != 80<<20 {
		t.Errorf("SetMemoryLimit(lots) = %v, runtime limit %d; want an error and the limit unchanged", err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(200 << 20) // as the runtime applies GOMEMLIMIT=200MiB at start
	t.Setenv("GOMEMLIMIT", "200MiB")
	if n, env, err := httpserve.SetMemoryLimit("80MiB"); err != nil || !env || n != 200<<20 || debug.SetMemoryLimit(-1) != 200<<20 {
		t.Errorf("SetMemoryLimit(80MiB) under GOMEMLIMIT=200MiB = %d, %v, %v; want GOMEMLIMIT's 200 MiB kept", n, env, err)
	}
}

// TestCacheBytes: a cache bound is an eighth of the memory limit, and 0
// (the cache's own default) without one.
func TestCacheBytes(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	debug.SetMemoryLimit(32 << 20)
	if got := httpserve.CacheBytes(); got != 4<<20 {
		t.Errorf("under 32 MiB: %d; want 4 MiB", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := httpserve.CacheBytes(); got != 0 {
		t.Errorf("without a limit: %d; want 0", got)
	}
}
