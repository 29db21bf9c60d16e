// Package mcpserver is the inbound MCP server of askbi: it opens a
// product's dashboards, charts and datasets to outside agents (Claude,
// ChatGPT, Cursor, the MCP Inspector) through six bounded tools, over
// stateless Streamable HTTP, under bearer credentials with scopes.
//
// Every tool but the activity feed is a dataexec action, the same
// definition and executor call the chat assistant uses, so access checks,
// limits and results are the same on both paths. Each tool call passes the
// request gate once. The MCP path never calls a model and never creates a
// conversation.
//
// Quick start:
//
//	gate := access.NewGate(access.NewChecker(directory, nil), nil)
//	keys := access.NewKeys(keyStore, directory, nil)
//	srv := mcpserver.New(executor, gate, keys.Verify, &mcpserver.Options{BaseURL: "https://bi.example.com"})
//	http.Handle("/mcp", srv)
//	http.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// Authenticate turns a bearer token into a principal, or fails with
// Unauthenticated. access.Keys.Verify is one.
type Authenticate func(ctx context.Context, token string) (access.Principal, error)

// Options configures a Server. The zero value is valid; each zero field
// means its default.
type Options struct {
	// BaseURL is the product's public base URL; links to charts, datasets
	// and dashboards are BaseURL + "/charts/{id}" and so on. Default
	// "http://127.0.0.1:8080".
	BaseURL string
	// MCPPath is where the host mounts the server, for the protected
	// resource metadata. Default "/mcp".
	MCPPath string
	// Activity feeds get_workspace_activity. Default an empty feed.
	Activity Activity
	// Audit records every tool call (ActionToolCall). Default none.
	Audit access.AuditSink
	// MaxBodyBytes caps a request body. Default 1 MiB.
	MaxBodyBytes int64
	// DisableLocalhostProtection turns off the go-sdk's DNS-rebinding
	// check, which refuses a non-loopback Host on a loopback listener. Set
	// it only behind a reverse proxy on the same machine.
	DisableLocalhostProtection bool
	// Logger logs internal errors with detail. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Server is the MCP server. It is an http.Handler for the MCP endpoint.
type Server struct {
	exec     *dataexec.Executor
	audit    *access.Auditor
	gate     *access.Gate
	authn    Authenticate
	opts     Options
	mcp      *mcp.Server
	handler  http.Handler
	metadata string // protected resource metadata URL
}

// New returns a Server whose tools call exec, authenticating bearer tokens
// with authn. Each tool call is one request through gate (live
// membership, then the rate limit of the credential). opts may be nil.
func New(exec *dataexec.Executor, gate *access.Gate, authn Authenticate, opts *Options) *Server {
	s := &Server{exec: exec, gate: gate, authn: authn}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	if o.BaseURL == "" {
		o.BaseURL = "http://127.0.0.1:8080"
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.MCPPath == "" {
		o.MCPPath = "/mcp"
	}
	if o.Activity == nil {
		o.Activity = NewMemoryActivity()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	s.metadata = o.BaseURL + "/.well-known/oauth-protected-resource" + o.MCPPath

	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "askbi", Version: "0.1.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: func(_ context.Context, r mcp.Request, c *mcp.Cacheable) {
			if _, ok := r.(*mcp.ListToolsRequest); ok {
				c.CacheScope = "private" // the list depends on the caller's scopes
			}
		},
	})
	s.addTools()
	s.mcp.AddReceivingMiddleware(s.middleware)

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: o.DisableLocalhostProtection,
	})
	s.handler = auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    s.metadata,
		AllowMissingExpiration: true, // API keys do not expire; they are revoked
	})(h)
	return s
}

// ServeHTTP serves the MCP endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// ResourceMetadataHandler serves the OAuth protected resource metadata
// (RFC 9728) that 401 answers point to. Mount it at
// "/.well-known/oauth-protected-resource" + MCPPath.
func (s *Server) ResourceMetadataHandler() http.Handler {
	scopes := make([]string, len(access.AllScopes))
	for i, sc := range access.AllScopes {
		scopes[i] = string(sc)
	}
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               s.opts.BaseURL + s.opts.MCPPath,
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "askbi MCP server",
	})
}

