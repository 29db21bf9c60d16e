package mock

import (
	"unicode/utf8"

	"github.com/askbi/askbi/ask"
)

// The demo model's names, as ask.ModelInfo gives them: what its usage
// records and telemetry say.
const (
	ProviderName = "mock"
	ModelName    = "askbi-demo"
)

// ModelInfo implements [ask.ModelInfo].
func (p *Provider) ModelInfo() (provider, model string) { return ProviderName, ModelName }

// estimate is the usage the demo model reports for a reply to req: an
// estimate, as no tokenizer runs, of a token every four characters
// (the rule of thumb for English text) of what a model would read and
// write. From a conversation's second call on, the static prefix (the
// system prompt and the tools) counts as read from the prompt cache, as
// a real provider's would be. It makes budgets and the usage view work
// on the demo.
func estimate(req ask.ModelRequest, reply ask.ModelReply) ask.Usage {
	prefix := utf8.RuneCountInString(req.System)
	for _, t := range req.Tools {
		prefix += utf8.RuneCountInString(t.Name) + utf8.RuneCountInString(t.Description) + len(t.InputSchema)
	}
	in, repeated := prefix, false
	for _, m := range req.Messages {
		in += utf8.RuneCountInString(m.Text)
		for _, c := range m.ToolCalls {
			in += utf8.RuneCountInString(c.Name) + len(c.Arguments)
		}
		repeated = repeated || m.Role == ask.RoleAssistant
	}
	out := utf8.RuneCountInString(reply.Text)
	for _, c := range reply.ToolCalls {
		out += utf8.RuneCountInString(c.Name) + len(c.Arguments)
	}
	u := ask.Usage{InputTokens: tokens(in), OutputTokens: tokens(out)}
	if repeated {
		u.CachedInputTokens = tokens(prefix)
	}
	return u
}

// tokens is chars as tokens, four characters a token, rounded up.
func tokens(chars int) int64 { return int64(chars+3) / 4 }
