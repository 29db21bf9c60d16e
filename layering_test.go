package askbi_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/askbi/askbi"

// layer is one entry of layers.
type layer struct {
	pkg   string // a package and its subpackages
	may   []string
	never []string // third-party imports it must not have
	// tests are what its tests may import besides, each with its reason.
	tests []string
}

// layers says which of the module's packages each package may import
// (its own subpackages, and nothing under examples/), in its code and in
// its tests. A package not listed here fails the test, so a new package
// has to take a place. An entry of may covers that package and its
// subpackages, except the adapters: an adapter is a layer of its own,
// imported only where it is named, also by the package it adapts and
// that package's tests (mayImport). An exception for tests is named in
// tests, with its reason.
var layers = []layer{
	// The root: overview and error vocabulary only. Its Example is a
	// whole host, so its tests import what a host mounts.
	{pkg: "", may: nil, tests: []string{"access", "ask", "ask/askhttp", "ask/provider/mock", "dataexec", "mcpserver", "workspace"}},
	{pkg: "access", may: []string{"", "internal/memtable"}},
	// The record table of the in-memory stores (API keys, OAuth grants):
	// a leaf on the root, so access can use it.
	{pkg: "internal/memtable", may: []string{""}},
	// The keyring and AES-GCM sealing of every secret at rest (memories,
	// connection tokens): a leaf, so memory and dataexec share it.
	{pkg: "seal", may: []string{""}},
	{pkg: "internal", may: []string{"", "access"}},
	// The chart component (embedded JavaScript and CSS) that the page and
	// the MCP app both draw with: a leaf.
	{pkg: "chartview", may: nil},
	// A test client of the chat API, for the tests of askhttp and of the
	// reference server.
	{pkg: "internal/chattest", may: []string{"", "ask", "internal"}},
	// The workspace catalog: the host's dashboards, charts, datasets and
	// connections, data only; every package that reads or writes them
	// sits on it.
	{pkg: "workspace", may: []string{"", "access"}},
	// OpenTelemetry instrumentation: a leaf on the root, on the
	// OpenTelemetry API alone (the SDK and its exporters are in
	// telemetry/otelexport, which only a host imports).
	{pkg: "telemetry", may: []string{""}, never: otelSDK,
		// Its tests read spans and metrics from the SDK's recorders.
		tests: []string{"go.opentelemetry.io/otel/sdk"}},
	// The exporters a server wires: Prometheus and OTLP/HTTP.
	{pkg: "telemetry/otelexport", may: []string{"", "telemetry"}},
	// Usage records, the usage view and token budgets, on access; Ask
	// checks and charges through it, the MCP server feeds it through the
	// audit log alone.
	{pkg: "usage", may: []string{"", "access", "telemetry", "internal"}, never: otelSDK},
	// The usage routes: the view and the budgets over HTTP.
	{pkg: "usage/usagehttp", may: []string{"", "access", "usage", "internal"}},
	{pkg: "dataexec", may: []string{"", "access", "seal", "workspace", "telemetry", "internal"}, never: otelSDK,
		// Its tests read its spans from the OpenTelemetry SDK's recorder.
		tests: []string{"go.opentelemetry.io/otel/sdk"}},
	// The Data API and the pages' routes: the executor over HTTP, never
	// the assistant.
	// Its tests compare the Data API's answers with the MCP tools'.
	{pkg: "dataexec/datahttp", may: []string{"", "access", "workspace", "dataexec", "internal"}, tests: []string{"mcpserver"}},
	{pkg: "memory", may: []string{"", "access", "seal", "internal"}},
	// Connections, the core: the stored connections, their discovery and
	// per-tool access. It reaches remote servers through
	// dataexec/mcpsource's client, never another adapter, and it opens no
	// secret: it asks the sign-in for a credential.
	{pkg: "connections", may: []string{"", "access", "workspace", "seal", "dataexec", "dataexec/mcpsource", "internal"}},
	// The sign-in, on the core: the one package that opens a connection's
	// secrets and talks to authorization servers.
	{pkg: "connections/signin", may: []string{"", "access", "seal", "dataexec", "dataexec/mcpsource", "connections", "internal"}},
	// The remote tools Ask and datasets call, on the core and a
	// credential.
	{pkg: "connections/remote", may: []string{"", "access", "workspace", "seal", "dataexec", "dataexec/mcpsource", "connections", "internal"}},
	// The test bed of the connection packages and those built on them.
	{pkg: "internal/conntest", may: []string{"", "access", "workspace", "seal", "dataexec", "connections", "internal"}},
	// The connection routes: the connections, their sign-in and the
	// resolver's setup card over HTTP, never the assistant.
	{pkg: "connections/connhttp", may: []string{"", "access", "workspace", "seal", "dataexec", "connections", "connresolve", "internal"}},
	// The resolver: which connection or setup answers a question; it
	// reads the usable remote connections through a small interface.
	{pkg: "connresolve", may: []string{"", "access", "workspace", "dataexec", "dataexec/mcpsource", "connections", "internal"}},
	// MCP-backed datasets: the go-sdk client and a dataexec.Source.
	{pkg: "dataexec/mcpsource", may: []string{"", "access", "workspace", "dataexec", "internal"}},
	{pkg: "dataexec/pgsource", may: []string{"", "access", "workspace", "dataexec", "internal"}},
	// MySQL and MariaDB: go-sql-driver/mysql and TiDB's parser.
	{pkg: "dataexec/mysqlsource", may: []string{"", "access", "workspace", "dataexec", "internal"}},
	// The MCP path never calls a model, never creates a conversation and
	// never reads memory: it cannot reach the packages that do.
	{pkg: "mcpserver", may: []string{"", "access", "workspace", "dataexec", "chartview", "telemetry", "internal"},
		never: append([]string{"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go"}, otelSDK...),
		// Its benchmarks run the tools on a real PostgreSQL source, and
		// read spans and metrics from the OpenTelemetry SDK.
		tests: []string{"dataexec/pgsource", "github.com/jmoiron/sqlx", "github.com/lib/pq", "go.opentelemetry.io/otel/sdk"}},
	// The optional PNG of create_chart_preview (gonum/plot), out of
	// mcpserver so that a host that does not opt in does not link gonum.
	{pkg: "mcpserver/chartimage", may: []string{"", "workspace", "dataexec"}},
	{pkg: "ask", may: []string{"", "access", "workspace", "seal", "dataexec", "memory", "connections", "connresolve", "usage", "telemetry", "internal"},
		never: otelSDK, tests: []string{"go.opentelemetry.io/otel/sdk"}},
	// The chat routes: the assistant over HTTP.
	{pkg: "ask/askhttp", may: []string{"", "access", "workspace", "ask", "dataexec", "memory", "connresolve", "internal"}},
	// The evaluation harness: it drives the assistant as a host does (the
	// catalog, executor and gate a host passes, list_connections over the
	// resolver for the demo workspace) and reads no adapter: a host runs
	// it in process against its own catalog.
	{pkg: "ask/askeval", may: []string{"", "access", "workspace", "dataexec", "ask", "connections", "connresolve", "usage"}},
	// The model providers' shared test suite (a recording server and the
	// tests of ask.Provider), which only the providers' tests import.
	{pkg: "ask/provider/internal/providertest", may: []string{"", "ask"}},
	// Serving helpers around the SDK's HTTP handlers (server limits,
	// readiness, drain): a host imports them beside mcpserver or askhttp.
	{pkg: "httpserve", may: []string{"", "access", "internal"}},
	// Commands (package main) that drive the reference server as a
	// process, such as the load benchmark cmd/mcpload: internal helpers
	// only.
	{pkg: "cmd", may: []string{"internal"}},
	// The evaluation command: flags around ask/askeval on the demo
	// workspace, and the provider its flags name (ask/provider).
	{pkg: "cmd/askeval", may: []string{"", "ask", "ask/askeval", "ask/provider"}},
	// The PostgreSQL stores of every SDK interface, the shared limits and
	// the change feed: an adapter of its own, which a host imports beside
	// the packages whose interfaces it implements. Its tests run those
	// packages' conformance suites.
	{pkg: "pgstore", may: []string{"", "access", "workspace", "seal", "dataexec", "dataexec/pgsource", "memory", "connections", "ask", "mcpserver", "usage", "internal"}},
	{pkg: "examples", may: []string{"", "access", "workspace", "seal", "chartview", "dataexec", "memory", "connections", "connresolve", "ask", "mcpserver", "internal", "httpserve", "examples",
		"dataexec/pgsource", "dataexec/mysqlsource", "dataexec/mcpsource", "dataexec/datahttp", "connections/connhttp", "ask/askhttp", "pgstore",
		"telemetry", "telemetry/otelexport", "usage", "usage/usagehttp"}},
}

