package connectionstest_test

import (
	"testing"

	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connectionstest"
)

// A connection store's own tests run the suite; newStore gives each case
// a fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database (pgstore's does). Run it
// with -race: it proves that concurrent Updates lose no change.
func ExampleRun() {
	// func TestStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		connectionstest.Run(t, func(*testing.T) connections.Store { return connections.NewMemoryStore() })
	}
}
