// Package provider builds the chat model a host's configuration names:
// "mock" (deterministic, no network), "openai" (OpenAI and
// OpenAI-compatible servers such as vLLM or llama.cpp) or "anthropic".
// It is the switch every host with a -provider flag would write again;
// a host that always uses one provider calls its package directly.
//
//	c := provider.Config{Name: "openai", Model: "gpt-4o-mini"}
//	model, err := provider.New(c)
//	switch {
//	case askbi.ErrorCode(err) == askbi.Unsupported:
//		log.Fatal(err) // not a provider name
//	case err != nil:
//		log.Print("the assistant is off: ", err) // no model name, no key
//	}
//	log.Print("model: ", c) // openai gpt-4o-mini (key from $OPENAI_API_KEY)
package provider

import (
	"fmt"
	"net/url"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/anthropic"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/ask/provider/openai"
)

// Config names a provider and its model.
type Config struct {
	// Name is "mock", "openai" or "anthropic".
	Name string
	// Model is the model name, e.g. gpt-4o-mini or claude-sonnet-4-5;
	// mock has none.
	Model string
	// BaseURL is the API root, e.g. http://localhost:8000/v1 for vLLM.
	// Default: the provider's own.
	BaseURL string
	// APIKeyEnv names the environment variable holding the API key.
	// Default openai.DefaultAPIKeyEnv or anthropic.DefaultAPIKeyEnv.
	APIKeyEnv string
	// Images says the openai model reads images (a vision model such as
	// gpt-4o); anthropic models always do.
	Images bool
	// MockDelay is the mock model's pause before each streamed word
	// (mock.Provider.Delay), so its text arrives as a model's does.
	// Default 0: at once.
	MockDelay time.Duration
	// MockIntro leads the mock model's first answer in a conversation
	// (mock.Provider.Intro): the host says there that this is a demo
	// model and how to configure a real one. Default: none.
	MockIntro string
}

// New returns the provider c names. A Name that is not a provider is
// Unsupported; a configuration that cannot work (no Model, no key in the
// environment, a bad BaseURL) is InvalidArgument naming what is missing,
// never the key, so a host may keep serving with the assistant off.
func New(c Config) (ask.Provider, error) {
	var p ask.Provider
	var err error
	switch c.Name {
	case "mock":
		return &mock.Provider{Delay: c.MockDelay, Intro: c.MockIntro}, nil
	case "openai":
		p, err = openai.New(c.Model, &openai.Options{BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, Images: c.Images})
	case "anthropic":
		p, err = anthropic.New(c.Model, &anthropic.Options{BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv})
	default:
		return nil, askbi.Errorf(askbi.Unsupported, "provider %q: must be mock, openai or anthropic", c.Name)
	}
	if c.Model == "" {
		return nil, askbi.Errorf(askbi.InvalidArgument, "%s needs a model name", c.Name)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// String says which model c uses, where, and which environment variable
// holds its key (never the key): "openai gpt-4o-mini at
// localhost:8000 (key from $OPENAI_API_KEY)".
func (c Config) String() string {
	env := c.APIKeyEnv
	switch {
	case c.Name == "mock":
		return "mock (deterministic, no network)"
	case env == "" && c.Name == "openai":
		env = openai.DefaultAPIKeyEnv
	case env == "" && c.Name == "anthropic":
		env = anthropic.DefaultAPIKeyEnv
	case c.Name != "openai" && c.Name != "anthropic":
		return c.Name + " (not a provider)"
	}
	where := ""
	if u, err := url.Parse(c.BaseURL); err == nil && u.Host != "" {
		where = " at " + u.Host
	}
	return fmt.Sprintf("%s %s%s (key from $%s)", c.Name, c.Model, where, env)
}