// adapters are the packages that put a part on a transport or a store
// (HTTP, PostgreSQL, MCP): layers of their own, which no package imports
// unless its entry names them.
var adapters = []string{"dataexec/pgsource", "dataexec/mysqlsource", "dataexec/mcpsource", "dataexec/datahttp", "connections/connhttp", "ask/askhttp", "pgstore",
	"usage/usagehttp", "telemetry/otelexport"}

// otelSDK is the OpenTelemetry SDK and its exporters: a host's choice,
// which the SDK's packages never link (they use the API alone).
var otelSDK = []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "github.com/prometheus/client_golang"}

// drivers are the database drivers; only the SQL adapters (and their
// test harnesses) use them.
var drivers = []string{"github.com/lib/pq", "github.com/go-sql-driver/mysql", "github.com/jmoiron/sqlx"}

var driverUsers = []string{"dataexec/pgsource", "dataexec/mysqlsource", "pgstore", "examples/refserver", "internal/pgtest", "internal/mysqltest", "cmd/mcpload"}

// parsers are the SQL parsers of the guards, each in its source alone.
var parsers = map[string]string{
	"github.com/pganalyze/pg_query_go": "dataexec/pgsource",
	"github.com/pingcap/tidb":          "dataexec/mysqlsource",
}

// providerSDKs are the model providers' SDKs; only ask/provider uses them.
var providerSDKs = []string{"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go"}

