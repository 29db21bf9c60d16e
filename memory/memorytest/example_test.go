package memorytest_test

import (
	"testing"

	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/memory/memorytest"
)

// A memory store's own tests run the suite; newStore gives each subtest
// a fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database. Run it with -race: it
// proves the owner's lock under concurrent calls.
func ExampleRun() {
	// func TestStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		memorytest.Run(t, func(*testing.T) memory.Store { return memory.NewMemoryStore() })
	}
}
