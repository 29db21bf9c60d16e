package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clientAuthScenarios are the conformance suite's client auth scenarios
// (0.2.0-alpha.12) that askbi's outbound OAuth runs, each with how it is
// started: the "auth" suite at 2025-11-25 and at 2026-07-28 (14 each),
// and the scenarios outside that suite, one by one: those of 2026-07-28
// and the 2025-03-26 back-compatibility ones.
var clientAuthSuites = []string{"2025-11-25", "2026-07-28"}

var clientAuthScenarios = []string{
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
	"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing",
	"auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch",
	"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
}

// clientAuthExtensions are the suite's extension scenarios, which do not
// apply (docs/oauth.md): other grants (client credentials, token
// exchange, JWT bearer) and sender-constrained tokens (DPoP) that a
// person's sign-in to a team's connection does not use. The test fails
// when one starts passing, so the list cannot go stale.
var clientAuthExtensions = []string{
	"auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/enterprise-managed-authorization",
	"auth/dpop", "auth/dpop-nonce", "auth/wif-jwt-bearer",
}

// allChecks reads every checks.json under out, by scenario.
func allChecks(t *testing.T, out string) map[string][]check {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "auth", "*", "checks.json"))
	got := map[string][]check{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []check
		if err := json.Unmarshal(raw, &checks); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(f))
		if i := strings.Index(name, "-20"); i > 0 {
			name = name[:i] // the run's timestamp
		}
		got["auth/"+name] = checks
	}
	return got
}

// TestConformanceClientAuth runs the MCP conformance suite's client auth
// scenarios against examples/oauthclient, askbi's outbound OAuth
// (dataexec/mcpsource) connecting headlessly: every applicable scenario
// passes every check, and every extension still fails.
func TestConformanceClientAuth(t *testing.T) {
	bin := mustTools(t)
	client := filepath.Join(t.TempDir(), "oauthclient")
	if out, err := exec.Command("go", "build", "-o", client, "../oauthclient").CombinedOutput(); err != nil {
		t.Fatalf("build the client: %v\n%s", err, out)
	}
	command := client + " -client-metadata-url https://conformance-test.local/client-metadata.json"
	var mu sync.Mutex
	total := map[string]int{}
	run := func(t *testing.T, args ...string) map[string][]check {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out := t.TempDir()
		cmd := peerCmd(ctx, t, bin, "conformance", append([]string{"client", "--command", command, "-o", out}, args...)...)
		b, _ := cmd.CombinedOutput()
		got := allChecks(t, out)
		if len(got) == 0 {
			t.Fatalf("conformance %v wrote no checks\n%s", args, b)
		}
		return got
	}
	pass := func(t *testing.T, name string, checks []check) {
		counts := countOf(checks)
		mu.Lock()
		for k, v := range counts {
			total[k] += v
		}
		total["scenarios"]++
		mu.Unlock()
		if counts["FAILURE"] > 0 || counts["WARNING"] > 0 || counts["SUCCESS"] == 0 {
			t.Errorf("%s: %v; want every check to pass:\n%+v", name, counts, checks)
		}
	}
	t.Run("suites", func(t *testing.T) {
		for _, v := range clientAuthSuites {
			t.Run(v, func(t *testing.T) {
				t.Parallel()
				got := run(t, "--suite", "auth", "--spec-version", v)
				if len(got) != 14 {
					t.Errorf("the auth suite at %s ran %d scenarios; want 14", v, len(got))
				}
				for name, checks := range got {
					pass(t, v+" "+name, checks)
				}
			})
		}
		for _, s := range clientAuthScenarios {
			t.Run(s, func(t *testing.T) {
				t.Parallel()
				for name, checks := range run(t, "--scenario", s) {
					pass(t, name, checks)
				}
			})
		}
		for _, s := range clientAuthExtensions {
			t.Run(s, func(t *testing.T) {
				t.Parallel()
				for name, checks := range run(t, "--scenario", s) {
					if countOf(checks)["FAILURE"] == 0 {
						t.Errorf("%s passes now: take it off the not-applicable list (docs/oauth.md)", name)
					}
				}
			})
		}
	})
	t.Logf("client auth: %d scenario runs, %d checks passed, %d failed, %d warnings",
		total["scenarios"], total["SUCCESS"], total["FAILURE"], total["WARNING"])
}
