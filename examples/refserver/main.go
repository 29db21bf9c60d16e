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
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askhttp"
	"github.com/askbi/askbi/ask/provider/anthropic"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/ask/provider/openai"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/connresolve/connhttp"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/datahttp"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/examples/refserver/pgstore"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/internal/oauthfake"
	"github.com/askbi/askbi/internal/pgpool"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/chartimage"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/memory"
)

type config struct {
	addr            string
	publicURL       string
	databaseURL     string
	dataDir         string
	inMemory        bool
	provider        string
	model           string
	providerBaseURL string
	providerKeyEnv  string
	modelImages     bool
	sharing         string
	memoryPolicy    string
	credentialsFile string
	assistantRoles  string
	demoSignIn      bool
	mcpResultBytes  int
	// mcpOrigins are the origins, besides the public URL's, whose browser
	// pages may call /mcp (comma-separated).
	mcpOrigins   string
	debugAddr    string
	denyLoopback bool

	// Overload bounds (zero means the SDK's default).
	rate            float64
	burst           int
	maxPerPrincipal int
	maxPerTeam      int
	maxPerSource    int
	mcpMaxInFlight  int
	keyCacheTTL     time.Duration
	// drainDelay is how long the server refuses new requests with 503
	// before it stops (so a load balancer notices).
	drainDelay  time.Duration
	turnTimeout time.Duration
	dbMaxConns  int
	memoryLimit string // the Go runtime's soft memory limit (main applies it)

	// model, when set, replaces the -provider model (tests).
	modelOverride ask.Provider
	// limiterOverride, when set, replaces the rate limiter (tests).
	limiterOverride access.RateLimiter
}

// defaultMemoryLimit is -memory-limit's default (docs/operations.md).
const defaultMemoryLimit = "32MiB"

// cacheBytes bounds the result cache at a quarter of the Go runtime's
// memory limit (-memory-limit or GOMEMLIMIT), or the SDK's default
// without one.
func cacheBytes() int64 {
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		return limit / 4
	}
	return 0
}

// defaultTurnTimeout bounds one chat turn's model and tool work. A turn
// still running twice that long after it started was abandoned by a
// process that died, and shows as failed (see ask.Assistant.Open).
const defaultTurnTimeout = 2 * time.Minute

