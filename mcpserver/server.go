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
//	as, _ := oauth.New("https://bi.example.com", oauthStore, users, checker, nil) // package mcpserver/oauth
//	srv := mcpserver.New(executor, gate, access.AnyToken(as.Verify, keys.Verify), &mcpserver.Options{
//		BaseURL: "https://bi.example.com", AuthorizationServers: []string{as.Issuer()}})
//	http.Handle("/mcp", srv)
//	http.Handle("/.well-known/oauth-protected-resource/mcp", srv.ResourceMetadataHandler())
//	http.Handle("/.well-known/oauth-protected-resource", srv.ResourceMetadataHandler())
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/telemetry"
)

// Options configures a Server. The zero value is valid; each zero field
// means its default.
type Options struct {
	// BaseURL is the product's public base URL, the origin of the
	// protected resource metadata and of the links in tool results, which
	// the executor's Links (dataexec.Options.Links) build: a same-origin
	// path it returns is made absolute against BaseURL. Default
	// "http://127.0.0.1:8080".
	BaseURL string
	// MCPPath is where the host mounts the server, for the protected
	// resource metadata. Default "/mcp".
	MCPPath string
	// AllowedOrigins are the origins ("https://app.example.com"),
	// besides BaseURL's, whose browser pages may call the MCP endpoint,
	// such as a web MCP client's. A request whose Origin header is
	// present and neither is answered 403 (Streamable HTTP: against DNS
	// rebinding, 2025-11-25); a request without Origin (a client outside
	// a browser) is served. Default none.
	AllowedOrigins []string
	// Activity feeds get_workspace_activity. Default an empty feed.
	Activity Activity
	// Audit records every tool call (ActionToolCall) and every
	// initialize, with the name the client gives itself
	// (access.ActionMCPInitialize): what the usage view reads. Default
	// none.
	Audit access.AuditSink
	// Telemetry makes a span of every MCP request (the MCP semantic
	// conventions: mcp.method.name, gen_ai.tool.name, mcp.session.id,
	// error.type), a child of the trace the client sends in the request's
	// _meta (traceparent), and records the request and tool metrics
	// (package telemetry). Default none: off.
	Telemetry *telemetry.Telemetry
	// MaxBodyBytes caps a request body. Default 1 MiB.
	MaxBodyBytes int64
	// MaxResultBytes is the response budget of the data tools
	// (run_dataset, get_chart_data, create_chart_preview, explore_data):
	// the most bytes a tool result may take, its summary, its data's
	// JSON text and structuredContent together; rows are cut to fit it (a
	// chart preview's PNG is not counted). A caller may lower it for
	// one call (max_bytes), never raise it. It is separate from the
	// executor's byte cap and the chat path's MaxToolOutputChars.
	// Default DefaultResultBytes (40,000); values below MinResultBytes
	// are raised to it.
	MaxResultBytes int
	// MaxInFlight bounds the requests one principal (a user in a team,
	// across its keys and grants) has in flight at once, from
	// authentication until its answer is written, so clients that never
	// read their answers pin at most this many. Past it a request is
	// answered HTTP 429 with Retry-After. Default DefaultMaxInFlight (16).
	MaxInFlight int
	// DisableLocalhostProtection turns off the go-sdk's DNS-rebinding
	// check, which refuses a non-loopback Host on a loopback listener. Set
	// it only behind a reverse proxy on the same machine.
	DisableLocalhostProtection bool
	// AuthorizationServers are the issuers the protected resource
	// metadata names (RFC 9728), such as an oauth.Server's Issuer.
	// Default none: bearer API keys only.
	AuthorizationServers []string
	// ChartImage draws the PNG that create_chart_preview adds when a call
	// asks for one ("image": true), from the chart's name and data; an
	// error keeps the chart and says the image is unavailable. Package
	// mcpserver/chartimage's PNG draws it with gonum/plot, which a host
	// links only when it imports that package. Default none: the chart
	// comes without an image, and image_error says why.
	ChartImage func(title string, cd *dataexec.ChartData) ([]byte, error)
	// Tasks makes long data calls tasks for clients that declare the
	// Tasks extension (TaskOptions); on by default, in this process's
	// memory.
	Tasks TaskOptions
	// TeamName names a team in OAuth tool results. Default the team ID.
	TeamName func(ctx context.Context, teamID string) string
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
	authn    access.TokenLookup
	opts     Options
	mcp      *mcp.Server
	handler  http.Handler
	metadata string // protected resource metadata URL
	inFlight *inFlight
	health   *authHealth                   // whether authentication reaches its store
	tasks    *tasks                        // nil when Options.Tasks.Disabled
	origins  map[string]struct{}           // the allowed Origin values (originOf)
	inputs   map[string]*jsonschema.Schema // each tool's input schema, by name
	// rawInputs are the same as JSON, for dataexec.ExplainArguments.
	rawInputs map[string]json.RawMessage
}

