package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/openai"
)

func Example() {
	// A stand-in for an OpenAI-compatible server such as vLLM, whose real
	// base URL would be like http://localhost:8000/v1.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, text := range []string{"Orders grew ", "12% in March."} {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", text)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	os.Setenv("EXAMPLE_LLM_KEY", "placeholder") // a local server may check no key

	p, err := openai.New("local-model", &openai.Options{
		BaseURL:   srv.URL + "/v1",
		APIKeyEnv: "EXAMPLE_LLM_KEY",
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
