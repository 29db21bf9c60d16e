package ask

import (
	"context"
	"encoding/json"
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
}

// Usage is the tokens of one model call, or of a turn's calls summed, as
// the provider reported them: zero where it reported nothing (an
// OpenAI-compatible server that ignores stream_options, say).
type Usage struct {
	// InputTokens are every input token, those read from or written to
	// the provider's prompt cache included.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens are the input tokens read from the prompt cache:
	// the static prefix (system prompt and tools) of a repeated request.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// CacheWriteTokens are the input tokens written to the prompt cache
	// (Anthropic reports them; OpenAI caches without a charge).
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.InputTokens += v.InputTokens
	u.CachedInputTokens += v.CachedInputTokens
	u.CacheWriteTokens += v.CacheWriteTokens
	u.OutputTokens += v.OutputTokens
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
