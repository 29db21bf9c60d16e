package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/askbi/askbi"
)

// Metric names, as OpenTelemetry spells them (Prometheus: dots become
// underscores, the unit is appended, counters end in _total).
const (
	MetricMCPDuration    = "mcp.server.operation.duration"
	MetricRequests       = "askbi.requests"
	MetricTurnDuration   = "askbi.chat.turn.duration"
	MetricToolDuration   = "askbi.tool.duration"
	MetricModelDuration  = "gen_ai.client.operation.duration"
	MetricTokenUsage     = "gen_ai.client.token.usage"
	MetricTokens         = "askbi.chat.tokens"
	MetricCost           = "askbi.chat.cost.usd"
	MetricQueriesRunning = "askbi.data.queries.in_flight"
	MetricQueryDuration  = "askbi.data.query.duration"
	MetricDataRequests   = "askbi.data.requests"
	MetricRefused        = "askbi.refused"
)

// instruments are the metrics of one Telemetry.
type instruments struct {
	mcpDuration   metric.Float64Histogram
	requests      metric.Int64Counter
	turnDuration  metric.Float64Histogram
	toolDuration  metric.Float64Histogram
	modelDuration metric.Float64Histogram
	tokenUsage    metric.Int64Histogram
	tokens        metric.Int64Counter
	cost          metric.Float64Counter
	inFlight      metric.Int64UpDownCounter
	queryDuration metric.Float64Histogram
	dataRequests  metric.Int64Counter
	refused       metric.Int64Counter
}

// Bucket boundaries: the semantic conventions' where they advise some.
var (
	// mcp.server.operation.duration (MCP semantic conventions).
	mcpBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	// gen_ai.client.operation.duration (GenAI semantic conventions).
	modelBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// gen_ai.client.token.usage (GenAI semantic conventions).
	tokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	// A data query: a cache hit takes microseconds, a source query
	// milliseconds to its deadline (15 s by default).
	queryBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30}
	// A chat turn: model calls and tools, up to its deadline (2 min).
	turnBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 120, 240}
)

