package access_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
)

// newDirectory returns a directory with team acme (projects growth, finance)
// and team globex (project ops).
func newDirectory() *access.MemoryDirectory {
	d := access.NewMemoryDirectory()
	d.AddProject("acme", "growth")
	d.AddProject("acme", "finance")
	d.AddProject("globex", "ops")
	d.SetMember("acme", "owner", access.RoleOwner, access.Projects{})
	d.SetMember("acme", "admin", access.RoleAdmin, access.ProjectSet("growth"))
	d.SetMember("acme", "editor", access.RoleEditor, access.ProjectSet("growth", "finance"))
	d.SetMember("acme", "viewer", access.RoleViewer, access.ProjectSet("growth", "finance"))
	d.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	return d
}

var (
	dashGrowth  = access.Entity{Type: access.TypeDashboard, ID: "d1", TeamID: "acme", ProjectID: "growth"}
	teamAcme    = access.Entity{Type: access.TypeTeam, ID: "acme", TeamID: "acme"}
	dashGlobex  = access.Entity{Type: access.TypeDashboard, ID: "d9", TeamID: "globex", ProjectID: "ops"}
	dashFinance = access.Entity{Type: access.TypeDashboard, ID: "d2", TeamID: "acme", ProjectID: "finance"}
)

// TestMatrix is the role × auth × scope × right matrix on an entity the
// principal can see.
func TestMatrix(t *testing.T) {
	all := access.AllScopes
	readOnly := []access.Scope{access.ScopeDataRead}
	const (
		ok    = askbi.Code("")
		scope = askbi.ScopeRequired
		deny  = askbi.Forbidden
	)
	session := func(user string) access.Principal {
		return access.Principal{UserID: user, TeamID: "acme", Auth: access.AuthSession}
	}
	key := func(user string, scopes []access.Scope, projects access.Projects) access.Principal {
		return access.Principal{UserID: user, TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: scopes, Projects: projects}
	}
	oauth := func(user string, scopes []access.Scope) access.Principal {
		p := key(user, scopes, access.AllProjects())
		p.Auth = access.AuthOAuth
		return p
	}
	// Columns follow access.Rights: read, refresh, preview_chart, explore,
	// save_dataset, edit_dashboard, manage_connections, approve_tools,
	// use_assistant, manage_memory, call_mutating_tool,
	// call_destructive_tool, view_usage, view_team_usage, set_budgets.
	tests := []struct {
		name string
		p    access.Principal
		want []askbi.Code
	}{
		{"session owner", session("owner"), []askbi.Code{ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"session admin", session("admin"), []askbi.Code{ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok}},
		{"session editor", session("editor"), []askbi.Code{ok, ok, ok, ok, ok, ok, deny, deny, ok, ok, ok, deny, ok, deny, deny}},
		{"session viewer", session("viewer"), []askbi.Code{ok, ok, ok, deny, deny, deny, deny, deny, ok, ok, deny, deny, ok, deny, deny}},
		{"key owner all scopes all projects", key("owner", all, access.AllProjects()), []askbi.Code{ok, ok, ok, ok, ok, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key owner all scopes one project", key("owner", all, access.ProjectSet("growth")), []askbi.Code{ok, ok, deny, deny, deny, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key owner read only", key("owner", readOnly, access.AllProjects()), []askbi.Code{ok, scope, scope, ok, scope, scope, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key owner no scopes", key("owner", nil, access.AllProjects()), []askbi.Code{scope, scope, scope, scope, scope, scope, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key admin all scopes", key("admin", all, access.AllProjects()), []askbi.Code{ok, ok, ok, ok, ok, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key editor all scopes all projects", key("editor", all, access.AllProjects()), []askbi.Code{ok, ok, deny, deny, deny, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key viewer all scopes", key("viewer", all, access.AllProjects()), []askbi.Code{ok, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"key viewer read only", key("viewer", readOnly, access.AllProjects()), []askbi.Code{ok, scope, scope, deny, scope, scope, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"oauth owner all scopes", oauth("owner", all), []askbi.Code{ok, ok, ok, ok, ok, ok, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
		{"oauth owner read and refresh", oauth("owner", []access.Scope{access.ScopeDataRead, access.ScopeDataRefresh}), []askbi.Code{ok, ok, scope, ok, scope, scope, deny, deny, deny, deny, deny, deny, deny, deny, deny}},
	}
	c := access.NewChecker(newDirectory(), nil)
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []askbi.Code
			for _, r := range access.Rights {
				e := dashGrowth
				if r == access.RightManageConnections || r == access.RightApproveTools || r == access.RightUseAssistant || r == access.RightManageMemory ||
					r == access.RightCallMutatingTool || r == access.RightCallDestructiveTool || r == access.RightViewUsage ||
					r == access.RightViewTeamUsage || r == access.RightSetBudgets {
					e = teamAcme
				}
				got = append(got, askbi.ErrorCode(c.Can(ctx, tt.p, r, e)))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("codes for %v mismatch (-want +got):\n%s", access.Rights, diff)
			}
		})
	}
}

func TestReach(t *testing.T) {
	c := access.NewChecker(newDirectory(), nil)
	ctx := context.Background()
	tests := []struct {
		name string
		p    access.Principal
		e    access.Entity
		want askbi.Code
	}{
		{"other team's dashboard is not found", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession}, dashGlobex, askbi.NotFound},
		{"principal claiming another team", access.Principal{UserID: "owner", TeamID: "globex", Auth: access.AuthSession}, dashGlobex, askbi.Forbidden},
		{"selected-project key cannot read other project", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.ProjectSet("growth")}, dashFinance, askbi.NotFound},
		{"selected-project key reads its project", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.ProjectSet("growth")}, dashGrowth, ""},
		{"key wider than the live grants", access.Principal{UserID: "viewer", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.AllProjects()}, access.Entity{Type: access.TypeChart, ID: "c", TeamID: "acme", ProjectID: "secret"}, askbi.NotFound},
		{"team-wide entity is visible", access.Principal{UserID: "viewer", TeamID: "acme", Auth: access.AuthSession}, access.Entity{Type: access.TypeConnection, ID: "w", TeamID: "acme"}, ""},
		{"token without credential ID", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthAPIKey, Scopes: access.AllScopes, Projects: access.AllProjects()}, dashGrowth, askbi.Unauthenticated},
		{"empty principal", access.Principal{}, dashGrowth, askbi.Unauthenticated},
		{"unknown user", access.Principal{UserID: "mallory", TeamID: "acme", Auth: access.AuthSession}, dashGrowth, askbi.Forbidden},
		// A private entity (a chart preview) reaches its owner alone, by
		// session or key; the team's owner does not reach another's.
		{"owner's private entity", access.Principal{UserID: "viewer", TeamID: "acme", Auth: access.AuthSession}, previewOf("viewer"), ""},
		{"owner's private entity by key", access.Principal{UserID: "viewer", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.AllProjects()}, previewOf("viewer"), ""},
		{"another member's private entity", access.Principal{UserID: "editor", TeamID: "acme", Auth: access.AuthSession}, previewOf("viewer"), askbi.NotFound},
		{"another member's private entity, team owner", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession}, previewOf("viewer"), askbi.NotFound},
		{"private entity with no owner", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession}, previewOf(""), askbi.NotFound},
		{"an owner on a shared entity changes nothing", access.Principal{UserID: "editor", TeamID: "acme", Auth: access.AuthSession},
			access.Entity{Type: access.TypeChart, ID: "c", TeamID: "acme", ProjectID: "growth", OwnerID: "viewer"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := askbi.ErrorCode(c.Can(ctx, tt.p, access.RightRead, tt.e)); got != tt.want {
				t.Errorf("Can(read) = %q, want %q", got, tt.want)
			}
		})
	}
}

