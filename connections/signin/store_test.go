package signin_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connections/signin/signintest"
	"github.com/askbi/askbi/dataexec"
)

func TestMemoryFlowStore(t *testing.T) {
	signintest.Run(t, func(*testing.T) signin.FlowStore { return signin.NewMemoryFlowStore() })
}

// TestRefreshOnceInProcess: two services on one in-memory store, as two
// instances on one database, refresh once (pgstore runs the same suite
// across two pools).
func TestRefreshOnceInProcess(t *testing.T) {
	signintest.RunRefresh(t, func(*testing.T) [2]signintest.Instance {
		store, leases := connections.NewMemoryStore(), &memLeases{held: map[string]int{}}
		return [2]signintest.Instance{{Store: store, Leases: leases}, {Store: store, Leases: leases}}
	})
}

// memLeases is a dataexec.Leases in memory, for instances in one process.
type memLeases struct {
	mu   sync.Mutex
	held map[string]int
}

func (m *memLeases) Acquire(_ context.Context, slots []dataexec.Slot, _ time.Duration) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range slots {
		if m.held[s.Key] >= s.Max {
			return nil, &askbi.Error{Code: askbi.RateLimited, Message: "busy", Err: &dataexec.SlotFull{Key: s.Key}}
		}
	}
	for _, s := range slots {
		m.held[s.Key]++
	}
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, s := range slots {
			m.held[s.Key]--
		}
	}, nil
}