// newInstruments makes the instruments on m. An instrument m refuses is
// a no-op instrument (the API returns one beside the error), so a
// provider's error never stops the SDK.
func newInstruments(m metric.Meter) *instruments {
	var in instruments
	in.mcpDuration, _ = m.Float64Histogram(MetricMCPDuration, metric.WithUnit("s"),
		metric.WithDescription("MCP request duration as observed on the server, from the request's arrival to its answer."),
		metric.WithExplicitBucketBoundaries(mcpBuckets...))
	in.requests, _ = m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests served: MCP requests and chat turn requests (send, approve, reject), by surface; error.type is the askbi code of a failed one."))
	in.turnDuration, _ = m.Float64Histogram(MetricTurnDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a chat turn request, model calls and tools included."),
		metric.WithExplicitBucketBoundaries(turnBuckets...))
	in.toolDuration, _ = m.Float64Histogram(MetricToolDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call, on MCP or in a chat turn, by tool; error.type is the askbi code of a failed one."),
		metric.WithExplicitBucketBoundaries(mcpBuckets...))
	in.modelDuration, _ = m.Float64Histogram(MetricModelDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a model call."), metric.WithExplicitBucketBoundaries(modelBuckets...))
	in.tokenUsage, _ = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of a model call, input or output, as the provider reported them."),
		metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.tokens, _ = m.Int64Counter(MetricTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of model calls by team and model: input (the cache's share included), cache_read, cache_write and output."))
	in.cost, _ = m.Float64Counter(MetricCost, metric.WithUnit("{USD}"),
		metric.WithDescription("Estimated cost of model calls in US dollars, by team and model, at the host's prices."))
	in.inFlight, _ = m.Int64UpDownCounter(MetricQueriesRunning, metric.WithUnit("{query}"),
		metric.WithDescription("Source queries running now, by source kind."))
	in.queryDuration, _ = m.Float64Histogram(MetricQueryDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of a data request of the executor, by source kind and cache result (a hit reads no source)."),
		metric.WithExplicitBucketBoundaries(queryBuckets...))
	in.dataRequests, _ = m.Int64Counter(MetricDataRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Data requests of the executor by cache result (hit, miss, refresh, stale): the cache hit ratio."))
	in.refused, _ = m.Int64Counter(MetricRefused, metric.WithUnit("{request}"),
		metric.WithDescription("Requests refused for a bound: error.type rate_limited (rate limit, running turns, queries, MCP requests in flight) or budget_exceeded (a team's or user's token budget)."))
	return &in
}

// record records s's metrics at its end.
func (in *instruments) record(s *Span, code askbi.Code, seconds float64) {
	ctx := context.Background() // metrics take no values from the context here
	var errAttr []attribute.KeyValue
	if code != "" {
		errAttr = []attribute.KeyValue{AttrErrorType.String(string(code))}
	}
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributes(append(kv, errAttr...)...)
	}
	switch s.kind {
	case kindMCP:
		if s.name != "" {
			in.mcpDuration.Record(ctx, seconds, with(AttrMCPMethod.String(s.method), AttrToolName.String(s.name), AttrOperation.String("execute_tool")))
			in.toolDuration.Record(ctx, seconds, with(AttrSurface.String(string(s.surface)), AttrToolName.String(s.name)))
		} else {
			in.mcpDuration.Record(ctx, seconds, with(AttrMCPMethod.String(s.method)))
		}
		in.requests.Add(ctx, 1, with(AttrSurface.String(string(s.surface))))
	case kindTurn:
		in.turnDuration.Record(ctx, seconds, with(AttrChatOperation.String(s.method)))
		in.requests.Add(ctx, 1, with(AttrSurface.String(string(s.surface))))
	case kindTool:
		in.toolDuration.Record(ctx, seconds, with(AttrSurface.String(string(s.surface)), AttrToolName.String(s.name)))
	case kindModel:
		model := []attribute.KeyValue{AttrOperation.String("chat"), AttrProvider.String(s.prov), AttrRequestModel.String(s.name)}
		in.modelDuration.Record(ctx, seconds, with(model...))
		if code == "" {
			in.tokenUsage.Record(ctx, s.tokens.Input, metric.WithAttributes(append(model, AttrTokenType.String("input"))...))
			in.tokenUsage.Record(ctx, s.tokens.Output, metric.WithAttributes(append(model, AttrTokenType.String("output"))...))
		}
		team := []attribute.KeyValue{AttrTeam.String(s.team), AttrProvider.String(s.prov), AttrRequestModel.String(s.name)}
		for _, t := range []struct {
			typ string
			n   int64
		}{{"input", s.tokens.Input}, {"cache_read", s.tokens.CachedInput}, {"cache_write", s.tokens.CacheWrite}, {"output", s.tokens.Output}} {
			if t.n > 0 {
				in.tokens.Add(ctx, t.n, metric.WithAttributes(append(team, AttrTokenType.String(t.typ))...))
			}
		}
	case kindQuery:
		cache := s.cache
		if cache == "" {
			cache = CacheMiss // failed before it was served either way
		}
		in.dataRequests.Add(ctx, 1, metric.WithAttributes(AttrSourceKind.String(s.source), AttrCacheResult.String(string(cache))))
		in.queryDuration.Record(ctx, seconds, with(AttrSourceKind.String(s.source), AttrCacheResult.String(string(cache))))
	}
	if code == askbi.RateLimited || code == askbi.BudgetExceeded {
		if s.kind == kindMCP || s.kind == kindTurn {
			in.refused.Add(ctx, 1, metric.WithAttributes(AttrSurface.String(string(s.surface)), AttrErrorType.String(string(code))))
		}
	}
}
