package mcpsource_test

import (
	"testing"

	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/dataexec/mcpsource/mcpsourcetest"
)

func TestMemoryStore(t *testing.T) {
	mcpsourcetest.Run(t, func(*testing.T) mcpsource.Store { return mcpsource.NewMemoryStore() })
}

func TestMemoryFlowStore(t *testing.T) {
	mcpsourcetest.RunFlows(t, func(*testing.T) mcpsource.FlowStore { return mcpsource.NewMemoryFlowStore() })
}