// New returns a Server whose tools call exec, authenticating bearer tokens
// with authn. Each tool call is one request through gate (live
// membership, then the rate limit of the credential). opts may be nil.
func New(exec *dataexec.Executor, gate *access.Gate, authn access.TokenLookup, opts *Options) *Server {
	s := &Server{exec: exec, gate: gate, authn: authn, inputs: map[string]*jsonschema.Schema{}, rawInputs: map[string]json.RawMessage{}}
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
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultResultBytes
	}
	o.MaxResultBytes = max(o.MaxResultBytes, MinResultBytes)
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	s.inFlight = &inFlight{max: o.MaxInFlight, n: map[string]int{}}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TeamName == nil {
		o.TeamName = func(_ context.Context, id string) string { return id }
	}
	s.origins = map[string]struct{}{}
	for _, a := range append([]string{o.BaseURL}, o.AllowedOrigins...) {
		if origin := originOf(a); origin != "" {
			s.origins[origin] = struct{}{}
		}
	}
	s.health = &authHealth{log: o.Logger}
	s.audit = access.NewAuditor(o.Audit, o.Logger, o.Now)
	s.metadata = o.BaseURL + "/.well-known/oauth-protected-resource" + o.MCPPath

	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "askbi", Version: "0.1.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
		SetCacheable: func(_ context.Context, r mcp.Request, c *mcp.Cacheable) {
			if _, ok := r.(*mcp.ListToolsRequest); ok {
				c.CacheScope = "private" // the list depends on the caller's scopes
			}
		},
	})
	s.addTools()
	s.addApp()
	if !o.Tasks.Disabled {
		s.tasks = newTasks(o.Tasks, o.Now, o.Logger)
		s.addTaskMethods()
	}
	s.mcp.AddReceivingMiddleware(s.measure, s.middleware)

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: o.DisableLocalhostProtection,
	})
	s.handler = s.checkOrigin(s.guard(s.invalidToken(auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    s.metadata,
		AllowMissingExpiration: true, // API keys do not expire; they are revoked
	})(s.oneMessage(s.stepUp(h))))))
	return s
}

// bearerToken returns the bearer token of r's Authorization header, read
// as the go-sdk's bearer check reads it (the scheme in any case).
func bearerToken(r *http.Request) (string, bool) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}

// invalidToken wraps the go-sdk's bearer check, which answers every
// refusal with the plain challenge: when r presented a token, its 401
// says error="invalid_token" (RFC 6750 §3), so a client knows to get
// another token; a request without one keeps the plain challenge
// (§3.1).
func (s *Server) invalidToken(next http.Handler) http.Handler {
	challenge := fmt.Sprintf(`Bearer error="invalid_token", error_description=%q, resource_metadata=%q`,
		"the credential is invalid, expired or revoked", s.metadata)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := bearerToken(r); ok {
			w = &challengeWriter{ResponseWriter: w, challenge: challenge}
		}
		next.ServeHTTP(w, r)
	})
}

// challengeWriter replaces the WWW-Authenticate header of a 401 answer.
type challengeWriter struct {
	http.ResponseWriter
	challenge string
}