// memoryKeyEnv names the environment variable holding the memory
// encryption key: base64 of 32 random bytes.
const memoryKeyEnv = "ASKBI_MEMORY_KEY"

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address")
	flag.StringVar(&cfg.publicURL, "public-url", "", "public base URL (default http://ADDR)")
	flag.StringVar(&cfg.databaseURL, "database-url", "", "use this PostgreSQL (a lib/pq URL) instead of the private cluster")
	flag.StringVar(&cfg.dataDir, "data-dir", defaultDataDir(), "folder for the private PostgreSQL cluster and the development memory key")
	flag.BoolVar(&cfg.inMemory, "in-memory", false, "keep all state in memory, even where PostgreSQL is installed")
	flag.StringVar(&cfg.provider, "provider", "mock", "chat model provider: mock, openai (and OpenAI-compatible servers) or anthropic")
	flag.StringVar(&cfg.model, "model", "", "model name for -provider openai or anthropic, e.g. gpt-4o-mini or claude-sonnet-4-5")
	flag.StringVar(&cfg.providerBaseURL, "provider-base-url", "", "API root of the provider, e.g. http://localhost:8000/v1 for vLLM or llama.cpp (default: the provider's own)")
	flag.StringVar(&cfg.providerKeyEnv, "provider-key-env", "", "environment variable holding the provider API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY)")
	flag.BoolVar(&cfg.modelImages, "model-images", false, "the -provider openai model reads images (a vision model such as gpt-4o); anthropic models always do")
	flag.StringVar(&cfg.sharing, "sharing", string(ask.SharingAggregates), "what tool output may reach the model: schema, aggregates or rows")
	flag.StringVar(&cfg.memoryPolicy, "memory-policy", "allow", "whether user memories may be sent to the model: allow or deny")
	flag.StringVar(&cfg.credentialsFile, "credentials-file", "", "write evaluator credentials (JSON) to this file")
	flag.StringVar(&cfg.assistantRoles, "assistant-roles", "owner,admin,editor,viewer", "the team roles that may use the assistant")
	flag.DurationVar(&cfg.turnTimeout, "turn-timeout", defaultTurnTimeout, "deadline of one chat turn (model and tools)")
	flag.BoolVar(&cfg.demoSignIn, "demo-sign-in", true, "let the page sign in as a demo user without a token (turn off when the server is reachable by others)")
	flag.StringVar(&cfg.mcpOrigins, "mcp-allowed-origins", "", "comma-separated origins, besides the public URL's, whose browser pages may call /mcp, e.g. http://localhost:6274 for the MCP Inspector's web UI (another Origin gets 403)")
	flag.IntVar(&cfg.mcpResultBytes, "mcp-result-bytes", mcpserver.DefaultResultBytes, "response budget of the MCP data tools, in bytes of serialized tool result (callers may lower it with max_bytes)")
	flag.StringVar(&cfg.debugAddr, "debug-addr", "", "serve /debug/pprof/ on this loopback address (off by default)")
	flag.BoolVar(&cfg.denyLoopback, "deny-loopback", false, "refuse remote MCP servers on this machine (loopback addresses, localhost), for a server others use; the demo's own MCP servers run on loopback, so the demo connection is then not set up")
	flag.Float64Var(&cfg.rate, "rate", access.DefaultRate, "requests per second each API key, OAuth grant or session regains")
	flag.IntVar(&cfg.burst, "rate-burst", access.DefaultBurst, "requests each API key, OAuth grant or session may make at once")
	flag.IntVar(&cfg.maxPerPrincipal, "max-queries-per-principal", dataexec.DefaultMaxPerPrincipal, "source queries one user may run at once (more are refused with rate_limited)")
	flag.IntVar(&cfg.maxPerTeam, "max-queries-per-team", dataexec.DefaultMaxPerTeam, "source queries one team may run at once")
	flag.IntVar(&cfg.maxPerSource, "max-queries-per-source", dataexec.DefaultMaxPerSource, "source queries one data source may run at once (keep it at or below its connection pool)")
	flag.IntVar(&cfg.mcpMaxInFlight, "mcp-max-in-flight", mcpserver.DefaultMaxInFlight, "MCP requests one user may have in flight, answers included")
	flag.DurationVar(&cfg.keyCacheTTL, "key-cache-ttl", access.DefaultKeyCacheTTL, "how long a verified API key is trusted without reading the database (negative: never)")
	flag.DurationVar(&cfg.drainDelay, "drain-delay", time.Second, "on SIGINT/SIGTERM, how long to refuse new requests with 503 before stopping")
	flag.IntVar(&cfg.dbMaxConns, "db-max-conns", pgpool.DefaultMaxConns, "PostgreSQL connections each pool (warehouse reader, state) opens at most and keeps for reuse; keep twice this within the server's max_connections")
	flag.StringVar(&cfg.memoryLimit, "memory-limit", defaultMemoryLimit, "the Go runtime's soft memory limit, as GOMEMLIMIT takes it (96MiB, 1GiB, off); GOMEMLIMIT, when set, wins")
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

// defaultDataDir is the user's cache folder, or for root (whose home the
// postgres system user cannot enter) /var/lib/askbi/refserver.
func defaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/askbi/refserver"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "askbi", "refserver")
	}
	return filepath.Join(os.TempDir(), "askbi-refserver")
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

	srv := newServer(app.routes())
	if cfg.debugAddr != "" {
		dsrv, dln, err := listenDebug(cfg.debugAddr)
		if err != nil {
			return err
		}
		defer dsrv.Close()
		go dsrv.Serve(dln)
		fmt.Fprintf(out, "  debug:    http://%s/debug/pprof/ (loopback only)\n", dln.Addr())
	}
	signIn := "open it and pick a demo user (alice, bob, vic or carol)"
	if !cfg.demoSignIn {
		signIn = "paste a session_token from -credentials-file (-demo-sign-in is off)"
	}
	fmt.Fprintf(out, "askbi reference server\n  storage:  %s\n  model:    %s\n  web:      %s/  (%s)\n  chat API: %s/ai/ (Authorization: Bearer <session_token>)\n  mcp:      %s (OAuth: add this URL to Claude, ChatGPT, Cursor or the Inspector; or Authorization: Bearer <api_key>)\n  sign-in:  %s/signin (a session_token; the OAuth consent page asks for it)\n",
		app.storage, app.model, base, signIn, base, app.oauth.Resource(), base)
	pctx, stopPurge := context.WithCancel(context.Background())
	defer stopPurge()
	go app.purgeLoop(pctx)
	if cfg.credentialsFile != "" {
		if err := app.writeCredentials(cfg.credentialsFile); err != nil {
			return err
		}
		fmt.Fprintf(out, "  credentials: %s\n", cfg.credentialsFile)
	} else {
		fmt.Fprintf(out, "  credentials: pass -credentials-file PATH to get API keys and session tokens\n")
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

// newServer returns the HTTP server with the SDK's recommended limits: no
// slow-loris on headers or bodies, and no response held open forever.
// Chat turns outlive WriteTimeout and ReadTimeout: their handlers move
// the deadlines per request (see package askhttp).
func newServer(h http.Handler) *http.Server { return httpserve.NewServer(h, nil) }

// workspace is the catalog the server seeds and serves: in memory, or in
// PostgreSQL (pgstore.Catalog) whenever the state is, so saved datasets,
// previews and placements survive restarts and are shared by every
// instance on the database.
type workspace interface {
	dataexec.Catalog
	dataexec.CatalogWriter
	dataexec.ConnectionWriter
}

// app is the wired product.
type app struct {
	storage   string
	model     string
	readerURL string // the SQL source's SELECT-only URL, when on PostgreSQL
	stateURL  string // the state database's URL, when on PostgreSQL
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
	catalog   workspace
	assistant *ask.Assistant
	memory    *memory.Service
	conns     *connresolve.Service
	resolver  *connresolve.Resolver
	// connRoutes are the connection routes (connhttp), at /ai/connections.
	connRoutes http.Handler
	demoMCP    *demoMCP
	// demoOAuth is Demo Analytics, the demo's OAuth provider.
	demoOAuth *oauthfake.Server
	sessions  *sessions
	// demoSignIn serves /demo/ (nil when -demo-sign-in is off).
	demoSignIn *demoSignIn
	// drain refuses requests during shutdown; ready answers /readyz.
	drain *httpserve.Drain
	ready *httpserve.Readiness
	// purges are the retention steps purgeLoop runs.
	purges []purge
	// streamWindow is how far each write moves an event stream's write
	// deadline; zero means askhttp's default (tests shorten it).
	streamWindow time.Duration
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		if err := a.closers[i](); err != nil {
			a.log.Error("refserver: close", "err", err)
		}
	}
}

