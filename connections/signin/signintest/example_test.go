package signintest_test

import (
	"testing"

	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connections/signin/signintest"
)

// The store of started sign-ins has a suite of its own. Run it with
// -race: of concurrent takes of one flow exactly one must win.
func ExampleRun() {
	// func TestFlowStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		signintest.Run(t, func(*testing.T) signin.FlowStore { return signin.NewMemoryFlowStore() })
	}
}
