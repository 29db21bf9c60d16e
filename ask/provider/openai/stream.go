package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// accumulator assembles a streamed reply: the text of the one choice asked
// for, and its tool calls, whose ID and name come in their first delta and
// whose arguments are split over many deltas, interleaved by index.
//
// The model's private reasoning is kept apart and never streamed: the
// reasoning_content (DeepSeek, vLLM, SGLang) and reasoning (OpenRouter,
// Ollama) deltas, and a <think> block that leads the content (a reasoning
// model served without a reasoning parser). Content that may still open
// or close that block is held back until it is known.
type accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	place     place  // where the content is, for the leading <think> block
	held      string // content held back while it may open or close the block
	calls     map[int64]*partialCall
	finished  bool   // a finish_reason arrived, so the reply is whole
	finish    string // that finish_reason
	usage     ask.Usage
}

// place is where streamed content is relative to a leading <think> block.
type place int

const (
	atStart    place = iota // nothing but whitespace yet: a block may open
	inThinking              // inside the block: reasoning
	afterBlock              // just after it: whitespace before the answer
	inText                  // the answer
)

const (
	openThink  = "<think>"
	closeThink = "</think>"
)

// reasoningFields are the delta fields OpenAI-compatible servers stream
// reasoning in.
var reasoningFields = [...]string{"reasoning_content", "reasoning"}

type partialCall struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(chunk sdk.ChatCompletionChunk, onText func(string)) {
	if u := chunk.Usage; chunk.JSON.Usage.Valid() {
		// The last chunk's, asked for with stream_options.include_usage;
		// a server that does not report it leaves the usage zero.
		a.usage = ask.Usage{InputTokens: u.PromptTokens, CachedInputTokens: u.PromptTokensDetails.CachedTokens,
			CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens, OutputTokens: u.CompletionTokens}
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue // only one choice is asked for
		}
		for _, f := range reasoningFields {
			var r string
			if raw := c.Delta.JSON.ExtraFields[f].Raw(); raw != "" && json.Unmarshal([]byte(raw), &r) == nil {
				a.reasoning.WriteString(r)
			}
		}
		// A refusal is the model's answer to the user too.
		for _, s := range [...]string{c.Delta.Content, c.Delta.Refusal} {
			if s != "" {
				a.content(s, onText)
			}
		}
		for _, d := range c.Delta.ToolCalls {
			if a.calls == nil {
				a.calls = map[int64]*partialCall{}
			}
			pc := a.calls[d.Index]
			if pc == nil {
				pc = &partialCall{}
				a.calls[d.Index] = pc
			}
			// Some servers repeat the ID and name in every delta.
			if pc.id == "" {
				pc.id = d.ID
			}
			if pc.name == "" {
				pc.name = d.Function.Name
			}
			pc.args.WriteString(d.Function.Arguments)
		}
		if c.FinishReason != "" {
			a.finished, a.finish = true, c.FinishReason
		}
	}
}

// content takes a piece of the reply's content: reasoning while in a
// leading <think> block, text otherwise.
func (a *accumulator) content(s string, onText func(string)) {
	switch a.place {
	case atStart:
		a.held += s
		lead := strings.TrimLeft(a.held, " \t\r\n")
		switch {
		case strings.HasPrefix(lead, openThink):
			a.place, a.held = inThinking, ""
			a.content(lead[len(openThink):], onText)
		case !strings.HasPrefix(openThink, lead):
			a.place = inText
			held := a.held
			a.held = ""
			a.emit(held, onText)
		}
	case inThinking:
		a.held += s
		if i := strings.Index(a.held, closeThink); i >= 0 {
			a.reasoning.WriteString(a.held[:i])
			rest := a.held[i+len(closeThink):]
			a.place, a.held = afterBlock, ""
			a.content(rest, onText)
			return
		}
		keep := openSuffix(a.held, closeThink)
		a.reasoning.WriteString(a.held[:len(a.held)-keep])
		a.held = a.held[len(a.held)-keep:]
	case afterBlock:
		if s = strings.TrimLeft(s, " \t\r\n"); s != "" {
			a.place = inText
			a.emit(s, onText)
		}
	case inText:
		a.emit(s, onText)
	}
}

// openSuffix is the length of the longest end of s that begins tag.
func openSuffix(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

func (a *accumulator) emit(s string, onText func(string)) {
	if s == "" {
		return
	}
	a.text.WriteString(s)
	if onText != nil {
		onText(s)
	}
}

// end releases what content was held back when the reply ended: text
// that only began like a <think> tag, or the end of an unclosed block.
func (a *accumulator) end(onText func(string)) {
	held := a.held
	a.held = ""
	switch a.place {
	case atStart:
		a.emit(held, onText)
	case inThinking:
		a.reasoning.WriteString(held)
	}
}

// reply returns the assembled reply, its tool calls in index order.
func (a *accumulator) reply() (ask.ModelReply, error) {
	reply := ask.ModelReply{Text: a.text.String(), Reasoning: a.reasoning.String(), Usage: a.usage, FinishReason: a.finish}
	for _, i := range slices.Sorted(maps.Keys(a.calls)) {
		pc := a.calls[i]
		if pc.name == "" {
			return ask.ModelReply{}, &askbi.Error{Code: askbi.InvalidResult, Op: op, Message: wire.MsgToolName,
				Err: fmt.Errorf("openai: tool call %d has no name", i)}
		}
		args, ok := wire.Object([]byte(pc.args.String()))
		if !ok {
			return ask.ModelReply{}, &askbi.Error{Code: askbi.InvalidResult, Op: op, Message: wire.MsgToolArgs,
				Err: fmt.Errorf("openai: the arguments of tool call %d (%s) are not a JSON object", i, pc.name)}
		}
		id := pc.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i) // some servers send none
		}
		reply.ToolCalls = append(reply.ToolCalls, ask.ToolCall{ID: id, Name: pc.name, Arguments: args})
	}
	return reply, nil
}
