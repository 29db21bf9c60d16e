package openai

import (
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
type accumulator struct {
	text     strings.Builder
	calls    map[int64]*partialCall
	finished bool // a finish_reason arrived, so the reply is whole
}

type partialCall struct {
	id, name string
	args     strings.Builder
}

func (a *accumulator) add(chunk sdk.ChatCompletionChunk, onText func(string)) {
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue // only one choice is asked for
		}
		// A refusal is the model's answer to the user too.
		for _, s := range [...]string{c.Delta.Content, c.Delta.Refusal} {
			if s == "" {
				continue
			}
			a.text.WriteString(s)
			if onText != nil {
				onText(s)
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
			a.finished = true
		}
	}
}

// reply returns the assembled reply, its tool calls in index order.
func (a *accumulator) reply() (ask.ModelReply, error) {
	reply := ask.ModelReply{Text: a.text.String()}
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
