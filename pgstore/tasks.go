package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/mcpserver"
)

// TaskStore is an [mcpserver.TaskStore] in PostgreSQL (migration 0018):
// every instance on the database reads, cancels and finishes the same
// tasks. A task's outcome and its cancel are conditional UPDATEs of a
// working row, so of the two exactly one takes effect; an owner's bound
// holds across processes under a transaction-scoped advisory lock on the
// owner.
type TaskStore struct {
	db *sqlx.DB
}

// NewTaskStore returns a [TaskStore] on a migrated database.
func NewTaskStore(db *sqlx.DB) *TaskStore { return &TaskStore{db: db} }

var _ mcpserver.TaskStore = (*TaskStore)(nil)

// taskLock is the advisory-lock class of an owner's task count.
const taskLock = 0x7461736b // "task"

type taskRow struct {
	ID        string    `db:"id"`
	Owner     string    `db:"owner"`
	Tool      string    `db:"tool"`
	Status    string    `db:"status"`
	Message   string    `db:"message"`
	Result    []byte    `db:"result"`
	Error     []byte    `db:"error"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
	ExpiresAt time.Time `db:"expires_at"`
	Heartbeat time.Time `db:"heartbeat_at"`
}

func (r taskRow) task() mcpserver.Task {
	return mcpserver.Task{ID: r.ID, Owner: r.Owner, Tool: r.Tool, Status: mcpserver.TaskStatus(r.Status), Message: r.Message,
		Result: r.Result, Error: r.Error, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		ExpiresAt: r.ExpiresAt.UTC(), Heartbeat: r.Heartbeat.UTC()}
}

const taskColumns = `id, owner, tool, status, message, result, error, created_at, updated_at, expires_at, heartbeat_at`

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// Create implements [mcpserver.TaskStore].
func (s *TaskStore) Create(ctx context.Context, t mcpserver.Task, perOwner int) error {
	const op = "pgstore.TaskStore.Create"
	return Transact(ctx, s.db, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, taskLock, t.Owner); err != nil {
			return internal(op, err)
		}
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM mcp_tasks WHERE owner = $1 AND expires_at > $2`, t.Owner, t.CreatedAt); err != nil {
			return internal(op, err)
		}
		if n >= perOwner {
			return askbi.Errorf(askbi.RateLimited, "too many tasks are kept; wait for one to expire")
		}
		return write(ctx, tx, op, askbi.Errorf(askbi.Conflict, "task exists"),
			`INSERT INTO mcp_tasks (`+taskColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			t.ID, t.Owner, t.Tool, string(t.Status), t.Message, nullBytes(t.Result), nullBytes(t.Error),
			t.CreatedAt, t.UpdatedAt, t.ExpiresAt, t.Heartbeat)
	})
}

// Get implements [mcpserver.TaskStore].
func (s *TaskStore) Get(ctx context.Context, id, owner string, now time.Time) (mcpserver.Task, error) {
	return getRow(ctx, s.db, "pgstore.TaskStore.Get", askbi.Errorf(askbi.NotFound, "task not found"), taskRow.task,
		`SELECT `+taskColumns+` FROM mcp_tasks WHERE id = $1 AND owner = $2 AND expires_at > $3`, id, owner, now)
}

// Finish implements [mcpserver.TaskStore].
func (s *TaskStore) Finish(ctx context.Context, t mcpserver.Task) error {
	const op = "pgstore.TaskStore.Finish"
	if t.Status != mcpserver.TaskCompleted && t.Status != mcpserver.TaskFailed {
		return askbi.Errorf(askbi.InvalidArgument, "a task finishes completed or failed")
	}
	err := execOne(ctx, s.db, op, errNoRow,
		`UPDATE mcp_tasks SET status = $2, message = $3, result = $4, error = $5, updated_at = $6 WHERE id = $1 AND status = 'working'`,
		t.ID, string(t.Status), t.Message, nullBytes(t.Result), nullBytes(t.Error), t.UpdatedAt)
	if !errors.Is(err, errNoRow) {
		return err
	}
	return s.why(ctx, op, t.ID)
}

// errNoRow says a conditional UPDATE touched no row.
var errNoRow = errors.New("no row")

// why is the error of a conditional UPDATE of task id that touched
// nothing: Conflict when the task is there, no longer working; NotFound
// when it is gone.
func (s *TaskStore) why(ctx context.Context, op, id string) error {
	var status string
	err := s.db.GetContext(ctx, &status, `SELECT status FROM mcp_tasks WHERE id = $1`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return askbi.Errorf(askbi.NotFound, "task not found")
	case err != nil:
		return internal(op, err)
	}
	return askbi.Errorf(askbi.Conflict, "the task is %s", status)
}

// Cancel implements [mcpserver.TaskStore].
func (s *TaskStore) Cancel(ctx context.Context, id, owner string, at time.Time) error {
	const op = "pgstore.TaskStore.Cancel"
	var found bool
	err := s.db.GetContext(ctx, &found, `WITH t AS (SELECT id, status FROM mcp_tasks WHERE id = $1 AND owner = $2 AND expires_at > $3 FOR UPDATE),
		u AS (UPDATE mcp_tasks SET status = 'cancelled', message = $4, updated_at = $3 FROM t WHERE mcp_tasks.id = t.id AND t.status = 'working')
		SELECT EXISTS (SELECT 1 FROM t)`, id, owner, at, cancelledMessage)
	if err != nil {
		return internal(op, err)
	}
	if !found {
		return askbi.Errorf(askbi.NotFound, "task not found")
	}
	return nil
}

// cancelledMessage is a cancelled task's status message, as
// mcpserver.MemoryTaskStore writes it.
const cancelledMessage = "Cancelled by the client; the query was stopped."

// Beat implements [mcpserver.TaskStore].
func (s *TaskStore) Beat(ctx context.Context, id string, at time.Time) (mcpserver.TaskStatus, error) {
	const op = "pgstore.TaskStore.Beat"
	var status string
	err := s.db.GetContext(ctx, &status, `WITH t AS (SELECT id, status FROM mcp_tasks WHERE id = $1 AND expires_at > $2),
		u AS (UPDATE mcp_tasks SET heartbeat_at = $2 FROM t WHERE mcp_tasks.id = t.id AND t.status = 'working')
		SELECT status FROM t`, id, at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", askbi.Errorf(askbi.NotFound, "task not found")
	}
	if err != nil {
		return "", internal(op, err)
	}
	return mcpserver.TaskStatus(status), nil
}

// Purge implements [mcpserver.TaskStore].
func (s *TaskStore) Purge(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_tasks WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, internal("pgstore.TaskStore.Purge", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
