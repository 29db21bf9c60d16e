package connresolve_test

import (
	"testing"

	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/connresolve/connresolvetest"
)

func TestMemoryStore(t *testing.T) {
	connresolvetest.Run(t, func(*testing.T) connresolve.Store { return connresolve.NewMemoryStore() })
}

func TestMemoryFlowStore(t *testing.T) {
	connresolvetest.RunFlows(t, func(*testing.T) connresolve.FlowStore { return connresolve.NewMemoryFlowStore() })
}
