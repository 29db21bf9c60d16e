// Package telemetry is askbi's OpenTelemetry instrumentation: the spans
// and metrics of an MCP request, an Ask turn, each model call, each tool
// run and each data query, made by the SDK's packages through one
// [*Telemetry] a host builds from its own providers and passes in their
// options (mcpserver.Options.Telemetry, ask.Options.Telemetry,
// dataexec.Options.Telemetry, usage.Options.Telemetry).
//
// Quick start, with the host's providers (the OpenTelemetry SDK's, or
// any other implementation of the API):
//
//	tel := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp})
//	exec := dataexec.NewExecutor(catalog, sources, &dataexec.Options{Telemetry: tel})
//	srv := mcpserver.New(exec, gate, keys.Verify, &mcpserver.Options{Telemetry: tel})
//
// Package telemetry/otelexport builds the providers a server usually
// wants: a Prometheus scrape handler, and OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set.
//
// Nothing here is global: no provider is read from or registered with
// the otel package's globals. A nil *Telemetry is off, and every method
// of a nil *Telemetry or [*Span] returns at once without allocating, so
// the SDK's hot paths cost nothing when a host passes none.
//
// What telemetry never records: message text, memory, SQL text, tool
// arguments, filter or variable values, rows or any other data. Spans and
// metrics carry names (tools, models, source kinds), IDs the host already
// logs (team, conversation), counts, sizes, durations and error codes.
// docs/operations.md lists every span, attribute and metric.
package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/askbi/askbi"
)

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/askbi/askbi"

// Options are the host's providers. A nil provider turns its half off:
// no TracerProvider, no spans; no MeterProvider, no metrics.
type Options struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Surface is where a request came in.
type Surface string

// Surfaces.
const (
	SurfaceMCP  Surface = "mcp"
	SurfaceChat Surface = "chat"
)

// CacheResult says how a data query was served.
type CacheResult string

// Cache results.
const (
	CacheHit     CacheResult = "hit"     // a fresh cached result, no source query
	CacheMiss    CacheResult = "miss"    // not cached (or expired): the source ran
	CacheRefresh CacheResult = "refresh" // the caller asked for fresh data: the source ran
	CacheStale   CacheResult = "stale"   // the source failed; the last good result was served
	CacheNone    CacheResult = "none"    // never cached: an exploration preview
)

// Attribute keys: the OpenTelemetry semantic conventions' where one
// exists (MCP, GenAI, error.type), askbi.* otherwise.
const (
	AttrMCPMethod        = attribute.Key("mcp.method.name")
	AttrMCPSession       = attribute.Key("mcp.session.id")
	AttrMCPProtocol      = attribute.Key("mcp.protocol.version")
	AttrJSONRPCVersion   = attribute.Key("jsonrpc.protocol.version")
	AttrNetworkTransport = attribute.Key("network.transport")
	AttrNetworkProtocol  = attribute.Key("network.protocol.name")
	AttrOperation        = attribute.Key("gen_ai.operation.name")
	AttrToolName         = attribute.Key("gen_ai.tool.name")
	AttrAgentName        = attribute.Key("gen_ai.agent.name")
	AttrConversation     = attribute.Key("gen_ai.conversation.id")
	AttrProvider         = attribute.Key("gen_ai.provider.name")
	AttrRequestModel     = attribute.Key("gen_ai.request.model")
	AttrFinishReasons    = attribute.Key("gen_ai.response.finish_reasons")
	AttrInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	AttrOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	AttrCacheReadTokens  = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	AttrCacheWriteTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	AttrTokenType        = attribute.Key("gen_ai.token.type")
	AttrErrorType        = attribute.Key("error.type")
	AttrSurface          = attribute.Key("askbi.surface")
	AttrTeam             = attribute.Key("askbi.team.id")
	AttrChatOperation    = attribute.Key("askbi.chat.operation")
	AttrSourceKind       = attribute.Key("askbi.source.kind")
	AttrCacheResult      = attribute.Key("askbi.cache.result")
	AttrRows             = attribute.Key("askbi.data.rows")
	AttrBytes            = attribute.Key("askbi.data.bytes")
	AttrTruncated        = attribute.Key("askbi.data.truncated")
)

// Telemetry makes askbi's spans and records its metrics on a host's
// providers. A nil *Telemetry is off. It is safe for concurrent use.
type Telemetry struct {
	tracer trace.Tracer // nil: no spans
	m      *instruments // nil: no metrics
}

// New returns the telemetry of o's providers, or nil (off) when o is nil
// or has neither. It never touches the otel package's global providers.
func New(o *Options) *Telemetry {
	if o == nil || o.TracerProvider == nil && o.MeterProvider == nil {
		return nil
	}
	t := &Telemetry{}
	if o.TracerProvider != nil {
		t.tracer = o.TracerProvider.Tracer(ScopeName)
	}
	if o.MeterProvider != nil {
		t.m = newInstruments(o.MeterProvider.Meter(ScopeName))
	}
	return t
}

