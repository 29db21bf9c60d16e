// Package oauthtest holds the conformance suite of [oauth.Store]. A host
// runs it against its own adapter:
//
//	func TestOAuthStore(t *testing.T) {
//		oauthtest.RunStore(t, func(t *testing.T) oauth.Store { return newStore(t) })
//	}
package oauthtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/mcpserver/oauth"
)

// RunStore proves that the stores made by newStore behave as [oauth.Store]
// documents. Each subtest gets a fresh, empty store.
func RunStore(t *testing.T, newStore func(t *testing.T) oauth.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}
	grant := func(id, user, team string, created time.Time) oauth.Grant {
		return oauth.Grant{ID: id, ClientID: "c1", UserID: user, TeamID: team,
			Scopes: []access.Scope{access.ScopeDataRead, access.ScopeDataRefresh}, Projects: access.ProjectSet("growth"), CreatedAt: created}
	}
	token := func(hash string, kind oauth.TokenKind, grantID string, expires time.Time) oauth.Token {
		return oauth.Token{Hash: []byte(hash), Kind: kind, GrantID: grantID, ClientID: "c1",
			Scopes: []access.Scope{access.ScopeDataRead}, Audience: []string{"https://bi.example.com/mcp"},
			RedirectURI: "http://127.0.0.1:9/cb", Challenge: "ch", ChallengeMethod: "S256", RequestedAt: t0, ExpiresAt: expires}
	}
	code := func(err error) askbi.Code { return askbi.ErrorCode(err) }

	t.Run("Clients", func(t *testing.T) {
		s := newStore(t)
		for _, c := range []oauth.Client{
			{ID: "pub", AuthMethod: "none", Name: "Inspector", RedirectURIs: []string{"http://127.0.0.1:6274/cb", "cursor://cb"},
				Scopes: access.AllScopes, CreatedAt: t0},
			{ID: "conf", SecretHash: []byte("0123456789abcdef0123456789abcdef"), AuthMethod: "client_secret_post", Name: "Server app",
				RedirectURIs: []string{"https://app.example.com/cb"}, Scopes: []access.Scope{access.ScopeDataRead}, CreatedAt: t0},
		} {
			if err := s.CreateClient(ctx, c); err != nil {
				t.Fatalf("CreateClient(%s): %v", c.ID, err)
			}
			got, err := s.Client(ctx, c.ID)
			if err != nil {
				t.Fatalf("Client(%s): %v", c.ID, err)
			}
			if diff := cmp.Diff(c, got, opts); diff != "" {
				t.Errorf("Client(%s) mismatch (-want +got):\n%s", c.ID, diff)
			}
		}
		if err := s.CreateClient(ctx, oauth.Client{ID: "pub", CreatedAt: t0}); code(err) != askbi.Conflict {
			t.Errorf("CreateClient(duplicate) = %v, want conflict", err)
		}
		if _, err := s.Client(ctx, "nope"); code(err) != askbi.NotFound {
			t.Errorf("Client(unknown) = %v, want not_found", err)
		}
	})

	t.Run("RequestsAreTakenOnce", func(t *testing.T) {
		s := newStore(t)
		r := oauth.Request{ID: "r1", ClientID: "c1", UserID: "alice", CSRFHash: []byte("hash"), Query: "state=x&scope=data%3Aread", ExpiresAt: t0.Add(10 * time.Minute)}
		if err := s.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateRequest(ctx, r); code(err) != askbi.Conflict {
			t.Errorf("CreateRequest(duplicate) = %v, want conflict", err)
		}
		var wg sync.WaitGroup
		got := make([]oauth.Request, 8)
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { got[i], errs[i] = s.TakeRequest(ctx, "r1", t0) })
		}
		wg.Wait()
		taken := 0
		for i, err := range errs {
			switch code(err) {
			case "":
				taken++
				if diff := cmp.Diff(r, got[i], opts); diff != "" {
					t.Errorf("TakeRequest mismatch (-want +got):\n%s", diff)
				}
			case askbi.NotFound:
			default:
				t.Errorf("TakeRequest = %v, want nil or not_found", err)
			}
		}
		if taken != 1 {
			t.Errorf("%d takes of one request succeeded, want 1", taken)
		}
		r.ID = "r2"
		if err := s.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeRequest(ctx, "r2", r.ExpiresAt); code(err) != askbi.NotFound {
			t.Errorf("TakeRequest(at expiry) = %v, want not_found", err)
		}
	})

	t.Run("Grants", func(t *testing.T) {
		s := newStore(t)
		g1 := grant("g1", "alice", "acme", t0)
		g2 := grant("g2", "alice", "globex", t0.Add(time.Hour))
		g2.Projects = access.AllProjects()
		g2.Scopes = access.AllScopes
		for _, g := range []oauth.Grant{g1, g2, grant("g3", "bob", "acme", t0)} {
			if err := s.CreateGrant(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateGrant(ctx, g1); code(err) != askbi.Conflict {
			t.Errorf("CreateGrant(duplicate) = %v, want conflict", err)
		}
		got, err := s.Grants(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]oauth.Grant{g2, g1}, got, opts); diff != "" {
			t.Errorf("Grants mismatch (-want +got):\n%s", diff)
		}
		if err := s.CreateToken(ctx, token("a1", oauth.KindAccess, "g1", t0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, token("other", oauth.KindAccess, "g2", t0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(2 * time.Hour)
		if err := s.RevokeGrant(ctx, "g1", at); err != nil {
			t.Fatalf("RevokeGrant: %v", err)
		}
		if err := s.RevokeGrant(ctx, "g1", at.Add(time.Hour)); err != nil {
			t.Fatalf("second RevokeGrant: %v", err)
		}
		g, err := s.Grant(ctx, "g1")
		if err != nil || !g.RevokedAt.Equal(at) {
			t.Errorf("Grant(revoked) = %+v, %v; want RevokedAt %v", g, err, at)
		}
		if _, err := s.Token(ctx, []byte("a1")); code(err) != askbi.NotFound {
			t.Errorf("a revoked grant's token = %v, want not_found", err)
		}
		if _, err := s.Token(ctx, []byte("other")); err != nil {
			t.Errorf("another grant's token after the revocation: %v", err)
		}
		if got, _ := s.Grants(ctx, "alice"); len(got) != 1 || got[0].ID != "g2" {
			t.Errorf("Grants after revocation = %+v, want only g2", got)
		}
		if err := s.RevokeGrant(ctx, "nope", at); code(err) != askbi.NotFound {
			t.Errorf("RevokeGrant(unknown) = %v, want not_found", err)
		}
		if _, err := s.Grant(ctx, "nope"); code(err) != askbi.NotFound {
			t.Errorf("Grant(unknown) = %v, want not_found", err)
		}
	})

	t.Run("Tokens", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateGrant(ctx, grant("g1", "alice", "acme", t0)); err != nil {
			t.Fatal(err)
		}
		want := token("c1", oauth.KindCode, "g1", t0.Add(time.Minute))
		if err := s.CreateToken(ctx, want); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, want); code(err) != askbi.Conflict {
			t.Errorf("CreateToken(duplicate) = %v, want conflict", err)
		}
		got, err := s.Token(ctx, want.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("Token mismatch (-want +got):\n%s", diff)
		}
		used := t0.Add(time.Second)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() { errs[i] = s.UseToken(ctx, want.Hash, used) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch code(err) {
			case "":
				ok++
			case askbi.Conflict:
			default:
				t.Errorf("UseToken = %v, want nil or conflict", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d uses of one token succeeded, want 1", ok)
		}
		if got, _ := s.Token(ctx, want.Hash); !got.UsedAt.Equal(used) {
			t.Errorf("UsedAt = %v, want %v", got.UsedAt, used)
		}
		if err := s.UseToken(ctx, []byte("nope"), used); code(err) != askbi.NotFound {
			t.Errorf("UseToken(unknown) = %v, want not_found", err)
		}
		for i, kind := range []oauth.TokenKind{oauth.KindAccess, oauth.KindAccess, oauth.KindRefresh} {
			if err := s.CreateToken(ctx, token(fmt.Sprint(kind, i), kind, "g1", t0.Add(time.Hour))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteTokens(ctx, "g1", oauth.KindAccess); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"access0", "access1"} {
			if _, err := s.Token(ctx, []byte(h)); code(err) != askbi.NotFound {
				t.Errorf("Token(%s) after DeleteTokens = %v, want not_found", h, err)
			}
		}
		for _, h := range []string{"refresh2", "c1"} {
			if _, err := s.Token(ctx, []byte(h)); err != nil {
				t.Errorf("Token(%s) after deleting access tokens: %v", h, err)
			}
		}
	})

	t.Run("Purge", func(t *testing.T) {
		s := newStore(t)
		now := t0.Add(time.Hour)
		for _, g := range []oauth.Grant{grant("live", "alice", "acme", t0), grant("expired", "alice", "acme", t0), grant("revoked", "alice", "acme", t0)} {
			if err := s.CreateGrant(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		for _, tok := range []oauth.Token{
			token("live-refresh", oauth.KindRefresh, "live", now.Add(time.Hour)),
			token("live-old-access", oauth.KindAccess, "live", now),
			token("expired-refresh", oauth.KindRefresh, "expired", now.Add(-time.Second)),
		} {
			if err := s.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RevokeGrant(ctx, "revoked", t0); err != nil {
			t.Fatal(err)
		}
		for _, r := range []oauth.Request{{ID: "old", ExpiresAt: now}, {ID: "new", ExpiresAt: now.Add(time.Minute)}} {
			if err := s.CreateRequest(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.Purge(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		// The old request, two tokens, two grants.
		if n != 5 {
			t.Errorf("Purge deleted %d rows, want 5", n)
		}
		if _, err := s.Grant(ctx, "live"); err != nil {
			t.Errorf("the live grant: %v", err)
		}
		for _, id := range []string{"expired", "revoked"} {
			if _, err := s.Grant(ctx, id); code(err) != askbi.NotFound {
				t.Errorf("Grant(%s) after Purge = %v, want not_found", id, err)
			}
		}
		if _, err := s.Token(ctx, []byte("live-refresh")); err != nil {
			t.Errorf("the live token: %v", err)
		}
		if _, err := s.Token(ctx, []byte("live-old-access")); code(err) != askbi.NotFound {
			t.Errorf("an expired token survived Purge: %v", err)
		}
		if _, err := s.TakeRequest(ctx, "new", now); err != nil {
			t.Errorf("the live request: %v", err)
		}
		if _, err := s.TakeRequest(ctx, "old", t0); code(err) != askbi.NotFound {
			t.Errorf("an expired request survived Purge: %v", err)
		}
	})
}