func (w *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", w.challenge)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *challengeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkOrigin answers 403 to a request whose Origin header is present and
// not an allowed origin (Options.AllowedOrigins, BaseURL's): a browser
// page of another site, or one reaching the server through DNS
// rebinding, whose Origin then names the attacker's host even when Host
// passes. It runs first, before authentication.
//
// An allowed origin gets CORS (Fetch standard), so a web MCP client there
// can call the endpoint from the browser: its preflight is answered here
// (204, the methods and headers Streamable HTTP uses), and every answer
// names the origin and exposes the headers a client reads. Credentials
// are bearer tokens, never cookies, so no Allow-Credentials.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vs := r.Header.Values("Origin")
		if len(vs) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if _, ok := s.origins[originOf(vs[0])]; !ok || len(vs) > 1 {
			writeRPCError(w, http.StatusForbidden, askbi.Errorf(askbi.Forbidden, "requests from the origin %.100q are not allowed here", vs[0]))
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Origin", vs[0])
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		next.ServeHTTP(w, r)
	})
}

// corsHeaders are the request headers a browser MCP client sends.
const corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"

// originOf is the serialized origin of u, "scheme://host[:port]" in lower
// case without a default port, or "" when u has none (the opaque origin
// "null" among them), which no allowed origin equals.
func originOf(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
		return ""
	}
	host, port := strings.ToLower(p.Hostname()), p.Port()
	if port == "" || p.Scheme == "http" && port == "80" || p.Scheme == "https" && port == "443" {
		port = ""
	} else {
		port = ":" + port
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return strings.ToLower(p.Scheme) + "://" + host + port
}

