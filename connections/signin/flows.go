package signin

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/seal"
)

// Flow is one started OAuth sign-in, kept from [Service.StartOAuth] to
// its callback. What the callback needs (the PKCE verifier, the client
// registration, the authorization server's endpoints) is sealed in
// Secret; the rest says whose sign-in it is.
type Flow struct {
	ID             string
	ConnectionID   string
	TeamID         string
	UserID         string
	ConversationID string // "" when not started from a conversation
	Secret         seal.Box
	CreatedAt      time.Time
	ExpiresAt      time.Time
}

// FlowStore keeps started sign-ins. A flow is used once: TakeFlow removes
// it in the same step that returns it, so of two callbacks carrying the
// same state (a replay, a double click) one gets the flow and the other
// NotFound, also across processes sharing the store.
// [Service.CompleteOAuth] takes it right before the code exchange, and
// puts it back with CreateFlow when the exchange failed without a
// definite answer (the authorization server unreachable or busy), so
// the same callback can be tried again. Implementations must be safe
// for concurrent use; signintest.Run proves one.
type FlowStore interface {
	// CreateFlow stores f. Conflict when its ID exists; a flow that was
	// taken may be created again (put back).
	CreateFlow(ctx context.Context, f Flow) error
	// TakeFlow removes flow id and returns it, expired or not (the caller
	// decides). NotFound when there is none (never created, taken, or
	// purged).
	TakeFlow(ctx context.Context, id string) (Flow, error)
	// PurgeFlows removes the flows that expired before t and returns how
	// many.
	PurgeFlows(ctx context.Context, t time.Time) (int, error)
}

// MemoryFlowStore is an in-memory [FlowStore] for tests and the embedded
// default: one process only. It is safe for concurrent use.
type MemoryFlowStore struct {
	mu    sync.Mutex
	flows map[string]Flow
}

// NewMemoryFlowStore returns an empty store.
func NewMemoryFlowStore() *MemoryFlowStore { return &MemoryFlowStore{flows: map[string]Flow{}} }

var _ FlowStore = (*MemoryFlowStore)(nil)

// CreateFlow implements [FlowStore].
func (m *MemoryFlowStore) CreateFlow(_ context.Context, f Flow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.flows[f.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "flow already exists")
	}
	m.flows[f.ID] = cloneFlow(f)
	return nil
}

// TakeFlow implements [FlowStore].
func (m *MemoryFlowStore) TakeFlow(_ context.Context, id string) (Flow, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.flows[id]
	if !ok {
		return Flow{}, askbi.Errorf(askbi.NotFound, "flow not found")
	}
	delete(m.flows, id)
	return cloneFlow(f), nil
}

// PurgeFlows implements [FlowStore].
func (m *MemoryFlowStore) PurgeFlows(_ context.Context, t time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, f := range m.flows {
		if f.ExpiresAt.Before(t) {
			delete(m.flows, id)
			n++
		}
	}
	return n, nil
}

func cloneFlow(f Flow) Flow {
	f.Secret = seal.Box{KeyID: f.Secret.KeyID, Nonce: slices.Clone(f.Secret.Nonce), Ciphertext: slices.Clone(f.Secret.Ciphertext)}
	return f
}
