package main

import (
	"maps"

	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/usage"
)

// demoModelNote says, in the mock model's first answer and on the page,
// what answers and how to configure a real model.
const demoModelNote = "You are talking to the built-in demo model: it looks for your question's words in this workspace, charts the best match and says what it shows, with no AI behind it (it reads English only). " +
	"For a real model, start the server with -provider openai or -provider anthropic and -model NAME (the key from OPENAI_API_KEY or ANTHROPIC_API_KEY)."

// demoNote is the model note of -provider: the demo model's, or none.
func demoNote(cfg config) string {
	if cfg.provider == "mock" {
		return demoModelNote
	}
	return ""
}

// demoModelPrice is what the usage view charges for the demo model's
// estimated tokens: a made-up price, that of a small hosted model, so
// that the demo's costs and budgets show figures. Its tokens are an
// estimate too (package mock).
var demoModelPrice = usage.Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}

// demoPrices are -model-prices with the demo model's price, unless they
// name it.
func demoPrices(cfg config) usage.Prices {
	p := maps.Clone(cfg.prices)
	if p == nil {
		p = usage.Prices{}
	}
	if _, ok := p[mock.ModelName]; !ok {
		p[mock.ModelName] = demoModelPrice
	}
	return p
}
