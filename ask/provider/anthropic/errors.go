package anthropic

import (
	"context"
	"errors"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

const op = "anthropic.Provider.Complete"

var errCut = errors.New("anthropic: the stream ended without message_stop")

// streamError maps a failed call to a code. ctx is the call's context.
func (p *Provider) streamError(ctx context.Context, err error) error {
	return p.errs.Classify(ctx, err, func(err error) (askbi.Code, string, error, bool) {
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) {
			return "", "", nil, false
		}
		code, msg := wire.StatusCode(apiErr.StatusCode)
		if apiErr.StatusCode < 400 {
			// An error event inside a stream, which came with status 200.
			code, msg = typeCode(string(apiErr.Type()))
		}
		return code, msg, apiErr, true
	})
}

// typeCode maps the type of an error event inside a stream, such as
// {"type": "error", "error": {"type": "overloaded_error"}}, to a code and
// message.
func typeCode(typ string) (askbi.Code, string) {
	switch typ {
	case "authentication_error", "permission_error":
		return askbi.Unavailable, wire.MsgCredentials
	case "rate_limit_error":
		return askbi.RateLimited, wire.MsgRateLimited
	case "timeout_error":
		return askbi.Timeout, wire.MsgTimeout
	case "request_too_large":
		return askbi.TooLarge, wire.MsgTooLarge
	case "invalid_request_error":
		return askbi.InvalidArgument, wire.MsgRejected
	}
	return askbi.Unavailable, wire.MsgFailed // overloaded_error, api_error and the rest
}
