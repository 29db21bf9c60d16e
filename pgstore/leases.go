package pgstore

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
)

// Leases is a [dataexec.Leases] in PostgreSQL: concurrency slots in one
// table for every instance on the database, a row per slot of each key,
// taken in one statement under the keys' advisory locks and held under a
// lease, so the slots of an instance that died expire. Releasing frees
// them in the background. Takes and releases update the rows in place,
// so a busy key costs the same however long the server runs
// (BenchmarkLeases). It is safe for concurrent use.
type Leases struct {
	db *sqlx.DB
}

// NewLeases returns Leases on a migrated database.
func NewLeases(db *sqlx.DB) *Leases { return &Leases{db: db} }

var _ dataexec.Leases = (*Leases)(nil)

// Acquire implements [dataexec.Leases].
func (l *Leases) Acquire(ctx context.Context, slots []dataexec.Slot, ttl time.Duration) (func(), error) {
	slots = slices.Clone(slots)
	slices.SortFunc(slots, func(a, b dataexec.Slot) int { return strings.Compare(a.Key, b.Key) })
	keys, maxes := make(pq.StringArray, len(slots)), make(pq.Int64Array, len(slots))
	for i, s := range slots {
		keys[i], maxes[i] = s.Key, int64(s.Max)
	}
	holder := rand.Text()
	var full string
	if err := l.db.GetContext(ctx, &full, `SELECT askbi_take_slots($1, $2, $3, $4)`, keys, maxes, holder, ttl.Seconds()); err != nil {
		if ctx.Err() != nil {
			return nil, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
		}
		return nil, &askbi.Error{Code: askbi.Unavailable, Op: "pgstore.Leases.Acquire", Message: "the shared concurrency slots cannot be reached", Err: err}
	}
	if full != "" {
		return nil, &askbi.Error{Code: askbi.RateLimited, Message: "too much work is running; try again in a moment", Err: &dataexec.SlotFull{Key: full}}
	}
	return func() {
		// Should this fail, the lease expires on its own.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l.db.ExecContext(ctx, `UPDATE concurrency_slots SET holder = NULL, expires_at = NULL WHERE key = ANY ($1) AND holder = $2`, keys, holder)
		}()
	}, nil
}