func newApp(ctx context.Context, cfg config, base string, log *slog.Logger) (_ *app, err error) {
	a := &app{base: base, log: log, drain: &httpserve.Drain{}}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	sharing, policy, err := parsePolicies(cfg)
	if err != nil {
		return nil, err
	}
	withdraw, err := parseAssistantRoles(cfg.assistantRoles)
	if err != nil {
		return nil, err
	}
	model := cfg.modelOverride
	if model == nil {
		if model, err = a.newProvider(cfg); err != nil {
			return nil, err
		}
	}
	var dir access.Directory
	var catalog workspace
	activity := mcpserver.NewMemoryActivity()
	var keyStore access.KeyStore = access.NewMemoryKeyStore()
	chats := ask.NewMemoryStores()
	var memories memory.Store = memory.NewMemoryStore()
	var grants oauth.Store = oauth.NewMemoryStore()
	var connStore connresolve.Store = connresolve.NewMemoryStore()
	var flows connresolve.FlowStore = connresolve.NewMemoryFlowStore()
	var demo demoStore = &memDemoStore{}
	sources := dataexec.SourceMap{}

	var state *sqlx.DB
	var warehouseOwner, warehouseReader string
	var checks []httpserve.Check
	a.storage = "in-memory (-in-memory)"
	if !cfg.inMemory {
		state, warehouseOwner, warehouseReader, err = a.openPostgres(ctx, cfg)
		switch {
		case errors.Is(err, pgtest.ErrNotInstalled):
			log.Warn("PostgreSQL is not installed: running on in-memory state and built-in demo rows; SQL exploration is unsupported")
			a.storage = "in-memory (PostgreSQL not installed)"
		case err != nil:
			return nil, err
		}
	}
	if state == nil {
		mem := dataexec.NewMemoryCatalog()
		dir = memoryDirectory(demoDirectory())
		putSeed(mem, seedWorkspace(activity, "demo", time.Now()))
		catalog = mem
		demo := newDemoSource()
		sources["conn_acme_wh"], sources["conn_globex_wh"] = demo, demo
	} else {
		keyStore = pgstore.NewKeyStore(state)
		chats = pgstore.NewAskStores(state)
		memories = pgstore.NewMemoryStore(state)
		grants = pgstore.NewOAuthStore(state)
		connStore = pgstore.NewConnectionStore(state)
		flows = pgstore.NewFlowStore(state)
		demo = pgstore.NewDemoStore(state)
		// The demo workspace is seeded once per database: what users
		// saved, placed or deleted since stays as they left it.
		pc := pgstore.NewCatalog(state)
		if _, err := pc.Seed(ctx, "demo", seedWorkspace(activity, "postgres", time.Now())); err != nil {
			return nil, err
		}
		pd := pgstore.NewDirectory(state)
		if _, err := pd.Seed(ctx, "demo", demoDirectory()); err != nil {
			return nil, err
		}
		dir = pd
		catalog = pc
		a.readerURL = warehouseReader
		reader, err := pgsource.OpenDB(warehouseReader)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, reader.Close)
		checks = append(checks, httpserve.Check{Name: "the state database", Func: state.PingContext},
			httpserve.Check{Name: "the demo warehouse", Func: reader.PingContext})
		src, err := pgsource.New(reader, &pgsource.Options{MaxConns: cfg.dbMaxConns})
		if err != nil {
			return nil, err
		}
		sources["conn_acme_wh"], sources["conn_globex_wh"] = src, src
		a.creds.WarehouseDatabaseURL = warehouseOwner
	}

	a.dir = dir
	a.ready = httpserve.NewReadiness(append(checks, a.drain.Check()), &httpserve.ReadinessOptions{Logger: log})
	a.catalog = catalog
	keyring, err := a.memoryKeyring(cfg, state == nil)
	if err != nil {
		return nil, err
	}
	a.audit = access.NewMemoryAudit(10000)
	checker := access.NewChecker(dir, &access.CheckerOptions{Withdraw: withdraw})
	rates := &access.RateOptions{Rate: cfg.rate, Burst: cfg.burst}
	var limiter access.RateLimiter = access.NewMemoryRateLimiter(rates)
	if state != nil {
		// One budget a principal across every instance on the database;
		// this instance's own while the database cannot be reached.
		shared := pgstore.NewRateLimiter(state, rates)
		a.purges = append(a.purges, purge{"rate limit buckets", shared.Purge})
		limiter = access.NewFallbackRateLimiter(shared, limiter, &access.FallbackOptions{Logger: log})
	}
	if cfg.limiterOverride != nil {
		limiter = cfg.limiterOverride
	}
	gate := access.NewGate(checker, limiter)
	// Remote MCP connections share the memory keyring for their tokens,
	// publish themselves into the catalog, and serve their datasets.
	a.gate = gate
	// OAuth connections sign in through the connection routes' callback,
	// set where they are mounted (a.connRoutes).
	a.conns = connresolve.NewService(connStore, keyring, gate, &connresolve.Options{Catalog: catalog, Audit: a.audit, Logger: log,
		DenyLoopback: cfg.denyLoopback,
		OAuth:        connresolve.OAuthOptions{ClientURI: base, Flows: flows}})
	if err := a.conns.SyncCatalog(ctx); err != nil {
		return nil, err
	}
	creds := demoCreds{store: demo, keys: keyring}
	token, err := creds.secret(ctx, "analytics-mcp-token", func(string) bool { return true },
		func() (string, error) { return "demo-" + rand.Text(), nil }, func(string) {})
	if err != nil {
		return nil, err
	}
	if a.demoMCP, err = startDemoMCP(token); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.demoMCP.close)
	if cfg.denyLoopback {
		log.Warn("-deny-loopback: the demo MCP servers listen on loopback, which is refused: the demo connection is not set up and Demo Analytics cannot be connected")
	} else if err := seedDemoConnection(ctx, a.conns, gate, a.demoMCP); err != nil {
		return nil, err
	}
	a.creds.AnalyticsMCP = &mcpCredentials{URL: a.demoMCP.URL, Token: a.demoMCP.Token}
	if a.demoOAuth, err = startDemoProvider(); err != nil {
		return nil, err
	}
	a.closers = append(a.closers, a.demoOAuth.Close)
	a.creds.DemoOAuthMCP = &mcpCredentials{URL: a.demoOAuth.MCPURL}
	verified := append(slices.Clone(connresolve.Verified), demoProvider(a.demoOAuth.MCPURL))
	a.resolver = connresolve.NewResolver(hostConnections{catalog: catalog, conns: a.conns, verified: verified}, demoNatives,
		&connresolve.ResolverOptions{Verified: verified, LoopbackHTTP: true})
	a.connRoutes = connhttp.New(a.conns, a.resolver, func(r *http.Request) (access.Principal, error) { return a.sessions.authenticate(r) },
		&connhttp.Options{Prefix: "/ai/connections", PublicURL: base, Logger: log,
			CheckConversation: func(ctx context.Context, p access.Principal, id string) error {
				return a.assistant.CheckConversation(ctx, p, id)
			},
			ConnectionPage: connectionPage, SecureCookies: strings.HasPrefix(base, "https://")})
	// Links: every chat result and MCP tool result links to this server's
	// pages (web.go) under -public-url.
	bounds := dataexec.ConcurrencyOptions{MaxPerPrincipal: cfg.maxPerPrincipal, MaxPerTeam: cfg.maxPerTeam, MaxPerSource: cfg.maxPerSource}
	if state != nil {
		bounds.Shared = pgstore.NewLeases(state) // the team and source bounds hold across instances
	}
	a.executor = dataexec.NewExecutor(catalog, mcpsource.Sources(a.conns, sources), &dataexec.Options{Audit: a.audit, Logger: log,
		Links: dataexec.PublicLinks(base), Concurrency: bounds, Cache: dataexec.CacheOptions{MaxBytes: cacheBytes()}})
	a.keys = access.NewKeys(keyStore, dir, &access.KeyOptions{CacheTTL: cfg.keyCacheTTL})
	if state != nil {
		// What other instances change reaches this one's caches within a
		// moment; the caches' own expiry bounds what a lost notification
		// leaves.
		if err := a.listen(catalog.(*pgstore.Catalog), dir.(*pgstore.Directory)); err != nil {
			return nil, err
		}
	}
	a.sessions = newSessions(demo)
	secret, err := a.oauthSecret(cfg, state == nil)
	if err != nil {
		return nil, err
	}
	a.oauth, err = oauth.New(base, grants, oauthUsers{s: a.sessions, dir: dir}, checker, &oauth.Options{
		Secret: secret, Audit: a.audit, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("%w (set -public-url to the https URL clients reach)", err)
	}
	a.mcp = mcpserver.New(a.executor, gate, mcpserver.AnyOf(a.oauth.Verify, a.keys.Verify), &mcpserver.Options{
		BaseURL: base, Activity: activity, Audit: a.audit, Logger: log, MaxInFlight: cfg.mcpMaxInFlight,
		MaxResultBytes:       cfg.mcpResultBytes,
		ChartImage:           chartimage.PNG,
		AllowedOrigins:       strings.FieldsFunc(cfg.mcpOrigins, func(r rune) bool { return r == ',' || r == ' ' }),
		AuthorizationServers: []string{a.oauth.Issuer()},
		TeamName:             func(_ context.Context, id string) string { return orDefault(teamNames[id], id) },
	})
	a.memory = memory.NewService(memories, keyring, gate, &memory.Options{Policy: policy, Audit: a.audit, Logger: log})
	tools, err := ask.NewRegistry(append(ask.ProductTools(a.executor), ask.ListConnections(a.resolver))...)
	if err != nil {
		return nil, err
	}
	a.assistant = ask.New(model, gate, a.executor, chats, tools, &ask.Options{
		TurnTimeout: cfg.turnTimeout, Sharing: sharing, Memory: a.memory, Logger: log, Tools: ask.RemoteTools(a.conns),
		Secrets: []*regexp.Regexp{sessionPattern},
	})
	if err := a.issueCredentials(ctx, checker, creds); err != nil {
		return nil, err
	}
	if cfg.demoSignIn {
		a.demoSignIn = &demoSignIn{users: demoUsers, token: a.demoToken, secure: strings.HasPrefix(base, "https://")}
	}
	return a, nil
}

