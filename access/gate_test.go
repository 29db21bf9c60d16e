package access_test

import (
	"context"
	"testing"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// advance moves c forward.
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func TestGate(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: t0}
	dir := newDirectory()
	g := access.NewGate(access.NewChecker(dir, nil), access.NewMemoryRateLimiter(&access.RateOptions{Burst: 3, Rate: 1, Now: c.Now}))
	viewer := access.Principal{UserID: "viewer", TeamID: "acme", Auth: access.AuthSession}
	live, err := g.Begin(ctx, viewer)
	if err != nil || !live.IsLive() || live.Role != access.RoleViewer {
		t.Fatalf("Begin(viewer) = %+v, %v; want a live viewer", live, err)
	}
	// A live principal passes again uncharged: nested calls are free.
	for range 10 {
		if again, err := g.Begin(ctx, live); err != nil || again.Role != live.Role {
			t.Fatalf("Begin(live) = %+v, %v", again, err)
		}
	}
	for i := range 2 {
		if _, err := g.Begin(ctx, viewer); err != nil {
			t.Fatalf("request %d: %v", i+2, err)
		}
	}
	_, err = g.Begin(ctx, viewer)
	if askbi.ErrorCode(err) != askbi.RateLimited {
		t.Fatalf("fourth request = %v, want rate_limited", err)
	}
	// Another user, and the same user's key, have budgets of their own.
	for _, p := range []access.Principal{
		{UserID: "editor", TeamID: "acme", Auth: access.AuthSession},
		{UserID: "viewer", TeamID: "acme", Auth: access.AuthAPIKey, CredentialID: "k1", Scopes: access.AllScopes, Projects: access.AllProjects()},
	} {
		if _, err := g.Begin(ctx, p); err != nil {
			t.Errorf("Begin(%s/%s) = %v", p.UserID, p.Auth, err)
		}
	}
	c.advance(time.Second)
	if _, err := g.Begin(ctx, viewer); err != nil {
		t.Errorf("after a second: %v", err)
	}
	// Membership is read before the budget: a removed member is refused
	// as such, spending nothing.
	dir.RemoveMember("acme", "editor")
	for range 5 {
		_, err := g.Begin(ctx, access.Principal{UserID: "editor", TeamID: "acme", Auth: access.AuthSession})
		if askbi.ErrorCode(err) != askbi.Forbidden {
			t.Fatalf("removed member = %v, want forbidden", err)
		}
	}
	dir.SetMember("acme", "editor", access.RoleEditor, access.AllProjects())
	if _, err := g.Begin(ctx, access.Principal{UserID: "editor", TeamID: "acme", Auth: access.AuthSession}); err != nil {
		t.Errorf("re-added member: %v", err)
	}
}

func TestMemoryRateLimiterKeys(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: t0}
	l := access.NewMemoryRateLimiter(&access.RateOptions{Burst: 1, Rate: 0.001, MaxKeys: 2, Now: c.Now})
	for _, step := range []struct {
		key  string
		want askbi.Code
	}{
		{"a", ""}, {"a", askbi.RateLimited}, {"b", ""}, {"b", askbi.RateLimited},
		{"c", ""},                // evicts a, the least recently used
		{"b", askbi.RateLimited}, // b is still tracked
		{"a", ""},                // a starts over
	} {
		if got := askbi.ErrorCode(l.Allow(ctx, step.key)); got != step.want {
			t.Errorf("Allow(%s) = %q, want %q", step.key, got, step.want)
		}
	}
}
