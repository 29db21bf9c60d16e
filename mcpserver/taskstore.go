package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// TaskStatus is the status of a task (the Tasks extension's, without
// input_required, which no askbi tool asks for).
type TaskStatus string

// Task statuses.
const (
	TaskWorking   TaskStatus = "working"
	TaskCompleted TaskStatus = "completed"
	TaskFailed    TaskStatus = "failed"
	TaskCancelled TaskStatus = "cancelled"
)

// Task is the record of a tool call that became a task: who started it,
// where it stands, and its outcome once it has one.
type Task struct {
	// ID is the task ID, 128 random bits: the client's only handle on it.
	ID string
	// Owner is the principal that started it (the server's key of a
	// team, user and credential). Only the same owner may read or cancel
	// it; to any other it does not exist.
	Owner string
	// Tool is the tool called.
	Tool   string
	Status TaskStatus
	// Message is the status message, safe for users.
	Message string
	// Result is the tool result's JSON, when Status is TaskCompleted: the
	// same bounded answer the call would have given.
	Result json.RawMessage
	// Error is the JSON-RPC error's JSON, when Status is TaskFailed.
	Error     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when the task and its result go: CreatedAt plus the
	// server's TaskOptions.TTL. A store answers NotFound for it from then
	// on, whether or not Purge ran.
	ExpiresAt time.Time
	// Heartbeat is when the instance running a working task last said it
	// still does (TaskStore.Beat).
	Heartbeat time.Time
}

// TaskStore keeps tasks where every instance of the server sees them, so
// that a client polling or cancelling through another instance finds its
// task. Implementations must be safe for concurrent use, across
// processes sharing the store too; tasktest.RunStore proves one. Times
// are kept to the microsecond at least.
type TaskStore interface {
	// Create stores t, a working task. It returns Conflict when t.ID
	// exists, and RateLimited, storing nothing, when t.Owner already has
	// perOwner tasks that have not expired at t.CreatedAt (or the store
	// keeps all it may): of concurrent creates for one owner, no more
	// than perOwner succeed.
	Create(ctx context.Context, t Task, perOwner int) error
	// Get returns task id of owner. It returns NotFound for an unknown
	// task, another owner's, and one expired at now.
	Get(ctx context.Context, id, owner string, now time.Time) (Task, error)
	// Finish records the outcome of working task t.ID: t.Status
	// (TaskCompleted with t.Result, or TaskFailed with t.Error),
	// t.Message and t.UpdatedAt. It returns Conflict, changing nothing,
	// when the task is no longer working (cancelled, or finished
	// already): of a finish and a cancel at once, exactly one takes
	// effect. NotFound when the task is gone.
	Finish(ctx context.Context, t Task) error
	// Cancel marks working task id of owner cancelled at at. NotFound as
	// for Get; a task no longer working is left as it is.
	Cancel(ctx context.Context, id, owner string, at time.Time) error
	// Beat records at as the heartbeat of task id while it is working,
	// and returns its status: anything but TaskWorking tells the
	// instance running it to stop. NotFound when it is gone or expired.
	Beat(ctx context.Context, id string, at time.Time) (TaskStatus, error)
	// Purge deletes the tasks expired at or before now, and returns how
	// many it deleted.
	Purge(ctx context.Context, now time.Time) (int, error)
}

// DefaultMemoryTasks bounds the tasks a MemoryTaskStore keeps by default.
const DefaultMemoryTasks = 64

// MemoryTaskStore is a TaskStore in this process's memory: tasks are
// seen by this instance only, and lost with it. It keeps at most its
// bound of unexpired tasks, so its memory is at most that many results
// (each within the server's response budget). It is safe for concurrent
// use.
type MemoryTaskStore struct {
	max   int
	mu    sync.Mutex
	tasks map[string]Task
}

// NewMemoryTaskStore returns an empty store that keeps at most max
// unexpired tasks (DefaultMemoryTasks when max is zero or less).
func NewMemoryTaskStore(max int) *MemoryTaskStore {
	if max <= 0 {
		max = DefaultMemoryTasks
	}
	return &MemoryTaskStore{max: max, tasks: map[string]Task{}}
}

func cloneTask(t Task) Task {
	t.Result, t.Error = slices.Clone(t.Result), slices.Clone(t.Error)
	return t
}

func (m *MemoryTaskStore) Create(_ context.Context, t Task, perOwner int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tasks[t.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "task exists")
	}
	n := 0
	for id, o := range m.tasks {
		switch {
		case !t.CreatedAt.Before(o.ExpiresAt):
			delete(m.tasks, id)
		case o.Owner == t.Owner:
			n++
		}
	}
	if n >= perOwner || len(m.tasks) >= m.max {
		return askbi.Errorf(askbi.RateLimited, "too many tasks are kept; wait for one to expire")
	}
	m.tasks[t.ID] = cloneTask(t)
	return nil
}

func (m *MemoryTaskStore) Get(_ context.Context, id, owner string, now time.Time) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.Owner != owner || !now.Before(t.ExpiresAt) {
		return Task{}, askbi.Errorf(askbi.NotFound, "task not found")
	}
	return cloneTask(t), nil
}

func (m *MemoryTaskStore) Finish(_ context.Context, t Task) error {
	if t.Status != TaskCompleted && t.Status != TaskFailed {
		return askbi.Errorf(askbi.InvalidArgument, "a task finishes completed or failed")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.tasks[t.ID]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "task not found")
	}
	if o.Status != TaskWorking {
		return askbi.Errorf(askbi.Conflict, "the task is %s", o.Status)
	}
	o.Status, o.Message, o.Result, o.Error, o.UpdatedAt = t.Status, t.Message, slices.Clone(t.Result), slices.Clone(t.Error), t.UpdatedAt
	m.tasks[t.ID] = o
	return nil
}

func (m *MemoryTaskStore) Cancel(_ context.Context, id, owner string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || t.Owner != owner || !at.Before(t.ExpiresAt) {
		return askbi.Errorf(askbi.NotFound, "task not found")
	}
	if t.Status == TaskWorking {
		t.Status, t.Message, t.UpdatedAt = TaskCancelled, cancelledMessage, at
		m.tasks[id] = t
	}
	return nil
}

func (m *MemoryTaskStore) Beat(_ context.Context, id string, at time.Time) (TaskStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tasks[id]
	if !ok || !at.Before(t.ExpiresAt) {
		return "", askbi.Errorf(askbi.NotFound, "task not found")
	}
	if t.Status == TaskWorking {
		t.Heartbeat = at
		m.tasks[id] = t
	}
	return t.Status, nil
}

func (m *MemoryTaskStore) Purge(_ context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, t := range m.tasks {
		if !now.Before(t.ExpiresAt) {
			delete(m.tasks, id)
			n++
		}
	}
	return n, nil
}

// cancelledMessage is a cancelled task's status message.
const cancelledMessage = "Cancelled by the client; the query was stopped."
