package ask_test

import (
	"testing"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/asktest"
)

func TestMemoryConversationStore(t *testing.T) {
	asktest.RunConversationStore(t, func(*testing.T) ask.ConversationStore { return ask.NewMemoryConversationStore() })
}

func TestMemoryApprovalStore(t *testing.T) {
	asktest.RunApprovalStore(t, func(*testing.T) ask.ApprovalStore { return ask.NewMemoryApprovalStore() })
}
