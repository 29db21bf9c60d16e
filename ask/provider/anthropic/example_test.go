package anthropic_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/anthropic"
)

func Example() {
	// A stand-in for the Messages API.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n")
		io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for _, text := range []string{"Orders grew ", "12% in March."} {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
		}
		io.WriteString(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n")
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()
	os.Setenv("EXAMPLE_ANTHROPIC_KEY", "placeholder")

	p, err := anthropic.New("claude-sonnet-4-5", &anthropic.Options{
		BaseURL:   srv.URL,
		APIKeyEnv: "EXAMPLE_ANTHROPIC_KEY",
		MaxTokens: 2048,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, err := p.Complete(context.Background(), ask.ModelRequest{
		System:   "You answer questions about the selected dashboard.",
		Messages: []ask.Message{{Role: ask.RoleUser, Text: "How did orders do in March?"}},
	}, func(delta string) { fmt.Printf("delta %q\n", delta) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Text)
	// Output:
	// delta "Orders grew "
	// delta "12% in March."
	// Orders grew 12% in March.
}
