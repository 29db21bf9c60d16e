// Package proccpu reads CPU time for the benchmarks: this process's
// (getrusage), another process's and a local PostgreSQL's (/proc).
package proccpu

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc's CPU times.
const userHZ = 100

// Self is this process's user and system CPU time.
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Of is process pid's user and system CPU time; with reaped, its exited
// children's too. It is 0 when /proc cannot be read.
func Of(pid int, reaped bool) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime is field 14.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	sum := func(idx ...int) (n int64) {
		for _, k := range idx {
			if k-3 < len(fields) {
				v, _ := strconv.ParseInt(fields[k-3], 10, 64)
				n += v
			}
		}
		return n
	}
	ticks := sum(14, 15)
	if reaped {
		ticks = sum(14, 15, 16, 17)
	}
	return time.Duration(ticks) * (time.Second / userHZ)
}

// Queryer is a *sql.DB, a *sqlx.DB or a connection of either.
type Queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Postgres returns a reading of the CPU time of the PostgreSQL db is
// connected to: its postmaster's own and its exited children's, plus its
// live children's. It fails when that PostgreSQL is not a local process
// this user can read.
func Postgres(ctx context.Context, db Queryer) (func() time.Duration, error) {
	var backend int
	if err := db.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return nil, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", backend))
	if err != nil {
		return nil, err
	}
	postmaster := 0
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			postmaster, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if postmaster == 0 {
		return nil, fmt.Errorf("proccpu: no parent of PostgreSQL backend %d", backend)
	}
	return func() time.Duration {
		total := Of(postmaster, true)
		children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", postmaster, postmaster))
		for f := range strings.FieldsSeq(string(children)) {
			pid, _ := strconv.Atoi(f)
			total += Of(pid, false)
		}
		return total
	}, nil
}
