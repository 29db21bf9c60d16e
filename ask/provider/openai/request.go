package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// params maps a neutral request to the SDK's chat completion parameters.
// The SDK adds "stream": true.
func (p *Provider) params(req ask.ModelRequest) (sdk.ChatCompletionNewParams, error) {
	// The usage of the whole request, in a last chunk: its cached
	// prompt tokens say whether the server's prompt cache took the
	// static prefix (the system prompt and the tools, the same bytes
	// for every request).
	params := sdk.ChatCompletionNewParams{Model: p.model, StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)}}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return params, p.errs.Fail(askbi.InvalidArgument, fmt.Sprintf("message %d cannot be sent to the model: %s", i, err), nil)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return params, p.errs.Fail(askbi.InvalidArgument, fmt.Sprintf("tool %q cannot be sent to the model: %s", t.Name, err), nil)
		}
		params.Tools = append(params.Tools, tool)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	switch {
	case maxTokens <= 0:
	case p.legacyMax:
		params.MaxTokens = sdk.Int(int64(maxTokens))
	default:
		params.MaxCompletionTokens = sdk.Int(int64(maxTokens))
	}
	return params, nil
}

// message maps one neutral message: a user message's images become
// image_url parts with data URLs; any other message's are dropped. Its
// errors are safe to show.
func message(m ask.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case ask.RoleUser:
		if len(m.Images) == 0 {
			return sdk.UserMessage(m.Text), nil
		}
		// The text first: its <ATTACHED-FILE> blocks name the images in
		// the order they follow.
		parts := []sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(m.Text)}
		for _, img := range m.Images {
			parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
			}))
		}
		return sdk.UserMessage(parts), nil
	case ask.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("a tool message has no tool call ID")
		}
		return sdk.ToolMessage(m.Text, m.ToolCallID), nil
	case ask.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		// Content may be left out only when there are tool calls.
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(m.Text)
		}
		for _, c := range m.ToolCalls {
			args, ok := wire.Object(c.Arguments)
			if !ok {
				return sdk.ChatCompletionMessageParamUnion{}, errors.New("the arguments of a tool call are not a JSON object")
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: string(args),
					},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("the role %q is unknown", m.Role)
}

// toolParam maps a tool spec to a function tool. An empty schema is left
// out, which the API reads as a function without parameters.
func toolParam(t ask.ToolSpec) (sdk.ChatCompletionToolUnionParam, error) {
	fn := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = sdk.String(t.Description)
	}
	if len(bytes.TrimSpace(t.InputSchema)) > 0 {
		raw, ok := wire.Object(t.InputSchema)
		var fields map[string]json.RawMessage
		if !ok || json.Unmarshal(raw, &fields) != nil {
			return sdk.ChatCompletionToolUnionParam{}, errors.New("its input schema is not a JSON object")
		}
		// Raw values, so the schema goes out as written (json.Number
		// would be sent as a string).
		fn.Parameters = make(shared.FunctionParameters, len(fields))
		for k, v := range fields {
			fn.Parameters[k] = v
		}
	}
	return sdk.ChatCompletionFunctionTool(fn), nil
}