// oneMessage runs between authentication and the MCP handler: a POST
// whose body is a JSON-RPC batch (a JSON array, also behind whitespace
// or a byte order mark, empty or of one message) is answered 400 with
// the JSON-RPC error Invalid Request, before anything in it runs.
//
// Each message of a batch would be its own request to the middleware,
// and pass the gate (and so the rate limit) on its own, so that one HTTP
// request could run thousands of tool calls. MCP removed batching in
// 2025-06-18; the go-sdk refuses a batch only when the request names
// such a revision in MCP-Protocol-Version, and reads a request without
// the header as 2025-03-26, which allowed them. This server refuses
// them whatever the revision (docs/mcp-server.md, "One message per
// request").
func (s *Server) oneMessage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
		if err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", s.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			} else {
				http.Error(w, "failed to read body", http.StatusBadRequest)
			}
			return
		}
		if isBatch(body) {
			err := askbi.Errorf(askbi.InvalidArgument, "JSON-RPC batches are not accepted; send each message in a POST of its own")
			e := rpcError(err)
			e.Code = jsonrpc.CodeInvalidRequest
			writeRPC(w, http.StatusBadRequest, e, err)
			return
		}
		if id, err := checkTaskHeaders(r, body); err != nil {
			writeHeaderMismatch(w, id, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// isBatch reports whether body is a JSON array as far as any JSON reader
// might take it: its first byte after JSON whitespace and byte order
// marks is '['. (The go-sdk reads a batch behind whitespace, and after
// its closing bracket ignores the rest.)
func isBatch(body []byte) bool {
	for {
		body = bytes.TrimLeft(body, " \t\r\n")
		rest, ok := bytes.CutPrefix(body, []byte("\ufeff"))
		if !ok {
			return len(body) > 0 && body[0] == '['
		}
		body = rest
	}
}

// stepUp runs between authentication and the MCP handler. A bearer
// token in the query string is refused (tokens go in the Authorization
// header only). An OAuth tools/call whose tool or arguments need a scope
// the token lacks answers HTTP 403 with WWW-Authenticate
// error="insufficient_scope" and the scopes the call needs (MCP
// authorization, "Runtime insufficient scope errors"), so the client can
// ask the user for them; this covers a tool hidden from the token's
// tools/list as much as refresh: true without data:refresh. An API key's
// client cannot ask anyone, so its call gets the tool error
// scope_required instead (see middleware). Failures no new scope can fix
// (role, project, not found) stay tool results.
func (s *Server) stepUp(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("access_token") {
			http.Error(w, "access tokens are accepted only in the Authorization header", http.StatusBadRequest)
			return
		}
		ti := auth.TokenInfoFromContext(r.Context())
		if r.Method != http.MethodPost || ti == nil {
			next.ServeHTTP(w, r)
			return
		}
		p, _ := ti.Extra[principalKey].(access.Principal)
		if p.Auth != access.AuthOAuth || !slices.ContainsFunc(access.AllScopes, func(sc access.Scope) bool { return !p.HasScope(sc) }) {
			// No call can need a scope p lacks.
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body) // in memory: oneMessage read it, bounded
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			if d, ok := toolByName(msg.Params.Name); ok {
				if len(d.missingScopes(p, msg.Params.Arguments)) > 0 {
					names := scopeNames(d.neededScopes(msg.Params.Arguments))
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
						strings.Join(names, " "), s.metadata, "this call needs the "+strings.Join(names, " and ")+" scope"))
					http.Error(w, "insufficient scope: this call needs "+strings.Join(names, " "), http.StatusForbidden)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the MCP endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// ResourceMetadataHandler serves the OAuth protected resource metadata
// (RFC 9728) that 401 answers point to; its resource is BaseURL +
// MCPPath byte for byte. Mount it at "/.well-known/oauth-protected-resource"
// + MCPPath and, for clients that look at the root,
// "/.well-known/oauth-protected-resource".
func (s *Server) ResourceMetadataHandler() http.Handler {
	scopes := make([]string, len(access.AllScopes))
	for i, sc := range access.AllScopes {
		scopes[i] = string(sc)
	}
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               s.opts.BaseURL + s.opts.MCPPath,
		ScopesSupported:        scopes,
		AuthorizationServers:   s.opts.AuthorizationServers,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "askbi MCP server",
	})
}

// ActionToolCall is the audit action of an MCP tool call; its details
// name the tool, never argument values.
const ActionToolCall = access.ActionMCPToolCall

const principalKey = "askbi.principal"

func (s *Server) verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	var p access.Principal
	var err error
	if out, ok := r.Context().Value(authKey{}).(authOutcome); ok && out.token == token {
		p, err = out.p, out.err // guard authenticated it
	} else {
		p, err = s.authn(ctx, token)
	}
	if askbi.ErrorCode(err) == askbi.Unauthenticated {
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, askbi.ErrorMessage(err))
	}
	if err != nil {
		s.health.failed(token, err)
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

// middleware orders and filters tools/list by the caller's scopes,
// answers a tools/call that needs a scope the caller lacks with the tool
// error scope_required naming it, gives SDK input-validation failures a
// structured invalid_argument, and audits every call.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover":
			// The extensions (MCP Apps, Tasks) are declared to a client
			// that declares them.
			res, err := next(ctx, method, req)
			s.auditInitialize(ctx, method, req, err)
			var caps *mcp.ClientCapabilities
			if ir, ok := req.(*mcp.InitializeRequest); ok && ir.Params != nil {
				caps = ir.Params.Capabilities
			} else if cr, ok := req.(interface {
				ClientCapabilities() *mcp.ClientCapabilities
			}); ok {
				caps = cr.ClientCapabilities()
			}
			if err != nil {
				return res, err
			}
			var rc *mcp.ServerCapabilities
			switch r := res.(type) {
			case *mcp.InitializeResult:
				rc = r.Capabilities
			case *mcp.DiscoverResult:
				rc = r.Capabilities
			}
			if _, declared := uiSupport(caps); declared {
				withUIExtension(rc)
			}
			if s.tasks != nil && tasksDeclared(req) {
				withTasksExtension(rc)
			}
			return res, err
		case "resources/list", "resources/read", "resources/templates/list":
			// The app is the same for every caller and holds no data; its
			// reads still pass the gate, as every request does.
			p, _ := principalOf(req.GetExtra())
			if _, err := s.gate.Begin(ctx, p); err != nil {
				noteRetry(ctx, err)
				return nil, rpcError(err)
			}
			return next(ctx, method, req)
		case "tools/list":
			// The list depends on the live role: it passes the gate like
			// a call.
			p, _ := principalOf(req.GetExtra())
			live, err := s.gate.Begin(ctx, p)
			if err != nil {
				noteRetry(ctx, err)
				return nil, rpcError(err)
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			lr := res.(*mcp.ListToolsResult)
			lr.Tools = visibleTools(lr.Tools, live)
			if known, declared := uiSupport(clientCaps(req)); known && !declared {
				lr.Tools = withoutApp(lr.Tools)
			}
			return lr, nil
		case "tools/call":
			call := req.(*mcp.CallToolRequest)
			if s.tasks != nil && tasksDeclared(req) && taskable(call) {
				res, err := s.callAsTask(ctx, method, call, next)
				return sendEncoded(ctx, res), err
			}
			ctx, stop := withRequest(ctx)
			defer stop()
			res, err := s.callTool(ctx, method, call, next)
			return sendEncoded(ctx, res), err
		case methodGetTask, methodUpdateTask, methodCancelTask:
			if s.tasks == nil || !tasksDeclared(req) {
				return nil, errTasksUndeclared()
			}
			p, _ := principalOf(req.GetExtra())
			live, err := s.gate.Begin(ctx, p)
			if err != nil {
				noteRetry(ctx, err)
				return nil, rpcError(err)
			}
			return next(access.NewContext(ctx, live), method, req)
		}
		if undeclared(method) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not offered: this server declares only the tools capability", method)}
		}
		return next(ctx, method, req)
	}
}

