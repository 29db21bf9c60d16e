// Command refserver is the askbi reference server: the whole product on one
// machine, wired into net/http.
//
//	go run ./examples/refserver [-addr 127.0.0.1:8080] [-credentials-file creds.json]
//
// With no flags it starts a private PostgreSQL from the installed binaries
// under its data folder, seeds the Acme/Globex demo workspace and a demo
// warehouse, serves the MCP endpoint at /mcp (API keys) and the chat and
// memory API under /ai/ (session tokens), with the deterministic mock
// model, and the page at / (pick a demo user there; -demo-sign-in=false
// turns that off). It also runs a small analytics MCP server on a loopback
// port, the demo's remote MCP connection (see demomcp.go). Where
// PostgreSQL is not installed, or with -in-memory, it runs on in-memory
// state and built-in demo rows.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connhttp"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/datahttp"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/internal/pgpool"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/chartimage"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/telemetry/otelexport"
	"github.com/askbi/askbi/usage"
	"github.com/askbi/askbi/usage/usagehttp"
	"github.com/askbi/askbi/workspace"
)

type config struct {
	addr            string
	publicURL       string
	databaseURL     string
	mysqlURL        string // a MySQL warehouse for Acme (demo_mysql.go)
	dataDir         string
	inMemory        bool
	provider        string
	model           string
	providerBaseURL string
	providerKeyEnv  string
	modelImages     bool
	mockDelay       time.Duration // the mock model's pause per streamed word; tests leave it 0
	sharing         string
	memoryPolicy    string
	credentialsFile string
	assistantRoles  string
	demoSignIn      bool
	mcpResultBytes  int
	mcpTaskAfter    time.Duration
	// mcpOrigins are the origins, besides the public URL's, whose browser
	// pages may call /mcp (comma-separated).
	mcpOrigins   string
	debugAddr    string
	denyLoopback bool
	prices       usage.Prices // -model-prices, beside the demo model's (demo_model.go)

	// Overload bounds (zero means the SDK's default).
	rate            float64
	burst           int
	maxPerPrincipal int
	maxPerTeam      int
	maxPerSource    int
	mcpMaxInFlight  int
	maxTurnsPerUser int
	maxTurnsPerTeam int
	keyCacheTTL     time.Duration
	// drainDelay is how long the server refuses new requests with 503
	// before it stops (so a load balancer notices).
	drainDelay   time.Duration
	turnTimeout  time.Duration
	dbMaxConns   int
	memoryLimit  string // the Go runtime's soft memory limit (main applies it)
	messageBytes int64  // chat message bytes in flight; zero means askhttp's default

	// model, when set, replaces the -provider model (tests).
	modelOverride ask.Provider
	// limiterOverride, when set, replaces the rate limiter (tests).
	limiterOverride access.RateLimiter
	documentRoots   *x509.CertPool // trusted for client ID metadata documents (tests)
	extraTools      []ask.Tool     // offered besides the product's own tools (tests)
}

// defaultMemoryLimit is -memory-limit's default (docs/operations.md).
const defaultMemoryLimit = "48MiB"

