package asktest_test

import (
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/asktest"
)

// The stores' own tests run one suite per interface, each test on the
// same newStores. The stores of one ask.Stores share state (a turn's
// conversation, a receipt's approval), so newStores returns a whole,
// empty set: here the in-memory stores; a SQL adapter returns its stores
// on one fresh, migrated database.
func Example() {
	newStores := func(*testing.T) ask.Stores { return ask.NewMemoryStores() }

	// In the stores' package, func TestConversationStore(t *testing.T)
	// and the other five:
	_ = func(t *testing.T) { asktest.RunConversationStore(t, newStores) }
	_ = func(t *testing.T) { asktest.RunTurnStore(t, newStores) }
	_ = func(t *testing.T) { asktest.RunContextStore(t, newStores) }
	_ = func(t *testing.T) { asktest.RunToolRunStore(t, newStores) }
	_ = func(t *testing.T) { asktest.RunApprovalStore(t, newStores) }
	_ = func(t *testing.T) { asktest.RunReceiptStore(t, newStores) }
}
