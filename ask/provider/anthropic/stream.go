package anthropic

import (
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// accumulator assembles a streamed message: the text of its text blocks
// and its tool_use blocks, whose ID and name come in content_block_start
// and whose input is split over input_json_delta parts. Thinking blocks
// are the model's private reasoning: their text is kept apart, never
// streamed (redacted_thinking blocks hold none we can read).
type accumulator struct {
	text      strings.Builder
	reasoning strings.Builder
	tools     map[int64]*toolUse
	order     []int64 // tool_use block indexes in start order
	stopped   bool    // message_stop arrived, so the message is whole
	usage     ask.Usage
	stop      string // the stop_reason
}

type toolUse struct {
	id, name string
	start    string // the input content_block_start carried, usually {}
	input    strings.Builder
	streamed bool // an input_json_delta arrived
}

// add takes one event. It fails on a delta for a tool_use block that never
// started.
func (a *accumulator) add(ev sdk.MessageStreamEventUnion, onText func(string)) error {
	switch ev.Type {
	case "content_block_start":
		switch ev.ContentBlock.Type {
		case "text":
			a.emit(ev.ContentBlock.Text, onText)
		case "thinking":
			a.reasoning.WriteString(ev.ContentBlock.Thinking)
		case "tool_use":
			if a.tools == nil {
				a.tools = map[int64]*toolUse{}
			}
			if a.tools[ev.Index] == nil {
				a.order = append(a.order, ev.Index)
			}
			a.tools[ev.Index] = &toolUse{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name, start: ev.ContentBlock.JSON.Input.Raw()}
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			a.emit(ev.Delta.Text, onText)
		case "thinking_delta":
			a.reasoning.WriteString(ev.Delta.Thinking)
		case "input_json_delta":
			t := a.tools[ev.Index]
			if t == nil {
				return &askbi.Error{Code: askbi.InvalidResult, Op: op, Message: wire.MsgUnreadable,
					Err: fmt.Errorf("anthropic: input_json_delta for block %d, which is no tool_use block", ev.Index)}
			}
			t.input.WriteString(ev.Delta.PartialJSON)
			t.streamed = true
		}
	case "message_start":
		u := ev.Message.Usage
		a.usage = ask.Usage{InputTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
			CachedInputTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens, OutputTokens: u.OutputTokens}
	case "message_delta":
		if r := string(ev.Delta.StopReason); r != "" {
			a.stop = r
		}
		// Cumulative counts: the output's, and the input's where a
		// server repeats them.
		u := ev.Usage
		if u.JSON.OutputTokens.Valid() {
			a.usage.OutputTokens = u.OutputTokens
		}
		if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
			a.usage.InputTokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			a.usage.CachedInputTokens, a.usage.CacheWriteTokens = u.CacheReadInputTokens, u.CacheCreationInputTokens
		}
	case "message_stop":
		a.stopped = true
	}
	return nil
}

func (a *accumulator) emit(text string, onText func(string)) {
	if text == "" {
		return
	}
	a.text.WriteString(text)
	if onText != nil {
		onText(text)
	}
}

// reply returns the assembled reply, its tool calls in block order.
func (a *accumulator) reply() (ask.ModelReply, error) {
	reply := ask.ModelReply{Text: a.text.String(), Reasoning: a.reasoning.String(), Usage: a.usage, FinishReason: a.stop}
	for _, i := range a.order {
		t := a.tools[i]
		if t.name == "" {
			return ask.ModelReply{}, &askbi.Error{Code: askbi.InvalidResult, Op: op, Message: wire.MsgToolName,
				Err: fmt.Errorf("anthropic: tool_use block %d has no name", i)}
		}
		input := t.start
		if t.streamed || input == "null" {
			input = t.input.String()
		}
		args, ok := wire.Object([]byte(input))
		if !ok {
			return ask.ModelReply{}, &askbi.Error{Code: askbi.InvalidResult, Op: op, Message: wire.MsgToolArgs,
				Err: fmt.Errorf("anthropic: the input of tool_use block %d (%s) is not a JSON object", i, t.name)}
		}
		id := t.id
		if id == "" {
			id = fmt.Sprintf("toolu_%d", i) // a gateway may send none
		}
		reply.ToolCalls = append(reply.ToolCalls, ask.ToolCall{ID: id, Name: t.name, Arguments: args})
	}
	return reply, nil
}
