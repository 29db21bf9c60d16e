package connections_test

import (
	"testing"

	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connectionstest"
)

func TestMemoryStore(t *testing.T) {
	connectionstest.Run(t, func(*testing.T) connections.Store { return connections.NewMemoryStore() })
}
