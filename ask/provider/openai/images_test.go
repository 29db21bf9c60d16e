package openai_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/providertest"
	"github.com/askbi/askbi/ask/provider/openai"
)

// TestCompleteImages: a user message's images go out as image_url parts
// with base64 data URLs after its text, as the server receives them; an
// assistant message's images are dropped.
func TestCompleteImages(t *testing.T) {
	images := func(o *openai.Options) { o.Images = true }
	p, srv := providertest.MustProvider(t, wire, stream(chunk(`{"content":"A bar chart."}`, ""), chunk(`{}`, "stop")), providertest.Options{}, images)
	if !p.ReadsImages() {
		t.Error("ReadsImages = false with Options.Images")
	}
	png := []byte("\x89PNG\r\n\x1a\nfake")
	req := ask.ModelRequest{Messages: []ask.Message{
		{Role: ask.RoleUser, Text: "first", Images: []ask.Image{{MediaType: "image/gif", Data: []byte("GIF89a")}}},
		{Role: ask.RoleAssistant, Text: "Seen.", Images: []ask.Image{{MediaType: "image/png", Data: png}}},
		{Role: ask.RoleUser, Text: "<ATTACHED-FILE ...>[image 1 of this message]</ATTACHED-FILE>\nWhat is this?", Images: []ask.Image{{MediaType: "image/png", Data: png}}},
	}}
	if _, err := providertest.Complete(t, context.Background(), p, req, nil); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "first"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/gif;base64,R0lGODlh"}},
		}},
		map[string]any{"role": "assistant", "content": "Seen."},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<ATTACHED-FILE ...>[image 1 of this message]</ATTACHED-FILE>\nWhat is this?"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgpmYWtl"}},
		}},
	}
	if diff := cmp.Diff(want, srv.Body(0)["messages"]); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
}

func TestTextOnlyByDefault(t *testing.T) {
	p, _ := providertest.MustProvider(t, wire, stream(), providertest.Options{})
	if p.ReadsImages() {
		t.Error("ReadsImages = true without Options.Images")
	}
}
