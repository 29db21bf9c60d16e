package anthropic_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/providertest"
)

// TestCompleteImages: a user message's images go out as base64 image
// blocks ahead of its text, as the server receives them; an assistant
// message's images are dropped.
func TestCompleteImages(t *testing.T) {
	p, srv := providertest.MustProvider(t, wire, stream(messageStart(), textStart(0), textDelta(0, "A bar chart."), blockStop(0), messageDelta("end_turn"), messageStop()), providertest.Options{})
	if !p.ReadsImages() {
		t.Error("ReadsImages = false")
	}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	req := ask.ModelRequest{Messages: []ask.Message{
		{Role: ask.RoleUser, Text: "first"},
		{Role: ask.RoleAssistant, Text: "Seen.", Images: []ask.Image{{MediaType: "image/png", Data: png}}},
		{Role: ask.RoleUser, Text: "What is this?", Images: []ask.Image{{MediaType: "image/png", Data: png}, {MediaType: "image/webp", Data: []byte("RIFF")}}},
	}}
	if _, err := providertest.Complete(t, context.Background(), p, req, nil); err != nil {
		t.Fatal(err)
	}
	image := func(typ, data string) any {
		return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": typ, "data": data}}
	}
	want := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "first"}}},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Seen."}}},
		map[string]any{"role": "user", "content": []any{
			image("image/png", "iVBORw0KGgpmYWtl"),
			image("image/webp", "UklGRg=="),
			map[string]any{"type": "text", "text": "What is this?"},
		}},
	}
	if diff := cmp.Diff(want, srv.Body(0)["messages"]); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
}
