package usage_test

import (
	"testing"

	"github.com/askbi/askbi/usage"
	"github.com/askbi/askbi/usage/usagetest"
)

func TestMemoryLedger(t *testing.T) {
	usagetest.RunLedger(t, func(*testing.T) usage.Ledger { return usage.NewMemoryStore(nil) })
}

func TestMemoryBudgets(t *testing.T) {
	usagetest.RunBudgets(t, func(*testing.T) usage.Budgets { return usage.NewMemoryStore(nil) })
}
