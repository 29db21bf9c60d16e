package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

const op = "openai.Provider.Complete"

var errCut = errors.New("openai: the stream ended without a finish_reason")

// streamError maps a failed call to a code. ctx is the call's context.
func (p *Provider) streamError(ctx context.Context, err error) error {
	return p.errs.Classify(ctx, err, func(err error) (askbi.Code, string, error, bool) {
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			code, msg := wire.StatusCode(apiErr.StatusCode)
			return code, msg, errors.New(apiErr.Error() + " (type " + apiErr.Type + ", code " + apiErr.Code + "): " + apiErr.Message), true
		}
		var eventErr *ssestream.StreamError
		if errors.As(err, &eventErr) {
			code, msg := eventCode(eventErr.Event.Data)
			return code, msg, eventErr, true
		}
		return "", "", nil, false
	})
}

// eventCode maps an error event inside a stream, such as
// {"error": {"type": "server_error", "code": 500}}, to a code and message.
// Servers put an HTTP status or a name in code.
func eventCode(data []byte) (askbi.Code, string) {
	var body struct {
		Error struct {
			Type string          `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) != nil {
		return askbi.Unavailable, wire.MsgFailed
	}
	var status int
	if json.Unmarshal(body.Error.Code, &status) == nil && status >= 400 {
		return wire.StatusCode(status)
	}
	if strings.Contains(body.Error.Type+string(body.Error.Code), "rate_limit") {
		return askbi.RateLimited, wire.MsgRateLimited
	}
	return askbi.Unavailable, wire.MsgFailed
}