// parsePolicies reads -sharing and -memory-policy.
func parsePolicies(cfg config) (ask.SharingPolicy, memory.Policy, error) {
	var sharing ask.SharingPolicy
	switch s := ask.Sharing(cfg.sharing); s {
	case ask.SharingSchema, ask.SharingAggregates, ask.SharingRows:
		sharing = ask.StaticSharing(s)
	default:
		return nil, nil, fmt.Errorf("-sharing %q: must be schema, aggregates or rows", cfg.sharing)
	}
	switch cfg.memoryPolicy {
	case "allow":
		return sharing, memory.StaticPolicy(true), nil
	case "deny":
		return sharing, memory.StaticPolicy(false), nil
	}
	return nil, nil, fmt.Errorf("-memory-policy %q: must be allow or deny", cfg.memoryPolicy)
}

// newProvider builds the chat model from -provider, -model,
// -provider-base-url and -provider-key-env. The provider packages read the
// API key from the named environment variable; it is never printed. An
// unknown provider is an error; an incomplete configuration (no model
// name, no key) leaves the assistant disabled (a nil provider), with a
// log line for the administrator, and the rest of the product serving.
func (a *app) newProvider(cfg config) (ask.Provider, error) {
	var (
		p      ask.Provider
		err    error
		keyEnv string
	)
	switch cfg.provider {
	case "mock":
		a.model = "mock (deterministic, no network)"
		return mock.New(), nil
	case "openai":
		keyEnv = orDefault(cfg.providerKeyEnv, openai.DefaultAPIKeyEnv)
		if cfg.model != "" {
			p, err = openai.New(cfg.model, &openai.Options{BaseURL: cfg.providerBaseURL, APIKeyEnv: cfg.providerKeyEnv, Images: cfg.modelImages})
		}
	case "anthropic":
		keyEnv = orDefault(cfg.providerKeyEnv, anthropic.DefaultAPIKeyEnv)
		if cfg.model != "" {
			p, err = anthropic.New(cfg.model, &anthropic.Options{BaseURL: cfg.providerBaseURL, APIKeyEnv: cfg.providerKeyEnv})
		}
	default:
		return nil, fmt.Errorf("-provider %q: must be mock, openai or anthropic", cfg.provider)
	}
	switch {
	case cfg.model == "":
		err = fmt.Errorf("-provider %s needs -model NAME", cfg.provider)
	case err != nil:
		err = fmt.Errorf("-provider %s: %s", cfg.provider, askbi.ErrorMessage(err))
	}
	if err != nil {
		a.model = "not configured: the assistant is disabled (" + err.Error() + "); MCP and memory keep serving"
		a.log.Warn("the assistant is disabled: its model is not configured", "reason", err.Error())
		return nil, nil
	}
	where := ""
	if u, err := url.Parse(cfg.providerBaseURL); err == nil && u.Host != "" {
		where = " at " + u.Host
	}
	a.model = fmt.Sprintf("%s %s%s (key from $%s)", cfg.provider, cfg.model, where, keyEnv)
	return p, nil
}