// kind is what a Span measures.
type kind uint8

const (
	kindMCP kind = iota
	kindTurn
	kindModel
	kindTool
	kindQuery
)

// Span is one measured operation: its OpenTelemetry span (when tracing)
// and what its metrics need at the end. A nil *Span does nothing. A Span
// is used by one goroutine; End it once.
type Span struct {
	t     *Telemetry
	span  trace.Span // nil when not tracing
	kind  kind
	start time.Time

	surface Surface
	method  string // MCP method
	name    string // tool name, or the model
	team    string
	prov    string // the model's provider
	tokens  Tokens
	finish  string
	source  string // a data query's source kind
	cache   CacheResult
}

// Tokens are a model call's tokens as its provider reported them.
type Tokens struct {
	Input, CachedInput, CacheWrite, Output int64
}

// MCPRequest is what an MCP request's span is made of: never its
// arguments.
type MCPRequest struct {
	// Method is the JSON-RPC method ("tools/call").
	Method string
	// Tool is the tool a tools/call calls.
	Tool string
	// SessionID and ProtocolVersion, when the client sent them.
	SessionID, ProtocolVersion string
	// Meta is the request's params._meta: a traceparent (and tracestate)
	// there makes the span a child of the client's (W3C Trace Context,
	// as the MCP semantic conventions propagate it).
	Meta map[string]any
}

// StartMCP starts the span of one MCP request (kind server, named
// "tools/call run_dataset"), continuing the trace the client sent in
// params._meta. End records mcp.server.operation.duration, askbi.requests
// and, for tools/call, askbi.tool.duration.
func (t *Telemetry) StartMCP(ctx context.Context, r MCPRequest) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{t: t, kind: kindMCP, start: time.Now(), surface: SurfaceMCP, method: r.Method, name: r.Tool}
	if t.tracer != nil {
		if carrier := metaCarrier(r.Meta); carrier != nil {
			ctx = propagation.TraceContext{}.Extract(ctx, carrier)
		}
		name := r.Method
		attrs := []attribute.KeyValue{AttrMCPMethod.String(r.Method), AttrJSONRPCVersion.String("2.0"),
			AttrNetworkTransport.String("tcp"), AttrNetworkProtocol.String("http")}
		if r.Tool != "" {
			name += " " + r.Tool
			attrs = append(attrs, AttrToolName.String(r.Tool), AttrOperation.String("execute_tool"))
		}
		if r.SessionID != "" {
			attrs = append(attrs, AttrMCPSession.String(r.SessionID))
		}
		if r.ProtocolVersion != "" {
			attrs = append(attrs, AttrMCPProtocol.String(r.ProtocolVersion))
		}
		ctx, s.span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	}
	return ctx, s
}

// metaCarrier is the trace context of an MCP _meta, or nil without one.
func metaCarrier(meta map[string]any) propagation.MapCarrier {
	tp, _ := meta["traceparent"].(string)
	if tp == "" {
		return nil
	}
	c := propagation.MapCarrier{"traceparent": tp}
	if ts, ok := meta["tracestate"].(string); ok {
		c["tracestate"] = ts
	}
	return c
}

// StartTurn starts the span of one Ask request that runs (or may run) a
// turn: "invoke_agent Ask", with op ("send", "approve", "reject") and the
// conversation. End records askbi.chat.turn.duration and askbi.requests.
func (t *Telemetry) StartTurn(ctx context.Context, op, conversationID string) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{t: t, kind: kindTurn, start: time.Now(), surface: SurfaceChat, method: op}
	if t.tracer != nil {
		attrs := []attribute.KeyValue{AttrOperation.String("invoke_agent"), AttrAgentName.String("Ask"), AttrChatOperation.String(op)}
		if conversationID != "" {
			attrs = append(attrs, AttrConversation.String(conversationID))
		}
		ctx, s.span = t.tracer.Start(ctx, "invoke_agent Ask", trace.WithAttributes(attrs...))
	}
	return ctx, s
}

// SetTeam names the team of a turn (once its principal is live).
func (s *Span) SetTeam(team string) {
	if s == nil {
		return
	}
	s.team = team
	if s.span != nil {
		s.span.SetAttributes(AttrTeam.String(team))
	}
}

// StartModel starts the span of one model call: "chat gpt-4o-mini",
// kind client. Set what the provider reported with [Span.SetUsage]
// before End, which records gen_ai.client.operation.duration,
// gen_ai.client.token.usage and askbi.chat.tokens (by team and model).
func (t *Telemetry) StartModel(ctx context.Context, provider, model, team string) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{t: t, kind: kindModel, start: time.Now(), surface: SurfaceChat, prov: orUnknown(provider), name: orUnknown(model), team: team}
	if t.tracer != nil {
		ctx, s.span = t.tracer.Start(ctx, "chat "+s.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			AttrOperation.String("chat"), AttrProvider.String(s.prov), AttrRequestModel.String(s.name), AttrTeam.String(team)))
	}
	return ctx, s
}

