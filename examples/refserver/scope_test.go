package main

import (
	"strings"
	"testing"

	"github.com/askbi/askbi/ask"
)

// TestDemoScopedDataset: the demo workspace's scoped dataset shows its
// scope where it is selected, and the mock model, asked a broader
// question, names the scope and offers the unscoped dataset; the same
// question with the scope answers.
func TestDemoScopedDataset(t *testing.T) {
	ta := MustApp(t, nil)
	alice := ta.session(t, "alice")
	conv := ta.MustConversation(t, alice)
	path := "/ai/conversations/" + conv + "/messages"
	sel := []map[string]string{{"entity_type": "dataset", "id": "ds_signups_eu"}}
	events := ta.MustTurn(t, path, alice, map[string]any{"message": "show signups by country", "context": sel})
	if info := events[0].Context[0].Metadata["info"]; !strings.HasSuffix(info, "· Scope: country in (DE, FR)") {
		t.Errorf("context info line %q", info)
	}
	text, previews := "", 0
	for _, ev := range events {
		if ev.Type == ask.EventMessageCompleted {
			text += ev.Text
		}
		if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "create_chart_preview" {
			previews++
		}
	}
	if previews != 0 || !strings.Contains(text, "country in (DE, FR)") || !strings.Contains(text, "Signups by country") {
		t.Errorf("broader request: %d previews, answer %q", previews, text)
	}
	events = ta.MustTurn(t, path, alice, map[string]any{"message": "show signups by country for DE and FR"})
	previews = 0
	for _, ev := range events {
		if ev.Type == ask.EventToolCompleted && ev.Tool.Name == "create_chart_preview" {
			previews++
		}
	}
	if previews != 1 {
		t.Errorf("scoped request made %d previews, want 1: %+v", previews, events)
	}
}
