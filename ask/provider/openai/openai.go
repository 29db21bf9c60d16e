// Package openai is an [ask.Provider] for OpenAI-compatible chat completion
// APIs: OpenAI itself and the servers and gateways that speak its wire
// format, such as vLLM and llama.cpp's llama-server. It calls
// POST {BaseURL}/chat/completions through the official SDK
// (github.com/openai/openai-go) and streams every reply.
//
// # Quick start
//
//	// export OPENAI_API_KEY=...
//	p, err := openai.New("gpt-4o-mini", nil)
//	if err != nil { ... }
//	reply, err := p.Complete(ctx, ask.ModelRequest{
//		System:   "You answer questions about the selected dashboard.",
//		Messages: []ask.Message{{Role: ask.RoleUser, Text: "Which region grew most?"}},
//	}, func(delta string) { fmt.Print(delta) })
//
// # Self-hosted servers
//
// Point BaseURL at the server's OpenAI-compatible root, which ends in /v1,
// and pass the model name the server serves:
//
//	// vllm serve Qwen/Qwen2.5-7B-Instruct --api-key "$VLLM_API_KEY" \
//	//     --enable-auto-tool-choice --tool-call-parser hermes
//	p, err := openai.New("Qwen/Qwen2.5-7B-Instruct", &openai.Options{
//		BaseURL:   "http://localhost:8000/v1",
//		APIKeyEnv: "VLLM_API_KEY",
//	})
//
//	// llama-server -m model.gguf --jinja --port 8080
//	p, err := openai.New("local", &openai.Options{
//		BaseURL:   "http://localhost:8080/v1",
//		APIKeyEnv: "LLAMA_API_KEY",
//	})
//
// Tool calls need the server's tool support switched on: vLLM's
// --enable-auto-tool-choice with a --tool-call-parser that fits the model,
// llama-server's --jinja. The variable named by APIKeyEnv must be set even
// for a server that checks no key; any value works there. Servers older than
// the max_completion_tokens field need LegacyMaxTokens.
//
// # Images
//
// A user message's attached images go out as image_url parts with base64
// data URLs after its text; images on any other message are dropped.
// Whether the model reads them cannot be asked of an OpenAI-compatible
// server, so the host says so with Options.Images (default false: a
// text-only model, and the assistant refuses a message with an image
// before calling it).
//
// # Configuration and secrets
//
// The API key is read once, in New, from the environment variable that
// Options.APIKeyEnv names. It is sent only as the request's bearer token: it
// is never logged, never returned, and removed from every error. No other
// environment variable is read; in particular the SDK's own OPENAI_BASE_URL,
// OPENAI_ORG_ID and OPENAI_CUSTOM_HEADERS are ignored, so what is configured
// here is all that is sent.
package openai

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/internal/wire"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultAPIKeyEnv names the environment variable read when
// Options.APIKeyEnv is empty.
const DefaultAPIKeyEnv = "OPENAI_API_KEY"

// DefaultTimeout bounds one Complete call when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// Options configures a Provider. The zero value (or nil) talks to OpenAI
// with the key in OPENAI_API_KEY.
type Options struct {
	// BaseURL is the root of the OpenAI-compatible API, ending in /v1 for
	// most servers, e.g. "http://localhost:8000/v1" for vLLM. Default
	// DefaultBaseURL.
	BaseURL string
	// APIKeyEnv is the name of the environment variable holding the API
	// key (the name, never the key). Default "OPENAI_API_KEY".
	APIKeyEnv string
	// MaxTokens caps the tokens of each reply when the request sets no
	// ModelRequest.MaxTokens. Default zero: no cap is sent and the
	// server's default applies.
	MaxTokens int
	// LegacyMaxTokens sends the cap as max_tokens instead of
	// max_completion_tokens, for servers that predate the latter. OpenAI's
	// reasoning models reject max_tokens. Default false.
	LegacyMaxTokens bool
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
	// Images says the model reads image parts (gpt-4o, gpt-4.1 and other
	// vision models; on a self-hosted server, a vision model served with
	// image input on). Default false: the model is text-only, and the
	// assistant refuses a message with an image before calling it
	// (ask.ImageReader), as an OpenAI-compatible server cannot be asked.
	Images bool
}

// Provider is an [ask.Provider] over an OpenAI-compatible chat completions
// API. It is safe for concurrent use.
type Provider struct {
	chat      sdk.ChatCompletionService
	model     string
	maxTokens int
	legacyMax bool
	images    bool
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
		Name: "openai", Model: model,
		BaseURL: opts.BaseURL, DefaultBaseURL: DefaultBaseURL,
		APIKeyEnv: opts.APIKeyEnv, DefaultAPIKeyEnv: DefaultAPIKeyEnv,
		MaxTokens: opts.MaxTokens, MaxRetries: opts.MaxRetries,
		Timeout: opts.Timeout, DefaultTimeout: DefaultTimeout, HTTPClient: opts.HTTPClient,
	}, op)
	if err != nil {
		return nil, err
	}
	// The service, not sdk.NewClient: the client would also read
	// OPENAI_BASE_URL, OPENAI_ORG_ID and other variables from the
	// environment.
	chat := sdk.NewChatCompletionService(
		option.WithBaseURL(set.BaseURL),
		option.WithAPIKey(set.Key),
		option.WithHTTPClient(set.HTTPClient),
		option.WithMaxRetries(opts.MaxRetries),
	)
	return &Provider{
		chat:      chat,
		model:     model,
		maxTokens: opts.MaxTokens,
		legacyMax: opts.LegacyMaxTokens,
		images:    opts.Images,
		timeout:   set.Timeout,
		errs:      set.Errors,
	}, nil
}

// ReadsImages implements [ask.ImageReader]: Options.Images.
func (p *Provider) ReadsImages() bool { return p.images }

// ModelInfo implements [ask.ModelInfo]: "openai" (an OpenAI-compatible
// server is recorded as OpenAI's API) and the model name.
func (p *Provider) ModelInfo() (provider, model string) { return "openai", p.model }

// Complete sends req as one streamed chat completion. Text deltas go to
// onText (which may be nil) as they arrive; tool calls are assembled from
// their streamed parts.
//
// It fails with InvalidArgument when req cannot be expressed (an unknown
// role, a tool message without ToolCallID, a tool schema or recorded tool
// call arguments that are not a JSON object, or a request the provider
// rejects as invalid); RateLimited when the provider throttles; Unavailable
// when the provider rejects the credentials, fails, cannot be reached, cuts
// the stream short, or ctx is cancelled; Timeout when ctx's deadline or
// Options.Timeout passes or the provider times out; TooLarge when the
// provider finds the request too large; and InvalidResult when the stream
// cannot be read or a tool call has no name or arguments that are not a
// JSON object.
func (p *Provider) Complete(ctx context.Context, req ask.ModelRequest, onText func(delta string)) (ask.ModelReply, error) {
	params, err := p.params(req)
	if err != nil {
		return ask.ModelReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()

	stream := p.chat.NewStreaming(ctx, params)
	defer stream.Close()
	var acc accumulator
	for stream.Next() {
		acc.add(stream.Current(), onText)
	}
	if err := stream.Err(); err != nil {
		return ask.ModelReply{}, p.streamError(ctx, err)
	}
	if !acc.finished {
		// Ended early without an error: because ctx did, or cut off.
		return ask.ModelReply{}, p.streamError(ctx, errCut)
	}
	acc.end(onText)
	return acc.reply()
}
