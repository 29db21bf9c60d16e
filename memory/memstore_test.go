package memory_test

import (
	"testing"

	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/memory/memorytest"
)

func TestMemoryStore(t *testing.T) {
	memorytest.Run(t, func(*testing.T) memory.Store { return memory.NewMemoryStore() })
}
