package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/askbi/askbi"
)

const op = "openai.Provider.Complete"

// The safe messages. They are fixed: nothing the provider sent reaches
// them.
const (
	msgCredentials = "the model provider rejected the credentials"
	msgRateLimited = "the model provider is rate limiting requests; try again later"
	msgFailed      = "the model provider failed; try again later"
	msgUnreachable = "the model provider could not be reached"
	msgCut         = "the model provider's reply ended before it was complete"
	msgNoModel     = "the model provider does not know the configured model or endpoint"
	msgRejected    = "the model provider rejected the request"
	msgTooLarge    = "the request is too large for the model provider"
	msgTimeout     = "the model provider did not answer in time"
	msgCancelled   = "the request was cancelled"
	msgUnreadable  = "the model provider sent a reply that could not be read"
	msgToolName    = "the model proposed a tool call without a name"
	msgToolArgs    = "the model proposed a tool call whose arguments are not a JSON object"
)

var errCut = errors.New("openai: the stream ended without a finish_reason")

// maxCause caps the text of a cause, which may hold a provider's body.
const maxCause = 2048

// fail returns an *askbi.Error whose cause is safe to log: the context
// sentinels as they are, anything else as text with the API key removed.
// No SDK error stays reachable through errors.As, since one holds the
// request with its Authorization header.
func (p *Provider) fail(code askbi.Code, msg string, cause error) *askbi.Error {
	e := &askbi.Error{Code: code, Op: op, Message: msg}
	switch {
	case cause == nil:
	case cause == context.Canceled || cause == context.DeadlineExceeded:
		e.Err = cause
	default:
		e.Err = errors.New(truncate(p.redact(cause.Error()), maxCause))
	}
	return e
}

// streamError maps a failed call to a code. ctx is the call's context.
func (p *Provider) streamError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return p.fail(askbi.Timeout, msgTimeout, ctxErr)
		}
		return p.fail(askbi.Unavailable, msgCancelled, ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		code, msg := statusCode(apiErr.StatusCode)
		return p.fail(code, msg, errors.New(apiErr.Error()+" (type "+apiErr.Type+", code "+apiErr.Code+"): "+apiErr.Message))
	}
	var eventErr *ssestream.StreamError
	if errors.As(err, &eventErr) {
		code, msg := eventCode(eventErr.Event.Data)
		return p.fail(code, msg, eventErr)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return p.fail(askbi.Timeout, msgTimeout, err)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, bufio.ErrTooLong) {
		return p.fail(askbi.InvalidResult, msgUnreadable, err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return p.fail(askbi.Unavailable, msgUnreachable, err) // no response at all
	}
	return p.fail(askbi.Unavailable, msgCut, err)
}

// statusCode maps an HTTP status of the provider to a code and message.
func statusCode(status int) (askbi.Code, string) {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return askbi.Unavailable, msgCredentials // our configuration, not the user's fault
	case http.StatusTooManyRequests:
		return askbi.RateLimited, msgRateLimited
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return askbi.Timeout, msgTimeout
	case http.StatusRequestEntityTooLarge:
		return askbi.TooLarge, msgTooLarge
	case http.StatusNotFound:
		return askbi.Unavailable, msgNoModel
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return askbi.InvalidArgument, msgRejected
	}
	return askbi.Unavailable, msgFailed
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
		return askbi.Unavailable, msgFailed
	}
	var status int
	if json.Unmarshal(body.Error.Code, &status) == nil && status >= 400 {
		return statusCode(status)
	}
	if strings.Contains(body.Error.Type+string(body.Error.Code), "rate_limit") {
		return askbi.RateLimited, msgRateLimited
	}
	return askbi.Unavailable, msgFailed
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