// TestLayering enforces the dependency direction of SPEC.md, in code and
// in tests: the root imports nothing of ours, access only the root,
// dataexec, memory, connections and connresolve sit on access, ask and mcpserver on
// top and never on each other, adapters are layers of their own, nothing
// imports examples, and database drivers and model SDKs stay in their
// adapters.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}{{range .Imports}} {{.}}{{end}} |{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/"), fields[1:]
		l, ok := layerOf(pkg)
		if !ok {
			t.Errorf("package %q has no place in the layers", pkg)
			continue
		}
		inTests := false
		for _, imp := range imports {
			if imp == "|" {
				inTests = true
				continue
			}
			if inTests && slices.ContainsFunc(l.tests, func(t string) bool { return imp == t || imp == module+"/"+t || strings.HasPrefix(imp, t+"/") }) {
				continue
			}
			if rel, ours := strings.CutPrefix(imp, module); ours {
				if rel = strings.TrimPrefix(rel, "/"); !mayImport(pkg, rel, l) {
					t.Errorf("%s imports %s", orRoot(pkg), orRoot(rel))
				}
				continue
			}
			for _, n := range l.never {
				if strings.HasPrefix(imp, n) {
					t.Errorf("%s imports %s", orRoot(pkg), imp)
				}
			}
			if hasPrefix(imp, drivers) && !hasPrefix(pkg, driverUsers) {
				t.Errorf("%s imports the database driver %s", orRoot(pkg), imp)
			}
			for p, user := range parsers {
				if strings.HasPrefix(imp, p) && !within(pkg, user) {
					t.Errorf("%s imports the SQL parser %s, which only %s uses", orRoot(pkg), imp, user)
				}
			}
			if hasPrefix(imp, providerSDKs) && !within(pkg, "ask/provider") {
				t.Errorf("%s imports the model SDK %s", orRoot(pkg), imp)
			}
			if imp == "go.opentelemetry.io/otel" {
				// That package holds the global providers and propagator:
				// a host passes its own through options instead.
				t.Errorf("%s imports go.opentelemetry.io/otel, the package of the global providers", orRoot(pkg))
			}
		}
	}
}

// layerOf returns the layer of pkg: the entry of layers with the longest
// pkg that holds it.
func layerOf(pkg string) (layer, bool) {
	found := -1
	for i, l := range layers {
		if within(pkg, l.pkg) && (found < 0 || len(l.pkg) > len(layers[found].pkg)) {
			found = i
		}
	}
	if found < 0 {
		return layer{}, false
	}
	return layers[found], true
}