// SetUsage sets a model call's tokens and finish reason, as its provider
// reported them.
func (s *Span) SetUsage(tok Tokens, finishReason string) {
	if s == nil {
		return
	}
	s.tokens, s.finish = tok, finishReason
}

// StartTool starts the span of one tool run of an Ask turn:
// "execute_tool run_dataset". (An MCP tool call is its request's span.)
// End records askbi.tool.duration.
func (t *Telemetry) StartTool(ctx context.Context, tool string) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{t: t, kind: kindTool, start: time.Now(), surface: SurfaceChat, name: tool}
	if t.tracer != nil {
		ctx, s.span = t.tracer.Start(ctx, "execute_tool "+tool, trace.WithAttributes(
			AttrOperation.String("execute_tool"), AttrToolName.String(tool), AttrSurface.String(string(SurfaceChat))))
	}
	return ctx, s
}

// StartQuery starts the span of one data query of the executor
// ("askbi.data.run postgres"), a cache hit included. Set how it was
// served with [Span.SetQuery] before End, which records
// askbi.data.requests (by cache result: the hit ratio) and
// askbi.data.query.duration (by cache result too: a hit's is the cache's
// time alone).
func (t *Telemetry) StartQuery(ctx context.Context, sourceKind string) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	s := &Span{t: t, kind: kindQuery, start: time.Now(), source: orUnknown(sourceKind)}
	if t.tracer != nil {
		ctx, s.span = t.tracer.Start(ctx, "askbi.data.run "+s.source, trace.WithAttributes(AttrSourceKind.String(s.source)))
	}
	return ctx, s
}

// SetQuery sets how a data query was served: from the cache or the
// source, and the size of its result.
func (s *Span) SetQuery(cache CacheResult, rows int, bytes int64, truncated bool) {
	if s == nil {
		return
	}
	s.cache = cache
	if s.span != nil {
		s.span.SetAttributes(AttrCacheResult.String(string(cache)), AttrRows.Int(rows), AttrBytes.Int64(bytes), AttrTruncated.Bool(truncated))
	}
}

// InFlight counts one source query running on a source of kind until the
// returned function is called (askbi.data.queries.in_flight).
func (t *Telemetry) InFlight(ctx context.Context, sourceKind string) (done func()) {
	if t == nil || t.m == nil {
		return func() {}
	}
	set := metric.WithAttributeSet(attribute.NewSet(AttrSourceKind.String(orUnknown(sourceKind))))
	t.m.inFlight.Add(ctx, 1, set)
	return func() { t.m.inFlight.Add(context.WithoutCancel(ctx), -1, set) }
}

// Refused counts a request refused for a bound: rate_limited (the rate
// limit, the bounds of running turns, queries or MCP requests) or
// budget_exceeded (askbi.refused). Spans count their own refusals at End;
// this is for refusals made before a request has a span, such as an MCP
// request over its user's in-flight bound.
func (t *Telemetry) Refused(ctx context.Context, surface Surface, code askbi.Code) {
	if t == nil || t.m == nil {
		return
	}
	t.m.refused.Add(ctx, 1, metric.WithAttributes(AttrSurface.String(string(surface)), AttrErrorType.String(string(code))))
}

// Cost adds a model call's estimated cost in US dollars to
// askbi.chat.cost.usd, by team and model.
func (t *Telemetry) Cost(ctx context.Context, team, provider, model string, usd float64) {
	if t == nil || t.m == nil || usd <= 0 {
		return
	}
	t.m.cost.Add(ctx, usd, metric.WithAttributes(AttrTeam.String(team), AttrProvider.String(orUnknown(provider)), AttrRequestModel.String(orUnknown(model))))
}

// End ends s with err's outcome: error.type is its askbi code (never its
// message), and the span's status is Error. It records s's metrics.
func (s *Span) End(err error) {
	if s == nil {
		return
	}
	code := askbi.ErrorCode(err)
	if s.span != nil {
		s.endSpan(code)
	}
	if s.t.m != nil {
		s.t.m.record(s, code, time.Since(s.start).Seconds())
	}
}

func (s *Span) endSpan(code askbi.Code) {
	if s.kind == kindModel {
		attrs := []attribute.KeyValue{AttrInputTokens.Int64(s.tokens.Input), AttrOutputTokens.Int64(s.tokens.Output),
			AttrCacheReadTokens.Int64(s.tokens.CachedInput), AttrCacheWriteTokens.Int64(s.tokens.CacheWrite)}
		if s.finish != "" {
			attrs = append(attrs, AttrFinishReasons.StringSlice([]string{s.finish}))
		}
		s.span.SetAttributes(attrs...)
	}
	if code != "" {
		s.span.SetAttributes(AttrErrorType.String(string(code)))
		s.span.SetStatus(codes.Error, string(code))
	}
	s.span.End()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
