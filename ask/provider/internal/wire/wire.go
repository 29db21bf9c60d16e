// Package wire holds what the model providers share: configuration checks,
// the fixed safe error messages, and the mapping of transport failures to
// askbi codes. Nothing a provider sends reaches a message.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbi/askbi"
)

// The safe messages.
const (
	MsgCredentials = "the model provider rejected the credentials"
	MsgRateLimited = "the model provider is rate limiting requests; try again later"
	MsgFailed      = "the model provider failed; try again later"
	MsgUnreachable = "the model provider could not be reached"
	MsgCut         = "the model provider's reply ended before it was complete"
	MsgNoModel     = "the model provider does not know the configured model or endpoint"
	MsgRejected    = "the model provider rejected the request"
	MsgTooLarge    = "the request is too large for the model provider"
	MsgTimeout     = "the model provider did not answer in time"
	MsgCancelled   = "the request was cancelled"
	MsgUnreadable  = "the model provider sent a reply that could not be read"
	MsgToolName    = "the model proposed a tool call without a name"
	MsgToolArgs    = "the model proposed a tool call whose arguments are not a JSON object"
)

// Config is a provider's options as New receives them.
type Config struct {
	Name                        string // "openai", for messages
	Model                       string
	BaseURL, DefaultBaseURL     string
	APIKeyEnv, DefaultAPIKeyEnv string
	MaxTokens, MaxRetries       int
	Timeout, DefaultTimeout     time.Duration
	HTTPClient                  *http.Client
}

// Settings are a checked Config with its defaults applied.
type Settings struct {
	BaseURL    string
	Key        string
	Timeout    time.Duration
	HTTPClient *http.Client
	Errors     Errors
}

// Load checks c and reads the API key from the environment variable it
// names. Errors are InvalidArgument and name the variable, never its value.
func Load(c Config, op string) (Settings, error) {
	bad := func(msg string) error {
		return &askbi.Error{Code: askbi.InvalidArgument, Op: c.Name + ".New", Message: c.Name + ": " + msg}
	}
	if strings.TrimSpace(c.Model) == "" {
		return Settings{}, bad("the model name is empty")
	}
	if c.MaxTokens < 0 || c.Timeout < 0 || c.MaxRetries < 0 {
		return Settings{}, bad("MaxTokens, Timeout and MaxRetries must not be negative")
	}
	s := Settings{BaseURL: orDefault(c.BaseURL, c.DefaultBaseURL), Timeout: c.Timeout, HTTPClient: c.HTTPClient}
	if u, err := url.Parse(s.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, bad("BaseURL must be an http or https URL")
	}
	env := orDefault(c.APIKeyEnv, c.DefaultAPIKeyEnv)
	if s.Key = os.Getenv(env); s.Key == "" {
		return Settings{}, bad("the environment variable " + env + " that holds the API key is not set")
	}
	if s.Timeout == 0 {
		s.Timeout = c.DefaultTimeout
	}
	if s.HTTPClient == nil {
		s.HTTPClient = &http.Client{}
	}
	key := s.Key
	// A closure, so that the key is not a field fmt would print.
	s.Errors = Errors{op: op, redact: func(t string) string { return strings.ReplaceAll(t, key, "[redacted]") }}
	return s, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Errors makes a provider's errors.
type Errors struct {
	op     string
	redact func(string) string
}

// maxCause caps the text of a cause, which may hold a provider's body.
const maxCause = 2048

// Fail returns an *[askbi.Error] whose cause is safe to log: the context
// sentinels as they are, anything else as text with the API key removed.
// No SDK error stays reachable through errors.As, since one holds the
// request with its credential header.
func (e Errors) Fail(code askbi.Code, msg string, cause error) *askbi.Error {
	err := &askbi.Error{Code: code, Op: e.op, Message: msg}
	switch {
	case cause == nil:
	case cause == context.Canceled || cause == context.DeadlineExceeded:
		err.Err = cause
	default:
		err.Err = errors.New(truncate(e.redact(cause.Error()), maxCause))
	}
	return err
}

// Classify maps a failed call to a code. ctx is the call's context, and
// its end comes first; api recognises the SDK's own errors (ok false when
// err is not one). An error it does not recognise is a reply cut short.
func (e Errors) Classify(ctx context.Context, err error, api func(error) (code askbi.Code, msg string, cause error, ok bool)) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return e.Fail(askbi.Timeout, MsgTimeout, ctxErr)
		}
		return e.Fail(askbi.Unavailable, MsgCancelled, ctxErr)
	}
	if code, msg, cause, ok := api(err); ok {
		return e.Fail(code, msg, cause)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return e.Fail(askbi.Timeout, MsgTimeout, err)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, bufio.ErrTooLong) {
		return e.Fail(askbi.InvalidResult, MsgUnreadable, err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return e.Fail(askbi.Unavailable, MsgUnreachable, err) // no response at all
	}
	return e.Fail(askbi.Unavailable, MsgCut, err)
}

// StatusCode maps an HTTP status of the provider to a code and message.
func StatusCode(status int) (askbi.Code, string) {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return askbi.Unavailable, MsgCredentials // our configuration, not the user's fault
	case http.StatusTooManyRequests:
		return askbi.RateLimited, MsgRateLimited
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return askbi.Timeout, MsgTimeout
	case http.StatusRequestEntityTooLarge:
		return askbi.TooLarge, MsgTooLarge
	case http.StatusNotFound:
		return askbi.Unavailable, MsgNoModel
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return askbi.InvalidArgument, MsgRejected
	}
	return askbi.Unavailable, MsgFailed
}

// Object returns raw trimmed when it is a JSON object, and {} when it is
// empty.
func Object(raw []byte) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}"), true
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, false
	}
	return json.RawMessage(raw), true
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
