package connresolve_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/connresolve/connresolvetest"
	"github.com/askbi/askbi/dataexec"
)

func TestMemoryStore(t *testing.T) {
	connresolvetest.Run(t, func(*testing.T) connresolve.Store { return connresolve.NewMemoryStore() })
}

func TestMemoryFlowStore(t *testing.T) {
	connresolvetest.RunFlows(t, func(*testing.T) connresolve.FlowStore { return connresolve.NewMemoryFlowStore() })
}

// TestRefreshOnceInProcess: two services on one in-memory store, as two
// instances on one database, refresh once (pgstore runs the same suite
// across two pools).
func TestRefreshOnceInProcess(t *testing.T) {
	connresolvetest.RunRefresh(t, func(*testing.T) [2]connresolvetest.Instance {
		store, leases := connresolve.NewMemoryStore(), &memLeases{held: map[string]int{}}
		return [2]connresolvetest.Instance{{Store: store, Leases: leases}, {Store: store, Leases: leases}}
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
