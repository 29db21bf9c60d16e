package connresolvetest_test

import (
	"testing"

	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/connresolve/connresolvetest"
)

// A connection store's own tests run the suite; newStore gives each case
// a fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database. Run it with -race: it
// proves that concurrent Updates lose no change.
func ExampleRun() {
	// func TestStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		connresolvetest.Run(t, func(*testing.T) connresolve.Store { return connresolve.NewMemoryStore() })
	}
}

// The store of started sign-ins has a suite of its own. Run it with
// -race too: of concurrent takes of one flow exactly one must win.
func ExampleRunFlows() {
	// func TestFlowStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		connresolvetest.RunFlows(t, func(*testing.T) connresolve.FlowStore { return connresolve.NewMemoryFlowStore() })
	}
}
