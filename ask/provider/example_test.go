package provider_test

import (
	"fmt"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask/provider"
)

func Example() {
	for _, c := range []provider.Config{
		{Name: "mock"},
		{Name: "openai", Model: "gpt-4o-mini", BaseURL: "http://localhost:8000/v1", APIKeyEnv: "ASKBI_EXAMPLE_UNSET_KEY"},
		{Name: "gemini"},
	} {
		if _, err := provider.New(c); err != nil {
			fmt.Printf("%s: %s\n", c, askbi.ErrorCode(err))
		} else {
			fmt.Printf("%s: ready\n", c)
		}
	}
	// Output:
	// mock (deterministic, no network): ready
	// openai gpt-4o-mini at localhost:8000 (key from $ASKBI_EXAMPLE_UNSET_KEY): invalid_argument
	// gemini (not a provider): unsupported
}
