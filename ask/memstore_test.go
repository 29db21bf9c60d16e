package ask_test

import (
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/asktest"
)

func newMemoryStores(*testing.T) ask.Stores { return ask.NewMemoryStores() }

func TestMemoryConversationStore(t *testing.T) { asktest.RunConversationStore(t, newMemoryStores) }
func TestMemoryTurnStore(t *testing.T)         { asktest.RunTurnStore(t, newMemoryStores) }
func TestMemoryContextStore(t *testing.T)      { asktest.RunContextStore(t, newMemoryStores) }
func TestMemoryToolRunStore(t *testing.T)      { asktest.RunToolRunStore(t, newMemoryStores) }
func TestMemoryApprovalStore(t *testing.T)     { asktest.RunApprovalStore(t, newMemoryStores) }
func TestMemoryReceiptStore(t *testing.T)      { asktest.RunReceiptStore(t, newMemoryStores) }

// TestNewNeedsEveryStore: New refuses Stores with a nil field at once,
// naming it, rather than failing deep inside a later turn.
func TestNewNeedsEveryStore(t *testing.T) {
	tests := []struct {
		field string
		clear func(*ask.Stores)
	}{
		{"Conversations", func(s *ask.Stores) { s.Conversations = nil }},
		{"Turns", func(s *ask.Stores) { s.Turns = nil }},
		{"Context", func(s *ask.Stores) { s.Context = nil }},
		{"ToolRuns", func(s *ask.Stores) { s.ToolRuns = nil }},
		{"Approvals", func(s *ask.Stores) { s.Approvals = nil }},
		{"Receipts", func(s *ask.Stores) { s.Receipts = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			s := ask.NewMemoryStores()
			tt.clear(&s)
			defer func() {
				want := "ask.New: Stores." + tt.field + " is nil"
				if got := recover(); got != want {
					t.Errorf("New panicked with %v, want %q", got, want)
				}
			}()
			ask.New(nil, nil, nil, s, nil, nil)
		})
	}
	ask.New(nil, nil, nil, ask.NewMemoryStores(), nil, nil) // every field set: no panic
}