// previewOf is a private chart in project growth owned by user.
func previewOf(user string) access.Entity {
	return access.Entity{Type: access.TypeChart, ID: "preview", TeamID: "acme", ProjectID: "growth", Private: true, OwnerID: user}
}

func TestAllowNeedsLivePrincipal(t *testing.T) {
	p := access.Principal{UserID: "owner", TeamID: "acme", Role: access.RoleOwner, Projects: access.AllProjects(), Auth: access.AuthSession}
	if got := askbi.ErrorCode(access.Allow(p, access.RightRead, dashGrowth)); got != askbi.Internal {
		t.Errorf("Allow(unresolved) = %q, want internal", got)
	}
}

func TestLiveMembership(t *testing.T) {
	dir := newDirectory()
	c := access.NewChecker(dir, nil)
	ctx := context.Background()
	p := access.Principal{UserID: "editor", TeamID: "acme", Auth: access.AuthSession}
	if err := c.Can(ctx, p, access.RightEditDashboard, dashGrowth); err != nil {
		t.Fatalf("editor edit: %v", err)
	}
	dir.SetMember("acme", "editor", access.RoleViewer, access.ProjectSet("growth"))
	if got := askbi.ErrorCode(c.Can(ctx, p, access.RightEditDashboard, dashGrowth)); got != askbi.Forbidden {
		t.Errorf("downgraded edit = %q, want forbidden", got)
	}
	if got := askbi.ErrorCode(c.Can(ctx, p, access.RightRead, dashFinance)); got != askbi.NotFound {
		t.Errorf("read of a revoked project = %q, want not_found", got)
	}
	dir.RemoveMember("acme", "editor")
	if got := askbi.ErrorCode(c.Can(ctx, p, access.RightRead, dashGrowth)); got != askbi.Forbidden {
		t.Errorf("removed member read = %q, want forbidden", got)
	}
}