// callTool is a tools/call: the gate, the scopes the call needs, the
// tool, the answer's shape for the client, and the audit record. ctx
// ends when the call must (the request's end, or a task's cancel).
func (s *Server) callTool(ctx context.Context, method string, call *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	p, _ := principalOf(call.Extra)
	name := call.Params.Name
	d, ok := toolByName(name)
	if !ok || p.UserID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	target := access.Team(p.TeamID)
	var outcome error // the call's outcome, for the audit log
	details := map[string]string{"tool": name}
	if client, _ := clientInfo(method, call); client != "" {
		details["client"] = client
	}
	defer s.audit.Track(ctx, p, ActionToolCall, &target, details)(&outcome)
	var res mcp.Result
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		res, err = errorResult(err), nil
	} else if missing := d.missingScopes(live, call.Params.Arguments); len(missing) > 0 {
		res = errorResult(askbi.Errorf(askbi.ScopeRequired, "this call needs the %s scope, which this credential does not have",
			strings.Join(scopeNames(missing), " and ")))
	} else {
		res, err = next(access.NewContext(ctx, live), method, call)
	}
	if r, ok := res.(*mcp.CallToolResult); ok && err == nil && r.IsError {
		if r.StructuredContent == nil {
			// The SDK's own input-schema failures come as text only.
			// (Field by field: r keeps the resultType the SDK set.)
			e := errorResult(askbi.Errorf(askbi.InvalidArgument, "%s", s.inputMessage(name, call.Params.Arguments, r.Content)))
			r.Content, r.StructuredContent, r.IsError = e.Content, e.StructuredContent, e.IsError
		}
		if te, ok := r.StructuredContent.(toolError); ok {
			outcome = askbi.E(askbi.Code(te.Code))
			if te.RetryAfter > 0 {
				noteRetry(ctx, askbi.Retry(askbi.Code(te.Code), time.Duration(te.RetryAfter)*time.Second, ""))
			}
		}
	} else if err != nil {
		outcome = err
	}
	if r, ok := res.(*mcp.CallToolResult); ok && err == nil {
		if known, declared := uiSupport(clientCaps(call)); known && !declared {
			r.Meta = nil // the app's reading of the rows
		}
		res = preEncode(r)
	}
	return res, err
}

// clientCaps are the capabilities the client of req sent, as far as the
// server knows them (see uiSupport).
func clientCaps(req mcp.Request) *mcp.ClientCapabilities {
	if cr, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	}); ok {
		return cr.ClientCapabilities()
	}
	return nil
}

// undeclared reports whether method belongs to a capability this server
// (tools, and resources without subscriptions) does not declare. The
// go-sdk answers prompts/list with an empty list whatever the
// capabilities; a 2026-07-28 client reads a handled method as a
// capability (conformance server-stateless,
// "ServerDeclaresPromptsInDiscover"), so they answer Method not found.
func undeclared(method string) bool {
	for _, prefix := range []string{"prompts/", "resources/subscribe", "resources/unsubscribe", "completion/", "logging/"} {
		if strings.HasPrefix(method, prefix) {
			return true
		}
	}
	return false
}