// ActionToolCall is the audit action of an MCP tool call; its details
// name the tool, never argument values.
const ActionToolCall = "mcp.tool_call"

const principalKey = "askbi.principal"

func (s *Server) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	p, err := s.authn(ctx, token)
	if askbi.ErrorCode(err) == askbi.Unauthenticated {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, askbi.ErrorMessage(err))
	}
	if err != nil {
		s.opts.Logger.Error("mcpserver: authenticate", "err", err)
		return nil, errors.New("authentication is unavailable")
	}
	scopes := make([]string, len(p.Scopes))
	for i, sc := range p.Scopes {
		scopes[i] = string(sc)
	}
	return &auth.TokenInfo{Scopes: scopes, UserID: p.UserID, Extra: map[string]any{principalKey: p}}, nil
}

// principalOf returns the principal verify stored for this request.
func principalOf(extra *mcp.RequestExtra) (access.Principal, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return access.Principal{}, false
	}
	p, ok := extra.TokenInfo.Extra[principalKey].(access.Principal)
	return p, ok
}

// middleware orders and filters tools/list by the caller's scopes, hides
// tools/call of tools the caller cannot list, gives SDK input-validation
// failures a structured invalid_argument, and audits every call.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			p, _ := principalOf(req.GetExtra())
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			lr := res.(*mcp.ListToolsResult)
			lr.Tools = visibleTools(lr.Tools, p)
			return lr, nil
		case "tools/call":
			call := req.(*mcp.CallToolRequest)
			p, _ := principalOf(call.Extra)
			name := call.Params.Name
			if d, ok := toolByName(name); !ok || !d.visibleTo(p) {
				// A hidden tool answers exactly like an unknown one.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
			}
			target := access.Team(p.TeamID)
			var outcome error // the call's outcome, for the audit log
			defer s.audit.Track(ctx, p, ActionToolCall, &target, map[string]string{"tool": name})(&outcome)
			var res mcp.Result
			live, err := s.gate.Begin(ctx, p)
			if err != nil {
				res, err = errorResult(err), nil
			} else {
				res, err = next(access.NewContext(ctx, live), method, req)
			}
			if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError {
				if r.StructuredContent == nil {
					// The SDK's own input-schema failures come as text only.
					*r = *errorResult(askbi.Errorf(askbi.InvalidArgument, "%s", schemaMessage(r.Content)))
				}
				if te, ok := r.StructuredContent.(toolError); ok {
					outcome = askbi.E(askbi.Code(te.Code))
				}
			} else if err != nil {
				outcome = err
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

var (
	quoted   = regexp.MustCompile(`"(?:[^"\\]|\\.){24,}"`)
	property = regexp.MustCompile(`/properties/([A-Za-z0-9_]+)`)
)

// schemaMessage makes a short, safe message of an SDK input-validation
// failure: it names the field and drops long quoted input values, which
// the SDK echoes.
func schemaMessage(content []mcp.Content) string {
	text := ""
	if len(content) > 0 {
		if t, ok := content[0].(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	text = strings.TrimPrefix(text, `validating "arguments": `)
	text = quoted.ReplaceAllString(text, `"…"`)
	if m := property.FindAllStringSubmatch(text, -1); len(m) > 0 {
		field := m[len(m)-1][1]
		rule := text[strings.LastIndex(text, m[len(m)-1][0])+len(m[len(m)-1][0]):]
		text = field + strings.TrimSpace(rule)
	}
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "…"
	}
	if text == "" {
		text = "invalid arguments"
	}
	return "arguments: " + text
}

// toolError is the structuredContent of every failed tool call.
type toolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorResult turns err into a tool result with isError and a structured
// {code, message}. The message is the safe one; internals never leave.
func errorResult(err error) *mcp.CallToolResult {
	te := toolError{Code: string(askbi.ErrorCode(err)), Message: askbi.ErrorMessage(err)}
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: te.Code + ": " + te.Message}},
		StructuredContent: te,
	}
}
