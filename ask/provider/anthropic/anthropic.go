// Package anthropic is an [ask.Provider] for Anthropic's Messages API. It
// calls POST {BaseURL}/v1/messages through the official SDK
// (github.com/anthropics/anthropic-sdk-go) and streams every reply.
//
// # Quick start
//
//	// export ANTHROPIC_API_KEY=...
//	p, err := anthropic.New("claude-sonnet-4-5", nil)
//	if err != nil { ... }
//	reply, err := p.Complete(ctx, ask.ModelRequest{
//		System:   "You answer questions about the selected dashboard.",
//		Messages: []ask.Message{{Role: ask.RoleUser, Text: "Which region grew most?"}},
//	}, func(delta string) { fmt.Print(delta) })
//
// # Mapping
//
// ModelRequest.System becomes the system prompt, tools go out with their
// input_schema, an assistant message's tool calls become tool_use blocks,
// and tool messages become tool_result blocks of a user message, one user
// message for each run of consecutive tool messages, as the API requires.
// An assistant message with neither text nor tool calls is left out, since
// the API rejects empty content. A user message's images (attachments)
// become base64 image blocks ahead of its text; images on any other
// message are dropped. The API requires max_tokens, so a request without
// one gets Options.MaxTokens (default 1024).
//
// # Configuration and secrets
//
// The API key is read once, in New, from the environment variable that
// Options.APIKeyEnv names. It is sent only as the request's credential: it
// is never logged, never returned, and removed from every error. No other
// environment variable, profile or credential file is read: the SDK's own
// ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_PROFILE and
// ANTHROPIC_CUSTOM_HEADERS are ignored. The SDK's OpenTelemetry spans and
// trace headers are off; instrument Options.HTTPClient to trace calls.
package anthropic

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// DefaultBaseURL is Anthropic's API root.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultAPIKeyEnv names the environment variable read when
// Options.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "ANTHROPIC_API_KEY"

// DefaultMaxTokens caps a reply when neither the request nor
// Options.MaxTokens does.
const DefaultMaxTokens = 1024

// DefaultTimeout bounds one Complete call when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// Options configures a Provider. The zero value (or nil) talks to
// Anthropic with the key in ANTHROPIC_API_KEY.
type Options struct {
	// BaseURL is the API root, without /v1, e.g. the address of a gateway.
	// Default DefaultBaseURL.
	BaseURL string
	// APIKeyEnv is the name of the environment variable holding the API
	// key (the name, never the key). Default "ANTHROPIC_API_KEY".
	APIKeyEnv string
	// MaxTokens caps the tokens of each reply when the request sets no
	// ModelRequest.MaxTokens. Default DefaultMaxTokens (1024).
	MaxTokens int
	// Timeout bounds one Complete call, from the request until the last
	// streamed token. Default DefaultTimeout (5 minutes).
	Timeout time.Duration
	// MaxRetries is how many times the SDK retries a request that failed
	// before the reply began (connection errors, 408, 409, 429, 5xx).
	// Default zero: no retry; the caller decides.
	MaxRetries int
	// HTTPClient sends the requests. Default a client over
	// http.DefaultTransport.
	HTTPClient *http.Client
}

// Provider is an [ask.Provider] over Anthropic's Messages API. It is safe for
// concurrent use.
type Provider struct {
	messages  sdk.MessageService
	model     string
	maxTokens int
	timeout   time.Duration
	errs      wire.Errors // keeps the API key out of error text
}

var _ ask.Provider = (*Provider)(nil)

// New returns a Provider for model, reading the API key from the
// environment variable that opts.APIKeyEnv names. opts may be nil.
//
// It fails with InvalidArgument when model is empty, an option is out of
// range, BaseURL is not an http or https URL, or the key variable is unset
// or empty; the error names the variable, never its value.
func New(model string, opts *Options) (*Provider, error) {
	if opts == nil {
		opts = &Options{}
	}
	set, err := wire.Load(wire.Config{
		Name: "anthropic", Model: model,
		BaseURL: opts.BaseURL, DefaultBaseURL: DefaultBaseURL,
		APIKeyEnv: opts.APIKeyEnv, DefaultAPIKeyEnv: DefaultAPIKeyEnv,
		MaxTokens: opts.MaxTokens, MaxRetries: opts.MaxRetries,
		Timeout: opts.Timeout, DefaultTimeout: DefaultTimeout, HTTPClient: opts.HTTPClient,
	}, op)
	if err != nil {
		return nil, err
	}
	maxTokens := opts.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	client := sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithoutOpenTelemetry(),
		option.WithBaseURL(set.BaseURL),
		option.WithAPIKey(set.Key),
		option.WithHTTPClient(set.HTTPClient),
		option.WithMaxRetries(opts.MaxRetries),
	)
	return &Provider{
		messages:  client.Messages,
		model:     model,
		maxTokens: maxTokens,
		timeout:   set.Timeout,
		errs:      set.Errors,
	}, nil
}

// ReadsImages implements [ask.ImageReader]: every current Claude model
// reads images.
func (p *Provider) ReadsImages() bool { return true }

// ModelInfo implements [ask.ModelInfo]: "anthropic" and the model name.
func (p *Provider) ModelInfo() (provider, model string) { return "anthropic", p.model }

// Complete sends req as one streamed message. Text deltas go to onText
// (which may be nil) as they arrive; tool calls are assembled from their
// streamed input_json_delta parts.
//
// It fails with InvalidArgument when req cannot be expressed (an unknown
// role, a tool message without ToolCallID, a tool schema or recorded tool
// call arguments that are not a JSON object, or a request the provider
// rejects as invalid); RateLimited when the provider throttles; Unavailable
// when the provider rejects the credentials, fails or is overloaded, cannot
// be reached, cuts the stream short, or ctx is cancelled; Timeout when
// ctx's deadline or Options.Timeout passes or the provider times out;
// TooLarge when the provider finds the request too large; and
// InvalidResult when the stream cannot be read or a tool call has no name
// or input that is not a JSON object.
func (p *Provider) Complete(ctx context.Context, req ask.ModelRequest, onText func(delta string)) (ask.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return ask.ModelReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()

	stream := p.messages.NewStreaming(ctx, params)
	defer stream.Close()
	var acc accumulator
	for stream.Next() {
		if err := acc.add(stream.Current(), onText); err != nil {
			return ask.ModelReply{}, err
		}
	}
	if err := stream.Err(); err != nil {
		return ask.ModelReply{}, p.streamError(ctx, err)
	}
	if !acc.stopped {
		// Ended early without an error: because ctx did, or cut off.
		return ask.ModelReply{}, p.streamError(ctx, errCut)
	}
	return acc.reply()
}