// inputMessage is the message of the SDK's refusal of args, the
// arguments of a call of tool name, as content: the words of
// dataexec.ExplainArguments, which Ask answers with too.
// Should the two validators disagree, the refusal stands with a generic
// message and the SDK's text is logged, never shown.
func (s *Server) inputMessage(name string, args json.RawMessage, content []mcp.Content) string {
	if msg := dataexec.ExplainArguments(s.rawInputs[name], args); msg != "" {
		return msg
	}
	text := ""
	if len(content) > 0 {
		if t, ok := content[0].(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	s.opts.Logger.Warn("mcpserver: an input refusal the schema check does not explain", "tool", name, "err", text)
	return "the arguments do not match the tool's input schema"
}

// toolError is the structuredContent of every failed tool call.
type toolError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter is set on rate_limited and unavailable: the seconds to
	// wait before the same call may succeed (also the answer's
	// Retry-After header).
	RetryAfter int `json:"retry_after,omitempty"`
}

func toolErrorOf(err error) toolError {
	te := toolError{Code: string(askbi.ErrorCode(err)), Message: askbi.ErrorMessage(err)}
	te.RetryAfter, _ = askbi.RetryAfter(err)
	return te
}

// errorResult turns err into a tool result with isError and a structured
// {code, message} (and retry_after when waiting helps), in text as
// "code: message" and, as for every result (toolResult), as JSON. The
// message is the safe one; internals never leave.
func errorResult(err error) *mcp.CallToolResult {
	te := toolErrorOf(err)
	js, _ := json.Marshal(te)
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: te.Code + ": " + te.Message}, &mcp.TextContent{Text: string(js)}},
		StructuredContent: te,
	}
}

// encodedResult is a tool result with its JSON built once, by
// toolResult, or here from the SDK's own encoding of the rest and the
// structured content as it was encoded. go-sdk v1.8.0 would encode the
// result and so escape and compact its data's text once more, and then
// compact the whole twice: over HTTP, sendEncoded hands it a stand-in
// instead and the answer's writer puts this JSON in its place
// (docs/go-sdk-raw-structured-content.md has the change upstream that
// would make that unnecessary). The embedded result gives it the
// methods of a Result.
type encodedResult struct {
	*mcp.CallToolResult
	json []byte
}

func (r *encodedResult) MarshalJSON() ([]byte, error) { return r.json, nil }

// withResultType returns wire, r's JSON made by toolResult, with the
// resultType the go-sdk set on r after the tool answered ("complete",
// for a request of revision 2026-07-28, SEP-2322), which the SDK's own
// encoding would carry and a 2026-07-28 client requires; wire itself
// when r has none.
func withResultType(r *mcp.CallToolResult, wire []byte) []byte {
	probe := *r
	probe.Content, probe.StructuredContent, probe.Meta = []mcp.Content{}, nil, nil
	b, err := probe.MarshalJSON()
	var rt struct {
		ResultType string `json:"resultType"`
	}
	if err != nil || json.Unmarshal(b, &rt) != nil || rt.ResultType == "" || len(wire) < 2 || wire[0] != '{' {
		return wire
	}
	q, _ := json.Marshal(rt.ResultType)
	out := make([]byte, 0, len(wire)+len(q)+16)
	out = append(append(append(out, `{"resultType":`...), q...), ',')
	return append(out, wire[1:]...)
}

// preEncode returns r as an encodedResult when its structured content is
// already encoded, and r itself otherwise.
func preEncode(r *mcp.CallToolResult) mcp.Result {
	if enc, ok := r.StructuredContent.(encodedData); ok {
		return &encodedResult{r, withResultType(r, enc.wire)}
	}
	raw, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(raw) == 0 {
		return r
	}
	rest := *r
	rest.StructuredContent = nil
	frame, err := rest.MarshalJSON()
	if err != nil || len(frame) < 2 || frame[len(frame)-1] != '}' {
		return r // the SDK encodes it, and reports the error
	}
	b := make([]byte, 0, len(frame)+len(raw)+24)
	b = append(b, frame[:len(frame)-1]...)
	if len(frame) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"structuredContent":`...)
	b = append(append(b, raw...), '}')
	return &encodedResult{r, b}
}
