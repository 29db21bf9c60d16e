package httpserve

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// SetMemoryLimit sets the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) to limit, written as the GOMEMLIMIT
// environment variable is: a number of bytes with an optional unit B,
// KiB, MiB, GiB or TiB ("96MiB"), or "off" for none. An explicit
// GOMEMLIMIT wins: the runtime applied it at start, and it is kept. It
// returns the limit in effect, in bytes (math.MaxInt64 for none), and
// whether it came from GOMEMLIMIT.
//
// Near the limit the garbage collector runs more often instead of letting
// the heap grow to twice what is live (GOGC), so memory stays bounded
// under any mix of requests. The limit is soft: a program whose live
// memory passes it runs on, collecting often. It counts the memory the Go
// runtime manages, not the executable's own pages or memory a C library
// allocates.
func SetMemoryLimit(limit string) (int64, bool, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), true, nil
	}
	n, err := ParseMemoryLimit(limit)
	if err != nil {
		return debug.SetMemoryLimit(-1), false, err
	}
	debug.SetMemoryLimit(n)
	return n, false, nil
}

// CacheBytes is a bound for a process's caches (dataexec.CacheOptions.MaxBytes)
// under the Go runtime's soft memory limit: an eighth of it, or 0 (the
// cache's own default) without a limit. At a quarter, a full cache left
// the collector so little room under a 32 MiB limit that it ran every
// few calls (docs/benchmarks.md).
func CacheBytes() int64 {
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		return limit / 8
	}
	return 0
}

// ParseMemoryLimit reads a limit as [SetMemoryLimit] takes it: bytes with
// an optional unit B, KiB, MiB, GiB or TiB, or "off" (math.MaxInt64).
func ParseMemoryLimit(s string) (int64, error) {
	if s == "off" {
		return math.MaxInt64, nil
	}
	num, unit := s, int64(1)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = v, u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("memory limit %q: want bytes with an optional unit B, KiB, MiB, GiB or TiB (such as 96MiB), or off", s)
	}
	return n * unit, nil
}
