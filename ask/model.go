package ask

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi/usage"
)

// Role is who wrote a model message.
type Role string

// Message roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one provider-neutral model message.
type Message struct {
	Role Role `json:"role"`
	// Text is the message text. For a tool message it is the tool's output
	// as the model may see it, already filtered and wrapped as untrusted
	// data.
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Images are a user message's attached images, in the order its
	// <ATTACHED-FILE> blocks name them. Providers send them as image parts
	// of user messages only and drop them from any other.
	Images []Image `json:"images,omitempty"`
}

// ToolCall is one tool call proposed by the model.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a JSON object
}

// ToolSpec is a tool as the model sees it.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // a JSON Schema object
}

// ModelRequest is one call to a model.
type ModelRequest struct {
	// System holds the product's instructions. Untrusted text (context
	// labels, memory, tool data) never goes here.
	System   string     `json:"system"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// MaxTokens caps the reply; zero means the provider's default.
	MaxTokens int `json:"max_tokens,omitempty"`
}

// ModelReply is a model's whole answer to one request.
type ModelReply struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reasoning is the model's private reasoning, which a provider keeps
	// apart from Text: Anthropic's thinking blocks, an OpenAI-compatible
	// server's reasoning (reasoning_content or reasoning, or a <think>
	// block that leads the content). The assistant drops it: it is never
	// streamed, saved, shown, or sent back to the model (seed 000: Ask
	// shows a safe work summary, not hidden reasoning). It is never
	// serialized either.
	Reasoning string `json:"-"`
	// Usage is what the call cost, as the provider reported it.
	Usage Usage `json:"usage"`
	// FinishReason is why the model stopped, as the provider said it
	// (OpenAI's finish_reason "stop" or "tool_calls", Anthropic's
	// stop_reason "end_turn" or "tool_use"): for telemetry
	// (gen_ai.response.finish_reasons). "" when it said nothing. It is
	// not serialized: a recorded transcript replays without it.
	FinishReason string `json:"-"`
}

// Usage is the tokens of one model call, or of a turn's calls summed, as
// the provider reported them: zero where it reported nothing (an
// OpenAI-compatible server that ignores stream_options, say). It is
// [usage.Tokens], the usage records' own, defined once.
type Usage = usage.Tokens

// ModelInfo is a [Provider] that names itself, for the usage records
// (usage.Charge) and telemetry (the GenAI semantic conventions'
// gen_ai.provider.name and gen_ai.request.model): provider as those
// conventions name it ("openai", "anthropic"), model as the provider
// does ("gpt-4o-mini"). A provider without it is recorded as "unknown".
type ModelInfo interface {
	ModelInfo() (provider, model string)
}

// modelInfo is p's provider and model names, "" where it gives none.
func modelInfo(p Provider) (provider, model string) {
	if mi, ok := p.(ModelInfo); ok {
		return mi.ModelInfo()
	}
	return "", ""
}

// Provider is a chat model. Complete streams text deltas to onText as they
// arrive (onText may be nil), never the model's reasoning, and returns the
// whole reply, with any tool calls assembled from their streamed parts
// and the reasoning apart (ModelReply.Reasoning).
//
// Errors carry askbi codes and safe messages only; a provider's error body
// never reaches the message: Timeout when ctx's deadline passed or the
// provider timed out, Unavailable when the provider failed or could not be
// reached, RateLimited when it throttled us, InvalidResult when the reply
// could not be understood (for example tool arguments that are not a JSON
// object). A cancelled ctx stops the call. Implementations must be safe for
// concurrent use.
type Provider interface {
	Complete(ctx context.Context, req ModelRequest, onText func(delta string)) (ModelReply, error)
}