// parseAssistantRoles reads -assistant-roles: the roles left out lose
// access.RightUseAssistant. Empty means every role.
func parseAssistantRoles(list string) (map[access.Right][]access.Role, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	allowed := map[access.Role]bool{}
	for r := range strings.SplitSeq(list, ",") {
		role := access.Role(strings.TrimSpace(r))
		if !role.Valid() {
			return nil, fmt.Errorf("-assistant-roles %q: roles are owner, admin, editor and viewer", list)
		}
		allowed[role] = true
	}
	var withdrawn []access.Role
	for _, role := range []access.Role{access.RoleOwner, access.RoleAdmin, access.RoleEditor, access.RoleViewer} {
		if !allowed[role] {
			withdrawn = append(withdrawn, role)
		}
	}
	return map[access.Right][]access.Role{access.RightUseAssistant: withdrawn}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// memoryKeyring returns the keyring sealing memories: the key in
// ASKBI_MEMORY_KEY, or else a development key, kept in the data folder
// (so memories survive restarts) unless state is in memory only.
func (a *app) memoryKeyring(cfg config, inMemory bool) (*memory.StaticKeyring, error) {
	var key []byte
	if v, ok := os.LookupEnv(memoryKeyEnv); ok {
		k, err := memory.ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s", memoryKeyEnv, askbi.ErrorMessage(err))
		}
		key = k
	} else if inMemory {
		key = memory.GenerateKey()
		a.log.Warn(memoryKeyEnv + " is not set: memories are sealed with a throwaway development key; production must set " + memoryKeyEnv + " (base64 of 32 random bytes)")
	} else {
		path := filepath.Join(cfg.dataDir, "memory-key")
		k, err := devMemoryKey(path)
		if err != nil {
			return nil, err
		}
		key = k
		a.log.Warn(memoryKeyEnv+" is not set: memories are sealed with a development key kept in the data folder; production must set "+memoryKeyEnv+" (base64 of 32 random bytes)", "file", path)
	}
	// The key ID is a fingerprint, so memories sealed under another key
	// are reported as such rather than failing to open silently.
	sum := sha256.Sum256(key)
	id := "k" + hex.EncodeToString(sum[:8])
	return memory.NewStaticKeyring(id, map[string][]byte{id: key})
}