func TestParseScopes(t *testing.T) {
	got, err := access.ParseScopes([]string{"data:refresh", "data:read", "data:read"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]access.Scope{access.ScopeDataRead, access.ScopeDataRefresh}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{nil, {}, {""}, {"data:write"}, {"DATA:READ"}, {"data:read", "admin"}} {
		if _, err := access.ParseScopes(bad); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("ParseScopes(%q) = %v, want invalid_argument", bad, err)
		}
	}
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newKeys(t *testing.T) (*access.Keys, *access.MemoryKeyStore, *access.MemoryDirectory, *access.Checker, *clock) {
	t.Helper()
	dir := newDirectory()
	store := access.NewMemoryKeyStore()
	clk := &clock{time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	return access.NewKeys(store, dir, &access.KeyOptions{Now: clk.Now}), store, dir, access.NewChecker(dir, nil), clk
}

func MustLive(t *testing.T, c *access.Checker, user, team string) access.Principal {
	t.Helper()
	p, err := c.Live(context.Background(), access.Principal{UserID: user, TeamID: team, Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeys(t *testing.T) {
	ctx := context.Background()
	keys, store, dir, c, clk := newKeys(t)
	owner := MustLive(t, c, "owner", "acme")

	secret, k, err := keys.Create(ctx, owner, access.KeyRequest{Name: "ci", Scopes: []string{"data:read"}, Projects: access.ProjectSet("growth")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "askbi_"+k.Prefix+"_") || strings.Contains(fmt.Sprintf("%+v", k), secret[len("askbi_")+13:]) {
		t.Errorf("key %+v does not match secret shape or leaks it", k)
	}
	p, err := keys.Verify(ctx, secret)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := access.Principal{UserID: "owner", TeamID: "acme", Role: access.RoleOwner, Projects: access.ProjectSet("growth"), Scopes: []access.Scope{access.ScopeDataRead}, Auth: access.AuthAPIKey, CredentialID: k.ID}
	if diff := cmp.Diff(want, p, cmp.AllowUnexported(access.Principal{}), cmpopts.IgnoreFields(access.Principal{}, "read")); diff != "" {
		t.Errorf("Verify mismatch (-want +got):\n%s", diff)
	}
	if got, _ := store.ByPrefix(ctx, k.Prefix); !got.LastUsedAt.Equal(clk.t) {
		t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, clk.t)
	}
	if err := c.Can(ctx, p, access.RightRead, dashGrowth); err != nil {
		t.Errorf("key read of its project: %v", err)
	}
	if got := askbi.ErrorCode(c.Can(ctx, p, access.RightRead, dashFinance)); got != askbi.NotFound {
		t.Errorf("key read of another project = %q, want not_found", got)
	}

	// Tampering with any part of the key fails the same way.
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	for name, bad := range map[string]string{
		"empty":          "",
		"garbage":        "not a key",
		"wrong secret":   flip(secret, len(secret)-1),
		"unknown prefix": flip(secret, len("askbi_")),
		"truncated":      secret[:len(secret)-1],
		"extra":          secret + "a",
		"upper case":     strings.ToUpper(secret),
		"bearer prefix":  "Bearer " + secret,
		"nul byte":       secret[:len(secret)-1] + "\x00",
		"utf8":           secret[:len(secret)-2] + "é",
	} {
		_, err := keys.Verify(ctx, bad)
		if askbi.ErrorCode(err) != askbi.Unauthenticated || askbi.ErrorMessage(err) != "invalid or revoked API key" {
			t.Errorf("Verify(%s) = %v, want unauthenticated", name, err)
		}
	}

	// A downgraded owner's key loses admin-only rights at once.
	secretAll, _, err := keys.Create(ctx, owner, access.KeyRequest{Name: "all2", Scopes: []string{"data:read", "charts:preview"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	pAll, err := keys.Verify(ctx, secretAll)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Can(ctx, pAll, access.RightPreviewChart, dashFinance); err != nil {
		t.Errorf("owner all-project key preview: %v", err)
	}
	dir.SetMember("acme", "owner", access.RoleEditor, access.ProjectSet("growth"))
	if got := askbi.ErrorCode(c.Can(ctx, pAll, access.RightPreviewChart, dashGrowth)); got != askbi.Forbidden {
		t.Errorf("downgraded key preview = %q, want forbidden", got)
	}
	if got := askbi.ErrorCode(c.Can(ctx, pAll, access.RightRead, dashFinance)); got != askbi.NotFound {
		t.Errorf("downgraded key read of a lost project = %q, want not_found", got)
	}

	// A removed member's key is refused at once, cached or not.
	dir.RemoveMember("acme", "owner")
	if _, err := keys.Verify(ctx, secret); askbi.ErrorCode(err) != askbi.Unauthenticated {
		t.Errorf("removed member Verify = %v, want unauthenticated", err)
	}
	dir.SetMember("acme", "owner", access.RoleOwner, access.AllProjects())

	// A revoked key is refused; only its owner can revoke it.
	editor := MustLive(t, c, "editor", "acme")
	if err := keys.Revoke(ctx, editor, k.ID); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("Revoke by another user = %v, want not_found", err)
	}
	if _, err := keys.Verify(ctx, secret); err != nil {
		t.Errorf("Verify after a refused revoke: %v", err)
	}
	if err := keys.Revoke(ctx, MustLive(t, c, "owner", "acme"), k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(ctx, secret); askbi.ErrorCode(err) != askbi.Unauthenticated {
		t.Errorf("revoked Verify = %v, want unauthenticated", err)
	}
}

// failingKeyStore fails every read with Unavailable while down.
type failingKeyStore struct {
	*access.MemoryKeyStore
	down  bool
	reads int
}

func (s *failingKeyStore) ByPrefix(ctx context.Context, prefix string) (access.Key, error) {
	s.reads++
	if s.down {
		return access.Key{}, askbi.Errorf(askbi.Unavailable, "the database is unavailable")
	}
	return s.MemoryKeyStore.ByPrefix(ctx, prefix)
}

// TestKeyCache: a verified key is served from memory for CacheTTL, also
// while the store is down; after that the store's failure shows as
// Unavailable; a revocation on this Keys stops the key at once, and
// failures are never cached.
func TestKeyCache(t *testing.T) {
	ctx := context.Background()
	dir := newDirectory()
	store := &failingKeyStore{MemoryKeyStore: access.NewMemoryKeyStore()}
	clk := &clock{t0}
	keys := access.NewKeys(store, dir, &access.KeyOptions{Now: clk.Now, CacheTTL: 10 * time.Second})
	c := access.NewChecker(dir, nil)
	owner := MustLive(t, c, "owner", "acme")
	secret, k, err := keys.Create(ctx, owner, access.KeyRequest{Name: "agent", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(ctx, secret[:len(secret)-1]+"2"); askbi.ErrorCode(err) != askbi.Unauthenticated {
		t.Fatalf("wrong secret = %v, want unauthenticated", err)
	}
	if _, err := keys.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	store.down = true
	clk.advance(9 * time.Second)
	p, err := keys.Verify(ctx, secret)
	if err != nil || p.CredentialID != k.ID {
		t.Fatalf("Verify within the TTL while the store is down = %+v, %v; want the key's principal", p, err)
	}
	if _, err := keys.Verify(ctx, secret[:len(secret)-1]+"2"); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("an unverified secret while the store is down = %v, want unavailable (failures are not cached)", err)
	}
	clk.advance(time.Second)
	if _, err := keys.Verify(ctx, secret); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("Verify after the TTL while the store is down = %v, want unavailable", err)
	}
	store.down = false
	if _, err := keys.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	reads := store.reads
	if _, err := keys.Verify(ctx, secret); err != nil || store.reads != reads {
		t.Errorf("a cached Verify read the store (%d reads, want %d), err %v", store.reads, reads, err)
	}
	if err := keys.Revoke(ctx, owner, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(ctx, secret); askbi.ErrorCode(err) != askbi.Unauthenticated {
		t.Errorf("Verify right after Revoke = %v, want unauthenticated", err)
	}

	off := access.NewKeys(store, dir, &access.KeyOptions{Now: clk.Now, CacheTTL: -1})
	secret2, _, err := off.Create(ctx, owner, access.KeyRequest{Name: "nocache", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := off.Verify(ctx, secret2); err != nil {
		t.Fatal(err)
	}
	store.down = true
	if _, err := off.Verify(ctx, secret2); askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("Verify with the cache off and the store down = %v, want unavailable", err)
	}
}

// TestRetryAfter: the limiter's refusal carries when the next token comes
// (askbi.Retry), so adapters can answer Retry-After.
func TestRetryAfter(t *testing.T) {
	l := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1, Rate: 0.25})
	ctx := context.Background()
	if err := l.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	err := l.Allow(ctx, "k")
	if s, ok := askbi.RetryAfter(err); !ok || s != 4 || askbi.ErrorCode(err) != askbi.RateLimited {
		t.Errorf("RetryAfter(%v) = %d, %v; want 4 s", err, s, ok)
	}
}

func TestCreateKeyBadInput(t *testing.T) {
	ctx := context.Background()
	keys, store, dir, c, _ := newKeys(t)
	owner := MustLive(t, c, "owner", "acme")
	admin := MustLive(t, c, "admin", "acme")
	viewer := MustLive(t, c, "viewer", "acme")
	token, err := c.Live(ctx, access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k", Scopes: access.AllScopes, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	ok := access.KeyRequest{Name: "k", Scopes: []string{"data:read"}, Projects: access.AllProjects()}
	with := func(f func(*access.KeyRequest)) access.KeyRequest { r := ok; f(&r); return r }
	tests := []struct {
		name string
		p    access.Principal
		req  access.KeyRequest
		want askbi.Code
	}{
		{"empty scope list", owner, with(func(r *access.KeyRequest) { r.Scopes = nil }), askbi.InvalidArgument},
		{"empty scope", owner, with(func(r *access.KeyRequest) { r.Scopes = []string{""} }), askbi.InvalidArgument},
		{"unknown scope", owner, with(func(r *access.KeyRequest) { r.Scopes = []string{"admin"} }), askbi.InvalidArgument},
		{"project of another team", owner, with(func(r *access.KeyRequest) { r.Projects = access.ProjectSet("ops") }), askbi.InvalidArgument},
		{"unknown project", owner, with(func(r *access.KeyRequest) { r.Projects = access.ProjectSet("nope") }), askbi.InvalidArgument},
		{"no projects", owner, with(func(r *access.KeyRequest) { r.Projects = access.Projects{} }), askbi.InvalidArgument},
		{"blank name", owner, with(func(r *access.KeyRequest) { r.Name = "  " }), askbi.InvalidArgument},
		{"long name", owner, with(func(r *access.KeyRequest) { r.Name = strings.Repeat("x", 101) }), askbi.InvalidArgument},
		{"created by a token", token, ok, askbi.Forbidden},
		{"unresolved principal", access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession}, ok, askbi.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := keys.Create(ctx, tt.p, tt.req); askbi.ErrorCode(err) != tt.want {
				t.Errorf("Create = %v, want %q", err, tt.want)
			}
		})
	}
	if got, _ := store.List(ctx, "acme", "owner"); len(got) != 0 {
		t.Errorf("bad requests stored %d keys", len(got))
	}
	// A viewer limited to some projects may key only those; admins reach all.
	if _, _, err := keys.Create(ctx, viewer, with(func(r *access.KeyRequest) { r.Projects = access.ProjectSet("growth") })); err != nil {
		t.Errorf("viewer key for own project: %v", err)
	}
	dir.SetMember("acme", "viewer", access.RoleViewer, access.ProjectSet("growth"))
	viewer = MustLive(t, c, "viewer", "acme")
	if _, _, err := keys.Create(ctx, viewer, with(func(r *access.KeyRequest) { r.Projects = access.ProjectSet("finance") })); askbi.ErrorCode(err) != askbi.Forbidden {
		t.Errorf("viewer key for a project they lack = %v, want forbidden", err)
	}
	if _, _, err := keys.Create(ctx, admin, with(func(r *access.KeyRequest) { r.Projects = access.ProjectSet("finance") })); err != nil {
		t.Errorf("admin key for any project: %v", err)
	}
}

func TestMemoryKeyStore(t *testing.T) {
	accesstest.RunKeyStore(t, func(*testing.T) access.KeyStore { return access.NewMemoryKeyStore() })
}

// TestWithdraw: a host can take a right away from a role, and only from
// that role.
func TestWithdraw(t *testing.T) {
	c := access.NewChecker(newDirectory(), &access.CheckerOptions{Withdraw: map[access.Right][]access.Role{
		access.RightUseAssistant: {access.RoleViewer},
	}})
	ctx := context.Background()
	for user, want := range map[string]askbi.Code{"owner": "", "editor": "", "viewer": askbi.Forbidden} {
		p := access.Principal{UserID: user, TeamID: "acme", Auth: access.AuthSession}
		if got := askbi.ErrorCode(c.Can(ctx, p, access.RightUseAssistant, teamAcme)); got != want {
			t.Errorf("%s: use_assistant = %q, want %q", user, got, want)
		}
		if got := askbi.ErrorCode(c.Can(ctx, p, access.RightRead, dashGrowth)); got != "" {
			t.Errorf("%s: read = %q, want allowed", user, got)
		}
	}
}

// countingDir counts the membership reads of a directory.
type countingDir struct {
	access.Directory
	mu    sync.Mutex
	reads int
}

func (d *countingDir) Member(ctx context.Context, team, user string) (access.Membership, error) {
	d.mu.Lock()
	d.reads++
	d.mu.Unlock()
	return d.Directory.Member(ctx, team, user)
}

// TestOneMembershipReadPerRequest: an API-key request reads the
// membership once, in Verify; the gate takes that read instead of reading
// again, once: the same principal passed again reads the directory.
func TestOneMembershipReadPerRequest(t *testing.T) {
	ctx := context.Background()
	mem := access.NewMemoryDirectory()
	mem.AddProject("acme", "growth")
	mem.SetMember("acme", "owner", access.RoleOwner, access.AllProjects())
	dir := &countingDir{Directory: mem}
	c := access.NewChecker(dir, nil)
	gate := access.NewGate(c, nil)
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	owner, err := c.Live(ctx, access.Principal{UserID: "owner", TeamID: "acme", Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := keys.Create(ctx, owner, access.KeyRequest{Name: "k", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
	if err != nil {
		t.Fatal(err)
	}
	dir.reads = 0
	p, err := keys.Verify(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	live, err := gate.Begin(ctx, p)
	if err != nil || live.Role != access.RoleOwner {
		t.Fatalf("Begin = %+v, %v", live, err)
	}
	if dir.reads != 1 {
		t.Errorf("Verify and Begin read the membership %d times; want once", dir.reads)
	}
	if _, err := gate.Begin(ctx, p); err != nil || dir.reads != 2 {
		t.Errorf("the principal passed again: %v, %d reads; want a read of its own", err, dir.reads)
	}
	// A checker on another directory reads its own: a change there
	// since Verify shows.
	other := access.NewGate(access.NewChecker(mem, nil), nil)
	p, _ = keys.Verify(ctx, secret)
	mem.SetMember("acme", "owner", access.RoleViewer, access.AllProjects())
	if live, err := other.Begin(ctx, p); err != nil || live.Role != access.RoleViewer {
		t.Errorf("another directory's gate: %v, %v; want the role it reads, viewer", live.Role, err)
	}
}
