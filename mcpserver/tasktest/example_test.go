package tasktest_test

import (
	"testing"

	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/tasktest"
)

// A task store's own tests run the suite; newStore gives each subtest a
// fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database (pgstore's TestTaskStore).
func ExampleRunStore() {
	// func TestTaskStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		tasktest.RunStore(t, func(*testing.T) mcpserver.TaskStore { return mcpserver.NewMemoryTaskStore(0) })
	}
}