// devMemoryKey reads the development memory key at path, creating it
// (0600) on first use.
func devMemoryKey(path string) ([]byte, error) {
	return devKey(path, memory.GenerateKey, func(s string) ([]byte, error) {
		k, err := memory.ParseKey(s)
		if err != nil {
			return nil, errors.New(askbi.ErrorMessage(err))
		}
		return k, nil
	})
}

// devKey reads a development key kept at path with parse, or writes a
// new one from generate (base64, 0600) on first use; of two processes
// starting at once, one writes it and both read it.
func devKey(path string, generate func() []byte, parse func(string) ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	k := generate()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return devKey(path, generate, parse) // another process made it first
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return k, f.Close()
}

// openPostgres opens the state database and prepares the demo warehouse,
// on -database-url or on the private cluster. It returns the state
// database and the warehouse's owner and read-only URLs.
func (a *app) openPostgres(ctx context.Context, cfg config) (state *sqlx.DB, owner, reader string, err error) {
	stateURL, owner := cfg.databaseURL, cfg.databaseURL
	if cfg.databaseURL == "" {
		c, err := startCluster(ctx, cfg.dataDir)
		if err != nil {
			return nil, "", "", err
		}
		a.closers = append(a.closers, c.Stop)
		for _, name := range []string{"askbi", "warehouse"} {
			if err := c.CreateDatabase(ctx, name); err != nil {
				return nil, "", "", err
			}
		}
		stateURL, owner = c.URL("askbi"), c.URL("warehouse")
		a.storage = "PostgreSQL, private cluster in " + cfg.dataDir
	} else {
		a.storage = "PostgreSQL at -database-url"
	}
	a.stateURL = stateURL
	state, err = pgstore.Open(ctx, stateURL, cfg.dbMaxConns)
	if err != nil {
		return nil, "", "", err
	}
	a.closers = append(a.closers, state.Close)
	reader, err = seedWarehouse(ctx, owner, cfg.databaseURL != "")
	if err != nil {
		return nil, "", "", err
	}
	return state, owner, reader, nil
}

