package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// params maps a neutral request to the SDK's message parameters. The SDK
// adds "stream": true.
func (p *Provider) params(req ask.ModelRequest) (sdk.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.maxTokens
	}
	params := sdk.MessageNewParams{Model: p.model, MaxTokens: int64(maxTokens)}
	if req.System != "" {
		// The cache breakpoint on the static prefix: the tools and the
		// system prompt, the same bytes for every request (seed 004).
		params.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}
	results := -1 // the index in params.Messages of the user message collecting tool results
	for i, m := range req.Messages {
		if m.Role == ask.RoleTool {
			block, err := toolResult(m)
			if err != nil {
				return params, p.errs.Fail(askbi.InvalidArgument, fmt.Sprintf("message %d cannot be sent to the model: %s", i, err), nil)
			}
			if results < 0 {
				params.Messages = append(params.Messages, sdk.NewUserMessage())
				results = len(params.Messages) - 1
			}
			user := params.Messages[results].OfUser
			user.Content = append(user.Content, block)
			continue
		}
		results = -1
		msg, ok, err := message(m)
		if err != nil {
			return params, p.errs.Fail(askbi.InvalidArgument, fmt.Sprintf("message %d cannot be sent to the model: %s", i, err), nil)
		}
		if ok {
			params.Messages = append(params.Messages, msg)
		}
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return params, p.errs.Fail(askbi.InvalidArgument, fmt.Sprintf("tool %q cannot be sent to the model: %s", t.Name, err), nil)
		}
		params.Tools = append(params.Tools, tool)
	}
	return params, nil
}

// message maps a user or assistant message: a user message's images
// become base64 image blocks; an assistant message's are dropped. It
// reports false for an assistant message without content, which the API
// would reject. Its errors are safe to show.
func message(m ask.Message) (sdk.MessageParam, bool, error) {
	switch m.Role {
	case ask.RoleUser:
		// The images first, as Anthropic advises; the text's
		// <ATTACHED-FILE> blocks name them in this order.
		var blocks []sdk.ContentBlockParamUnion
		for _, img := range m.Images {
			blocks = append(blocks, sdk.NewImageBlockBase64(img.MediaType, base64.StdEncoding.EncodeToString(img.Data)))
		}
		return sdk.NewUserMessage(append(blocks, sdk.NewTextBlock(m.Text))...), true, nil
	case ask.RoleAssistant:
		var blocks []sdk.ContentBlockParamUnion
		if m.Text != "" {
			blocks = append(blocks, sdk.NewTextBlock(m.Text))
		}
		for _, c := range m.ToolCalls {
			input, ok := wire.Object(c.Arguments)
			if !ok {
				return sdk.MessageParam{}, false, errors.New("the arguments of a tool call are not a JSON object")
			}
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, input, c.Name))
		}
		return sdk.NewAssistantMessage(blocks...), len(blocks) > 0, nil
	}
	return sdk.MessageParam{}, false, fmt.Errorf("the role %q is unknown", m.Role)
}

// toolResult maps a tool message to a tool_result block. Empty output
// leaves content out, as the API rejects empty text blocks.
func toolResult(m ask.Message) (sdk.ContentBlockParamUnion, error) {
	if m.ToolCallID == "" {
		return sdk.ContentBlockParamUnion{}, errors.New("a tool message has no tool call ID")
	}
	r := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if m.Text != "" {
		r.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Text}}}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: r}, nil
}

// toolParam maps a tool spec to a custom tool. The schema goes out as
// written; an empty one becomes {"type": "object"}.
func toolParam(t ask.ToolSpec) (sdk.ToolUnionParam, error) {
	tool := &sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tool.Description = sdk.String(t.Description)
	}
	schema := json.RawMessage(`{"type":"object"}`)
	if len(bytes.TrimSpace(t.InputSchema)) > 0 {
		var ok bool
		if schema, ok = wire.Object(t.InputSchema); !ok {
			return sdk.ToolUnionParam{}, errors.New("its input schema is not a JSON object")
		}
	}
	tool.InputSchema = param.Override[sdk.ToolInputSchemaParam](schema)
	return sdk.ToolUnionParam{OfTool: tool}, nil
}
