package provider_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask/provider"
)

// TestNew: each name gives its provider; an unknown name is Unsupported;
// a missing model or key is InvalidArgument naming it, never the key;
// String names the key's variable and the host, never the key.
func TestNew(t *testing.T) {
	t.Setenv("ASKBI_TEST_PROVIDER_KEY", "sk-test-secret")
	for _, tc := range []struct {
		name   string
		c      provider.Config
		code   askbi.Code
		says   string // in the error's message
		string string
	}{
		{name: "mock", c: provider.Config{Name: "mock"}, string: "mock (deterministic, no network)"},
		{name: "openai", c: provider.Config{Name: "openai", Model: "local", BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "ASKBI_TEST_PROVIDER_KEY"},
			string: "openai local at 127.0.0.1:9 (key from $ASKBI_TEST_PROVIDER_KEY)"},
		{name: "anthropic", c: provider.Config{Name: "anthropic", Model: "claude-sonnet-4-5", APIKeyEnv: "ASKBI_TEST_PROVIDER_KEY"},
			string: "anthropic claude-sonnet-4-5 (key from $ASKBI_TEST_PROVIDER_KEY)"},
		{name: "unknown", c: provider.Config{Name: "gemini", Model: "x"}, code: askbi.Unsupported, says: `"gemini"`},
		{name: "no model", c: provider.Config{Name: "openai", APIKeyEnv: "ASKBI_TEST_PROVIDER_KEY"}, code: askbi.InvalidArgument, says: "model",
			string: "openai  (key from $ASKBI_TEST_PROVIDER_KEY)"},
		{name: "no key", c: provider.Config{Name: "anthropic", Model: "m", APIKeyEnv: "ASKBI_TEST_UNSET_KEY"}, code: askbi.InvalidArgument,
			says: "ASKBI_TEST_UNSET_KEY", string: "anthropic m (key from $ASKBI_TEST_UNSET_KEY)"},
		{name: "default key variable", c: provider.Config{Name: "openai", Model: "gpt-4o-mini"}, string: "openai gpt-4o-mini (key from $OPENAI_API_KEY)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := provider.New(tc.c)
			if tc.name == "default key variable" {
				err = nil // whether OPENAI_API_KEY is set here is not the test's
			} else if code := askbi.ErrorCode(err); code != tc.code {
				t.Fatalf("New: code %q (%v), want %q", code, err, tc.code)
			}
			if tc.code == "" && tc.name != "default key variable" && p == nil {
				t.Error("New returned no provider")
			}
			if msg := askbi.ErrorMessage(err); !strings.Contains(msg, tc.says) || strings.Contains(fmt.Sprint(err), "sk-test-secret") {
				t.Errorf("error %q: want one naming %s, never the key", msg, tc.says)
			}
			if tc.string != "" && tc.c.String() != tc.string {
				t.Errorf("String() = %q, want %q", tc.c.String(), tc.string)
			}
		})
	}
}