// TestMayImport: the import rule of TestLayering, on imports no package
// has today, so that a rule that lets them through fails here before a
// package takes advantage of it.
func TestMayImport(t *testing.T) {
	for _, tt := range []struct {
		pkg, imp string
		want     bool
	}{
		// A package's own adapters are layers of their own (its tests
		// compile into the package, so they are held to the same rule).
		{"dataexec", "dataexec/pgsource", false},
		{"dataexec", "dataexec/mcpsource", false},
		{"dataexec", "dataexec/datahttp", false},
		{"ask", "ask/askhttp", false},
		{"connections", "connections/connhttp", false},
		{"workspace/workspacetest", "dataexec/pgsource", false},
		// Adapters do not import each other.
		{"dataexec/pgsource", "dataexec/mcpsource", false},
		{"dataexec/mysqlsource", "dataexec/pgsource", false},
		{"dataexec", "dataexec/mysqlsource", false},
		// What stays allowed: an adapter's own packages, the package it
		// adapts, a layer's own subpackages that are not adapters, an
		// adapter where the entry names it.
		{"dataexec/pgsource", "dataexec/pgsource", true},
		{"dataexec/pgsource", "dataexec/pgsource/internal/x", true},
		{"dataexec/pgsource", "dataexec", true},
		{"dataexec", "workspace/workspacetest", true},
		{"ask", "ask/asktest", true},
		{"connresolve", "dataexec/mcpsource", true},
		{"connections", "dataexec/mcpsource", true},
		{"connections/signin", "connections", true},
		{"connections/remote", "connections", true},
		// The core stands apart from the resolver and the routes.
		{"connections", "connresolve", false},
		{"connresolve", "connections/connhttp", false},
		{"examples/refserver", "dataexec/pgsource", true},
		// The evaluation harness drives the assistant in process, not
		// over its HTTP adapter.
		{"ask/askeval", "ask/askhttp", false},
		{"examples/refserver", "dataexec/mysqlsource", true},
		// Nothing outside examples/ imports it.
		{"dataexec", "examples/refserver", false},
	} {
		l, ok := layerOf(tt.pkg)
		if !ok {
			t.Fatalf("%s has no layer", tt.pkg)
		}
		if got := mayImport(tt.pkg, tt.imp, l); got != tt.want {
			t.Errorf("mayImport(%s, %s) = %v, want %v", tt.pkg, tt.imp, got, tt.want)
		}
	}
}

// mayImport reports whether package pkg, of layer l, may import rel, a
// package of this module: pkg itself (its external tests), its layer's
// own subpackages, and what l.may names. An adapter is a layer of its
// own even below the package it adapts: only packages inside it, and
// those whose entry names it, may import it. Nothing outside examples/
// imports examples/.
func mayImport(pkg, rel string, l layer) bool {
	if within(rel, "examples") && !within(pkg, "examples") {
		return false
	}
	if rel == pkg {
		return true
	}
	if a := adapterOf(rel); l.pkg != "" && within(rel, l.pkg) && (a == "" || within(pkg, a)) {
		return true
	}
	for _, m := range l.may {
		if within(rel, m) && (m != "" || rel == "") && (adapterOf(rel) == "" || rel == m) {
			return true
		}
	}
	return false
}

// TestCommands keeps commands where a newcomer looks for them: a package
// main lives under cmd/ (tools of this repository) or examples/ (the
// reference server and clients), never among the SDK's packages or under
// internal/.
func TestCommands(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, name, _ := strings.Cut(line, " ")
		pkg := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
		if name == "main" && !within(pkg, "cmd") && !within(pkg, "examples") {
			t.Errorf("command %s is outside cmd/ and examples/", pkg)
		}
	}
}

// within reports whether pkg is base or below it; "" is the root alone.
func within(pkg, base string) bool {
	if base == "" {
		return pkg == ""
	}
	return pkg == base || strings.HasPrefix(pkg, base+"/")
}

// adapterOf returns the adapter pkg is or is below, or "" when none.
func adapterOf(pkg string) string {
	for _, a := range adapters {
		if within(pkg, a) {
			return a
		}
	}
	return ""
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func orRoot(pkg string) string {
	if pkg == "" {
		return "askbi"
	}
	return pkg
}