// startCluster starts the private cluster, with a superuser password kept
// in the data folder so other local users cannot connect.
func startCluster(ctx context.Context, dir string) (*pgtest.Cluster, error) {
	// Searchable, not readable: the cluster below may run as the postgres
	// system user; the password file stays private.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	pwFile := filepath.Join(dir, "superuser-password")
	pw, err := os.ReadFile(pwFile)
	if errors.Is(err, os.ErrNotExist) {
		pw = []byte(rand.Text())
		if err := os.WriteFile(pwFile, pw, 0o600); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return pgtest.Start(ctx, filepath.Join(dir, "pg"), &pgtest.Options{Password: strings.TrimSpace(string(pw))})
}

// seedWarehouse creates and fills the demo tables in schema warehouse,
// and a SELECT-only role for the SQL source that sees that schema only;
// it returns that role's URL.
//
// With shared (-database-url: askbi's own tables live in the same
// database), the role still reads only schema warehouse, and the
// statement revoking side-effect functions from PUBLIC is left out: the
// state store needs advisory locks, and revoking needs a superuser. The
// SQL guard rejects those functions either way.
func seedWarehouse(ctx context.Context, ownerURL string, shared bool) (string, error) {
	db, err := sqlx.Open("postgres", ownerURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	// One connection holding a lock: instances starting at once on one
	// database seed it one after the other (concurrent CREATE ... IF NOT
	// EXISTS can still collide).
	conn, err := db.Connx(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, warehouseLock); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, warehouseLock)
	for _, q := range warehouseSchema {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("seed warehouse: %w", err)
		}
	}
	// The reader's password is derived from the owner's URL (which holds
	// the owner's own password): every instance on one database sets the
	// same one, so none breaks the new connections of another.
	sum := sha256.Sum256([]byte(readerRole + "\x00" + ownerURL))
	password := hex.EncodeToString(sum[:16])
	role := pgsource.SQLForReadOnlyRole(readerRole, password, warehouseSchemaName)
	if shared {
		role = role[:len(role)-1]
	}
	role = append(role, readerSearchPath...)
	for _, q := range role {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("create the read-only role: %w", err)
		}
	}
	return urlWithUser(ownerURL, readerRole, password)
}

// warehouseLock is the advisory-lock key serializing seedWarehouse.
const warehouseLock = 0x61736b6277 // "askbw"

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", a.mcp)
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", a.mcp.ResourceMetadataHandler())
	mux.Handle("GET /.well-known/oauth-protected-resource", a.mcp.ResourceMetadataHandler())
	as := a.oauth.Handler()
	mux.Handle("/.well-known/oauth-authorization-server", as)
	mux.Handle("/oauth/", as)
	mux.Handle("/account/mcp", as)
	mux.Handle("/account/mcp/", as)
	mux.HandleFunc("/signin", a.signIn)
	mux.HandleFunc("POST /signout", signOut)
	mux.Handle("/api/", datahttp.New(a.executor, a.gate, a.dataAuth, &datahttp.Options{Logger: a.log}))
	a.webRoutes(mux)
	mux.HandleFunc("GET /healthz", httpserve.Live)
	mux.Handle("GET /readyz", a.ready)
	mux.Handle("/ai/", askhttp.New(a.assistant, a.memory, a.sessions.authenticate, &askhttp.Options{
		StreamWindow: a.streamWindow, Logger: a.log}))
	mux.Handle("/ai/connections", a.connRoutes)
	mux.Handle("/ai/connections/", a.connRoutes)
	if a.demoSignIn != nil {
		a.demoSignIn.routes(mux, a.log)
	}
	// Every other path and method answers a JSON error too (404, or 405
	// with Allow).
	mux.Handle("/", httpjson.NoRoute(mux, "/", a.log))
	return a.drain.Handler(mux)
}