// defaultTurnTimeout bounds one chat turn's model and tool work. A turn
// still running twice that long after it started was abandoned by a
// process that died, and shows as failed (see ask.Assistant.Open).
const defaultTurnTimeout = 2 * time.Minute

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address")
	flag.StringVar(&cfg.publicURL, "public-url", "", "public base URL (default http://ADDR)")
	flag.StringVar(&cfg.databaseURL, "database-url", "", "use this PostgreSQL (a lib/pq URL) instead of the private cluster")
	flag.StringVar(&cfg.mysqlURL, "mysql-url", "", "add a MySQL or MariaDB warehouse to Acme, with demo datasets: a mysql:// URL (or go-sql-driver DSN) of a user that may create tables and users in its database")
	flag.StringVar(&cfg.dataDir, "data-dir", defaultDataDir(), "folder for the private PostgreSQL cluster and the development memory key")
	flag.BoolVar(&cfg.inMemory, "in-memory", false, "keep all state in memory, even where PostgreSQL is installed")
	flag.StringVar(&cfg.provider, "provider", "mock", "chat model provider: mock, openai (and OpenAI-compatible servers) or anthropic")
	flag.DurationVar(&cfg.mockDelay, "mock-delay", 30*time.Millisecond, "the -provider mock model's pause before each streamed word, so its text arrives as a model's does (0: at once)")
	flag.StringVar(&cfg.model, "model", "", "model name for -provider openai or anthropic, e.g. gpt-4o-mini or claude-sonnet-4-5")
	flag.StringVar(&cfg.providerBaseURL, "provider-base-url", "", "API root of the provider, e.g. http://localhost:8000/v1 for vLLM or llama.cpp (default: the provider's own)")
	flag.StringVar(&cfg.providerKeyEnv, "provider-key-env", "", "environment variable holding the provider API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY)")
	flag.BoolVar(&cfg.modelImages, "model-images", false, "the -provider openai model reads images (a vision model such as gpt-4o); anthropic models always do")
	flag.StringVar(&cfg.sharing, "sharing", string(ask.SharingAggregates), "what tool output may reach the model: schema, aggregates or rows")
	flag.StringVar(&cfg.memoryPolicy, "memory-policy", "allow", "whether user memories may be sent to the model: allow or deny")
	flag.StringVar(&cfg.credentialsFile, "credentials-file", "", "write evaluator credentials (JSON) to this file")
	flag.StringVar(&cfg.assistantRoles, "assistant-roles", "owner,admin,editor,viewer", "the team roles that may use the assistant")
	flag.DurationVar(&cfg.turnTimeout, "turn-timeout", defaultTurnTimeout, "deadline of one chat turn (model and tools)")
	flag.BoolVar(&cfg.demoSignIn, "demo-sign-in", true, "let the page sign in as a demo user without a token, and OAuth clients describe themselves with client ID metadata documents on this machine (turn off when the server is reachable by others)")
	flag.StringVar(&cfg.mcpOrigins, "mcp-allowed-origins", "", "comma-separated origins, besides the public URL's, whose browser pages may call /mcp, e.g. http://localhost:6274 for the MCP Inspector's web UI (another Origin gets 403)")
	flag.DurationVar(&cfg.mcpTaskAfter, "mcp-task-after", mcpserver.DefaultTaskAfter, "how long an MCP data call of a client that declares the Tasks extension runs before it becomes a task the client polls")
	flag.IntVar(&cfg.mcpResultBytes, "mcp-result-bytes", mcpserver.DefaultResultBytes, "response budget of the MCP data tools, in bytes of serialized tool result (callers may lower it with max_bytes)")
	flag.StringVar(&cfg.debugAddr, "debug-addr", "", "serve /debug/pprof/ and the Prometheus /metrics on this loopback address (off by default); OTEL_EXPORTER_OTLP_ENDPOINT sends traces and metrics over OTLP/HTTP")
	flag.Func("model-prices", `model prices in US dollars per million tokens, for the usage view's cost: {"gpt-4o-mini":{"input":0.15,"cached_input":0.075,"output":0.6}}`, func(s string) error { return json.Unmarshal([]byte(s), &cfg.prices) })
	flag.BoolVar(&cfg.denyLoopback, "deny-loopback", false, "refuse remote MCP servers on this machine (loopback addresses, localhost), for a server others use; the demo's own MCP servers run on loopback, so the demo connection is then not set up")
	flag.Float64Var(&cfg.rate, "rate", access.DefaultRate, "requests per second each API key, OAuth grant or session regains")
	flag.IntVar(&cfg.burst, "rate-burst", access.DefaultBurst, "requests each API key, OAuth grant or session may make at once")
	flag.IntVar(&cfg.maxPerPrincipal, "max-queries-per-principal", dataexec.DefaultMaxPerPrincipal, "source queries one user may run at once (more are refused with rate_limited)")
	flag.IntVar(&cfg.maxPerTeam, "max-queries-per-team", dataexec.DefaultMaxPerTeam, "source queries one team may run at once")
	flag.IntVar(&cfg.maxPerSource, "max-queries-per-source", dataexec.DefaultMaxPerSource, "source queries one data source may run at once (keep it at or below its connection pool)")
	flag.IntVar(&cfg.maxTurnsPerUser, "max-turns-per-user", ask.DefaultMaxTurnsPerUser, "chat turns one user may have running at once (more are refused with rate_limited)")
	flag.IntVar(&cfg.maxTurnsPerTeam, "max-turns-per-team", ask.DefaultMaxTurnsPerTeam, "chat turns one team may have running at once")
	flag.IntVar(&cfg.mcpMaxInFlight, "mcp-max-in-flight", mcpserver.DefaultMaxInFlight, "MCP requests one user may have in flight, answers included")
	flag.DurationVar(&cfg.keyCacheTTL, "key-cache-ttl", access.DefaultKeyCacheTTL, "how long a verified API key is trusted without reading the database (negative: never)")
	flag.DurationVar(&cfg.drainDelay, "drain-delay", time.Second, "on SIGINT/SIGTERM, how long to refuse new requests with 503 before stopping")
	flag.IntVar(&cfg.dbMaxConns, "db-max-conns", pgpool.DefaultMaxConns, "PostgreSQL connections each pool (warehouse reader, state) opens at most and keeps for reuse; keep twice this within the server's max_connections")
	flag.StringVar(&cfg.memoryLimit, "memory-limit", defaultMemoryLimit, "the Go runtime's soft memory limit, as GOMEMLIMIT takes it (96MiB, 1GiB, off); GOMEMLIMIT, when set, wins")
	flag.Func("message-bytes-in-flight", "bytes of chat message bodies (attachments) the server holds at once, read and until their turns end, as -memory-limit is written (default "+fmt.Sprint(askhttp.DefaultMessageBytesInFlight>>20)+"MiB); past it a message gets 429, and RSS grows by up to three times it", func(s string) (err error) { cfg.messageBytes, err = httpserve.ParseMemoryLimit(s); return err })
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	limit, fromEnv, err := httpserve.SetMemoryLimit(cfg.memoryLimit)
	if err != nil {
		log.Error("refserver: -memory-limit", "err", err)
		os.Exit(2)
	}
	log.Info("refserver: Go soft memory limit", "bytes", limit, "from_GOMEMLIMIT", fromEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log, os.Stdout); err != nil {
		log.Error("refserver", "err", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, cfg config, log *slog.Logger, out io.Writer) error {
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	base := strings.TrimRight(cfg.publicURL, "/")
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	app, err := newApp(ctx, cfg, base, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer app.close()

	srv := httpserve.NewServer(app.routes(), nil) // the SDK's recommended limits; chat turns move their deadlines (askhttp)
	if cfg.debugAddr != "" {
		dsrv, dln, err := httpserve.ListenDebug(cfg.debugAddr, &httpserve.DebugOptions{Metrics: app.metrics})
		if err != nil {
			return fmt.Errorf("-debug-addr %w", err)
		}
		defer dsrv.Close()
		go dsrv.Serve(dln)
		fmt.Fprintf(out, "  debug:    http://%s/debug/pprof/ and /metrics (loopback only)\n", dln.Addr())
	}
	pctx, stopPurge := context.WithCancel(context.Background())
	defer stopPurge()
	// Retention: OAuth grants and tokens, connection sign-ins started and
	// never completed, MCP tasks past their TTL, and a.purges.
	go httpserve.Retain(pctx, append([]httpserve.Purge{{Name: "OAuth retention", Func: app.oauth.Purge},
		{Name: "connection sign-in retention", Func: app.signin.PurgeOAuth}, {Name: "MCP task retention", Func: app.mcp.PurgeTasks}}, app.purges...), &httpserve.RetentionOptions{Logger: log})
	if err := app.announce(out, cfg); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(out, "shutting down")
	// Refuse new requests cleanly (503 unavailable, /readyz failing)
	// while the running ones finish.
	app.drain.Start()
	if cfg.drainDelay > 0 {
		time.Sleep(cfg.drainDelay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// catalogStore is the catalog the server seeds and serves: in memory, or in
// PostgreSQL (pgstore.Catalog) whenever the state is, so saved datasets,
// previews and placements survive restarts and are shared by every
// instance on the database.
type catalogStore interface {
	workspace.Catalog
	workspace.CatalogWriter
	workspace.ConnectionWriter
}

// app is the wired product.
type app struct {
	storage   string
	model     string
	readerURL string // the SQL source's SELECT-only URL, when on PostgreSQL
	base      string
	log       *slog.Logger
	keys      *access.Keys
	gate      *access.Gate
	mcp       *mcpserver.Server
	oauth     *oauth.Server
	dir       access.Directory
	creds     credentials
	closers   []func() error
	audit     *access.MemoryAudit
	executor  *dataexec.Executor
	catalog   catalogStore
	assistant *ask.Assistant
	usage     *usage.Service // the usage view and the token budgets, at /ai/usage
	metrics   http.Handler   // the Prometheus scrape handler on the debug listener
	memory    *memory.Service
	conns     *connections.Service
	signin    *signin.Service
	remote    *remote.Tools // Ask's and datasets' remote tools
	resolver  *connresolve.Resolver
	// connRoutes are the connection routes (connhttp), at /ai/connections.
	connRoutes http.Handler
	demoParts
	sessions *sessions
	dataAuth access.Authenticate
	// demoSignIn serves /demo/ (nil when -demo-sign-in is off).
	demoSignIn *demoSignIn
	// drain refuses requests during shutdown; ready answers /readyz.
	drain *httpserve.Drain
	ready *httpserve.Readiness
	// purges are retention steps besides OAuth's (see run).
	purges []httpserve.Purge
	// streamWindow is how far each write moves an event stream's write
	// deadline; zero means askhttp's default (tests shorten it).
	streamWindow time.Duration
	messageBytes int64 // -message-bytes-in-flight; zero means askhttp's default
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			a.log.Error("refserver: close", "err", err)
		}
	}
}

func newApp(ctx context.Context, cfg config, base string, log *slog.Logger) (_ *app, err error) {
	a := &app{base: base, log: log, drain: &httpserve.Drain{}, messageBytes: cfg.messageBytes}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	sharing, policy, err := parsePolicies(cfg)
	if err != nil {
		return nil, err
	}
	// -assistant-roles: the roles left out lose access.RightUseAssistant.
	withdraw, err := access.KeepRight(access.RightUseAssistant, cfg.assistantRoles)
	if err != nil {
		return nil, fmt.Errorf("-assistant-roles %q: %s", cfg.assistantRoles, askbi.ErrorMessage(err))
	}
	model := cfg.modelOverride
	if model == nil {
		if model, err = a.newProvider(cfg); err != nil {
			return nil, err
		}
	}
	activity := mcpserver.NewMemoryActivity()
	var keyStore access.KeyStore = access.NewMemoryKeyStore()
	chats := ask.NewMemoryStores()
	var memories memory.Store = memory.NewMemoryStore()
	var grants oauth.Store = oauth.NewMemoryStore()
	var connStore connections.Store = connections.NewMemoryStore()
	var flows signin.FlowStore = signin.NewMemoryFlowStore()
	var demo demoStore = &memDemoStore{}
	var usageStore usage.Store = usage.NewMemoryStore(nil)
	var tasks mcpserver.TaskStore = mcpserver.NewMemoryTaskStore(0)
	// With the state in PostgreSQL: the team, source and turn bounds, and
	// the connection changes that stop turns, hold across instances.
	var leases dataexec.Leases
	var publish func(context.Context, string) error
	sources := dataexec.SourceMap{}
	rates := &access.RateOptions{Rate: cfg.rate, Burst: cfg.burst}

	var state *pgstore.DB
	a.storage = "in-memory (-in-memory)"
	if !cfg.inMemory {
		var stateURL string
		stateURL, err = a.demoPostgres(ctx, cfg)
		switch {
		case errors.Is(err, errNoPostgres):
			log.Warn("PostgreSQL is not installed: running on in-memory state and built-in demo rows; SQL exploration is unsupported")
			a.storage = "in-memory (PostgreSQL not installed)"
		case err != nil:
			return nil, err
		default:
			if state, err = pgstore.Open(ctx, stateURL, &pgstore.Options{MaxConns: cfg.dbMaxConns, Rate: rates}); err != nil {
				return nil, err
			}
			a.closers = append(a.closers, state.Close)
			keyStore, chats, memories, grants = state.Keys, state.Ask, state.Memory, state.OAuth
			connStore, flows, demo, usageStore, tasks = state.Connections, state.Flows, state.Demo, state.Usage, state.Tasks
			a.purges = append(a.purges, httpserve.Purge{Name: "audit and usage retention", Func: state.Usage.Purge})
			pool := dataexec.NewLeasePool(state.Leases, nil) // slots kept for the next call, not taken and released each time
			leases, publish = pool, state.ConnectionChanges.Publish
			a.closers = append(a.closers, func() error { pool.Close(); return nil })
		}
	}
	catalog, dir, checks, err := a.demoWorkspace(ctx, cfg, state, activity, sources)
	if err != nil {
		return nil, err
	}
	a.dir = dir
	a.ready = httpserve.NewReadiness(append(checks, a.drain.Check()), &httpserve.ReadinessOptions{Logger: log})
	a.catalog = catalog
	keyring, err := a.memoryKeyring(cfg, state == nil)
	if err != nil {
		return nil, err
	}
	x, err := otelexport.New(ctx, &otelexport.Options{ServiceName: "askbi-refserver", Prometheus: cfg.debugAddr != ""})
	if err != nil {
		return nil, err
	}
	tel := x.Telemetry
	a.closers, a.metrics = append(a.closers, func() error { return x.Shutdown(context.Background()) }), x.Metrics
	// One audit log: here (the last 10,000 entries) and in the usage view's ledger.
	a.audit = access.NewMemoryAudit(10000)
	audit := access.TeeAudit(a.audit, usageStore)
	checker := access.NewChecker(dir, &access.CheckerOptions{Withdraw: withdraw})
	var limiter access.RateLimiter = access.NewMemoryRateLimiter(rates)
	if state != nil {
		// One budget a principal across every instance on the database;
		// this instance's own while the database cannot be reached.
		a.purges = append(a.purges, httpserve.Purge{Name: "rate limit buckets", Func: state.RateLimiter.Purge})
		shared := access.NewLeasingRateLimiter(state.RateLimiter, &access.LeasingOptions{Rate: cfg.rate}) // tokens taken in batches
		limiter = access.NewFallbackRateLimiter(shared, limiter, &access.FallbackOptions{Logger: log})
	}
	if cfg.limiterOverride != nil {
		limiter = cfg.limiterOverride
	}
	gate := access.NewGate(checker, limiter)
	a.gate = gate
	// Remote MCP connections share the memory keyring for their tokens,
	// publish themselves into the catalog, and serve their datasets; OAuth
	// ones sign in through the callback of the connection routes
	// (a.connRoutes, mounted at /ai/connections).
	a.conns = connections.NewService(connStore, keyring, gate, &connections.Options{Catalog: catalog, Audit: audit, Logger: log,
		DenyLoopback: cfg.denyLoopback, Publish: publish})
	a.signin = signin.New(a.conns, keyring, &signin.Options{RedirectURL: connhttp.RedirectURL(base, "/ai/connections"), ClientURI: base,
		Flows: flows, Leases: leases, Audit: audit, Logger: log})
	a.remote = remote.New(a.conns, a.signin, &remote.Options{Audit: audit, Logger: log})
	if err := a.conns.Records().SyncCatalog(ctx); err != nil {
		return nil, err
	}
	creds := demoCreds{store: demo, keys: keyring}
	verified, err := a.startDemo(ctx, cfg, creds, gate)
	if err != nil {
		return nil, err
	}
	a.resolver = connresolve.NewResolver(connresolve.CatalogConnections{Catalog: catalog, Remote: a.remote,
		Natives: demoConnectionTypes, Verified: verified}, demoNatives,
		&connresolve.ResolverOptions{Verified: verified, LoopbackHTTP: true})
	a.sessions = newSessions(demo)
	a.connRoutes = connhttp.New(a.conns, a.signin, a.resolver, a.sessions.authenticate,
		&connhttp.Options{Prefix: "/ai/connections", Logger: log,
			CheckConversation: func(ctx context.Context, p access.Principal, id string) error {
				return a.assistant.CheckConversation(ctx, p, id)
			},
			// The OAuth callback returns to the page's view of the
			// connection, for tool approval.
			ConnectionPage: func(ret connhttp.OAuthReturn) string {
				u := connhttp.DefaultConnectionPage(ret)
				if ret.ConnectionID != "" {
					u += "#/connections/" + url.PathEscape(ret.ConnectionID)
				}
				return u
			}, SecureCookies: strings.HasPrefix(base, "https://")})
	// Links: every chat result and MCP tool result links to this server's
	// pages (demo_web.go) under -public-url.
	bounds := dataexec.ConcurrencyOptions{MaxPerPrincipal: cfg.maxPerPrincipal, MaxPerTeam: cfg.maxPerTeam, MaxPerSource: cfg.maxPerSource, Shared: leases}
	a.executor = dataexec.NewExecutor(catalog, mcpsource.Sources(a.remote, sources), &dataexec.Options{Audit: audit, Logger: log,
		Links: dataexec.PublicLinks(base), Concurrency: bounds, Cache: dataexec.CacheOptions{MaxBytes: httpserve.CacheBytes()}, Telemetry: tel})
	a.keys = access.NewKeys(keyStore, dir, &access.KeyOptions{CacheTTL: cfg.keyCacheTTL})
	if state != nil {
		// What other instances change reaches this one's caches within a
		// moment; the caches' own expiry bounds what a lost notification
		// leaves.
		lctx, stop := context.WithCancel(context.Background())
		a.closers = append(a.closers, func() error { stop(); return nil })
		if err := state.Listen(lctx, log, a.keys, a.conns.Records()); err != nil {
			return nil, err
		}
	}
	// The data routes (/api/) take a browser session or a bearer API key,
	// whose scopes the executor applies as on MCP; MCP OAuth tokens are
	// for /mcp only.
	a.dataAuth = access.SessionAuth(a.sessions.lookup, &access.SessionOptions{Cookie: sessionCookie, Keys: a.keys,
		Message: "sign in: send Authorization: Bearer <session_token or api_key>"})
	secret, err := a.oauthSecret(cfg, state == nil)
	if err != nil {
		return nil, err
	}
	a.oauth, err = oauth.New(base, grants, oauthUsers{s: a.sessions, dir: dir}, checker, &oauth.Options{
		Secret: secret, Audit: audit, Logger: log, // documents on loopback: in the demo only
		ClientDocuments: oauth.DocumentOptions{AllowLoopback: cfg.demoSignIn, RootCAs: cfg.documentRoots},
	})
	if err != nil {
		return nil, fmt.Errorf("%w (set -public-url to the https URL clients reach)", err)
	}
	a.mcp = mcpserver.New(a.executor, gate, access.AnyToken(a.oauth.Verify, a.keys.Verify), &mcpserver.Options{
		BaseURL: base, Activity: activity, Audit: audit, Logger: log, MaxInFlight: cfg.mcpMaxInFlight, Telemetry: tel,
		MaxResultBytes: cfg.mcpResultBytes, Tasks: mcpserver.TaskOptions{Store: tasks, After: cfg.mcpTaskAfter},
		ChartImage:           chartimage.PNG,
		AllowedOrigins:       strings.FieldsFunc(cfg.mcpOrigins, func(r rune) bool { return r == ',' || r == ' ' }),
		AuthorizationServers: []string{a.oauth.Issuer()},
		TeamName:             demoTeamName,
	})
	a.memory = memory.NewService(memories, keyring, gate, &memory.Options{Policy: policy, Audit: audit, Logger: log})
	a.usage = usage.NewService(usageStore, usageStore, gate, &usage.Options{Prices: demoPrices(cfg), TeamName: demoTeamName, Members: dir, Audit: audit, Telemetry: tel, Logger: log})
	tools, err := ask.NewRegistry(append(append(ask.ProductTools(a.executor), ask.ListConnections(a.resolver)), cfg.extraTools...)...)
	if err != nil {
		return nil, err
	}
	a.assistant = ask.New(model, gate, a.executor, chats, tools, &ask.Options{
		TurnTimeout: cfg.turnTimeout, Sharing: sharing, Memory: a.memory, Logger: log, Tools: ask.RemoteTools(a.remote),
		Secrets: []*regexp.Regexp{sessionPattern}, ModelNote: demoNote(cfg), Usage: a.usage, Audit: audit, Telemetry: tel,
		MaxTurnsPerUser: cfg.maxTurnsPerUser, MaxTurnsPerTeam: cfg.maxTurnsPerTeam, TurnSlots: leases,
	})
	return a, a.issueCredentials(ctx, cfg, checker, creds)
}

// parsePolicies reads -sharing and -memory-policy.
func parsePolicies(cfg config) (ask.SharingPolicy, memory.Policy, error) {
	level, err := ask.ParseSharing(cfg.sharing)
	if err != nil {
		return nil, nil, fmt.Errorf("-sharing %q: %s", cfg.sharing, askbi.ErrorMessage(err))
	}
	policy, err := memory.ParsePolicy(cfg.memoryPolicy)
	if err != nil {
		return nil, nil, fmt.Errorf("-memory-policy %q: %s", cfg.memoryPolicy, askbi.ErrorMessage(err))
	}
	return ask.StaticSharing(level), policy, nil
}

// newProvider builds the chat model from -provider, -model,
// -provider-base-url and -provider-key-env (package provider). An
// unknown provider is an error; an incomplete configuration (no model
// name, no key) leaves the assistant disabled (a nil provider), with a
// log line for the administrator, and the rest of the product serving.
func (a *app) newProvider(cfg config) (ask.Provider, error) {
	c := provider.Config{Name: cfg.provider, Model: cfg.model, BaseURL: cfg.providerBaseURL, APIKeyEnv: cfg.providerKeyEnv, Images: cfg.modelImages,
		MockDelay: cfg.mockDelay, MockIntro: demoModelNote}
	p, err := provider.New(c)
	switch {
	case askbi.ErrorCode(err) == askbi.Unsupported:
		return nil, fmt.Errorf("-provider %q: must be mock, openai or anthropic", cfg.provider)
	case err != nil:
		err = fmt.Errorf("-provider %s: %s", cfg.provider, askbi.ErrorMessage(err))
		if cfg.model == "" {
			err = fmt.Errorf("-provider %s needs -model NAME", cfg.provider)
		}
		a.model = "not configured: the assistant is disabled (" + err.Error() + "); MCP and memory keep serving"
		a.log.Warn("the assistant is disabled: its model is not configured", "reason", err.Error())
		return nil, nil
	}
	a.model = c.String()
	return p, nil
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.mcp)
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", a.mcp.ResourceMetadataHandler())
	mux.Handle("GET /.well-known/oauth-protected-resource", a.mcp.ResourceMetadataHandler())
	as := a.oauth.Handler()
	mux.Handle("/.well-known/oauth-authorization-server", as)
	mux.Handle("/oauth/", as)
	httpserve.HandleTree(mux, "/account/mcp", as)
	a.loginRoutes(mux)
	mux.Handle("/api/", datahttp.New(a.executor, a.gate, a.dataAuth, &datahttp.Options{Logger: a.log}))
	a.webRoutes(mux)
	mux.HandleFunc("GET /healthz", httpserve.Live)
	mux.Handle("GET /readyz", a.ready)
	mux.Handle("/ai/", askhttp.New(a.assistant, a.memory, a.sessions.authenticate, &askhttp.Options{
		StreamWindow: a.streamWindow, MessageBytesInFlight: a.messageBytes, Logger: a.log}))
	httpserve.HandleTree(mux, "/ai/connections", a.connRoutes)
	httpserve.HandleTree(mux, "/ai/usage", usagehttp.New(a.usage, a.sessions.authenticate, &usagehttp.Options{Logger: a.log}))
	// Every other path and method answers a JSON error too (404, or 405
	// with Allow).
	mux.Handle("/", httpjson.NoRoute(mux, "/", a.log))
	return a.drain.Handler(mux)
}