// dataAuth authenticates the data routes (/api/): a browser session
// (the cookie, or a bearer session token), or a bearer API key, whose
// scopes the executor applies as on MCP (data:read; data:refresh for
// refresh). An Authorization header, when sent, is the only credential
// looked at. MCP OAuth tokens are for /mcp only.
func (a *app) dataAuth(r *http.Request) (access.Principal, error) {
	if p, err := a.sessions.browser(r); err == nil {
		return p, nil
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		if p, err := a.keys.Verify(r.Context(), strings.TrimSpace(tok)); err == nil {
			return p, nil
		}
	}
	return access.Principal{}, askbi.Errorf(askbi.Unauthenticated, "sign in: send Authorization: Bearer <session_token or api_key>")
}

// demoToken is the session token of the named demo principal.
func (a *app) demoToken(name string) (string, bool) {
	e, ok := a.creds.principal(name)
	return e.SessionToken, ok
}

// principal returns the entry of the named demo principal.
func (c credentials) principal(name string) (credentialEntry, bool) {
	for _, e := range c.Principals {
		if e.Name == name {
			return e, true
		}
	}
	return credentialEntry{}, false
}

// credentials is the -credentials-file document.
type credentials struct {
	BaseURL              string `json:"base_url"`
	MCPURL               string `json:"mcp_url"`
	WarehouseDatabaseURL string `json:"warehouse_database_url,omitempty"`
	// AnalyticsMCP is the demo's own analytics MCP server (loopback), for
	// trying the connection routes with a server of your own.
	AnalyticsMCP *mcpCredentials `json:"analytics_mcp,omitempty"`
	// DemoOAuthMCP is Demo Analytics, the demo's MCP server behind OAuth
	// (loopback; it signs in at once), for trying save and connect.
	DemoOAuthMCP *mcpCredentials   `json:"demo_oauth_mcp,omitempty"`
	Principals   []credentialEntry `json:"principals"`
}

type mcpCredentials struct {
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
}

type credentialEntry struct {
	Name         string   `json:"name"`
	User         string   `json:"user"`
	Team         string   `json:"team"`
	Role         string   `json:"role"`
	Projects     any      `json:"projects"` // "all" or a list of project names
	Scopes       []string `json:"scopes"`
	APIKey       string   `json:"api_key"`
	SessionToken string   `json:"session_token"`
}

// listen passes the changes other instances make on the state database
// to this one's key cache, catalog and directory, until the app closes.
func (a *app) listen(catalog *pgstore.Catalog, dir *pgstore.Directory) error {
	ctx, stop := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { stop(); return nil })
	return pgstore.Listen(ctx, a.stateURL, a.log, func(c pgstore.Change) {
		switch {
		case c.Missed:
			a.keys.ForgetAll()
			catalog.Forget()
			dir.Forget()
		case c.Kind == "key":
			a.keys.Forget(c.ID)
		case c.Kind == "catalog":
			catalog.Forget()
		case c.Kind == "member":
			dir.Forget()
		}
	})
}

// issueCredentials hands out one API key per demo principal and one
// chat session per demo user (alice-read shares alice's: a session is not
// scope-limited), claimed once per store (see demoCreds): every instance
// on one database hands out the same ones, and a start revokes nothing
// another instance handed out.
func (a *app) issueCredentials(ctx context.Context, checker *access.Checker, creds demoCreds) error {
	a.creds.BaseURL, a.creds.MCPURL = a.base, a.base+"/mcp"
	for _, dp := range demoPrincipals {
		owner, err := checker.Live(ctx, access.Principal{UserID: dp.User, TeamID: dp.Team, Auth: access.AuthSession})
		if err != nil {
			return err
		}
		secret, err := creds.apiKey(ctx, a.keys, owner, dp)
		if err != nil {
			return err
		}
		tok, err := creds.session(ctx, a.sessions, dp.Team, dp.User)
		if err != nil {
			return err
		}
		var projects any = "all"
		if !dp.Projects.All {
			var names []string
			for _, id := range dp.Projects.IDs {
				names = append(names, projectNames[id])
			}
			projects = names
		}
		a.creds.Principals = append(a.creds.Principals, credentialEntry{
			Name: dp.Name, User: dp.User, Team: dp.Team, Role: string(dp.Role), Projects: projects, Scopes: dp.Scopes, APIKey: secret,
			SessionToken: tok,
		})
	}
	return nil
}

func (a *app) writeCredentials(path string) error {
	b, err := json.MarshalIndent(a.creds, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// urlWithUser returns raw with its user and password replaced.
func urlWithUser(raw, user, password string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}
