package pgstore_test

import (
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// TestListen plays two instances on one database: A writes, B keeps its
// catalog's and directory's last reads and its key cache, and listens
// (Listen with ForgetCaches). B's pool reaches the database through a
// proxy the test cuts, so what B kept is all it can answer with; its
// listening connection does not, so notifications still reach it. A key
// revoked, a catalog write and a member changed through A each make B
// forget what it kept of them, and only that; a listening connection
// lost (its backend terminated) is a Missed change on the reconnect,
// which makes B forget all three, and changes arrive again after it.
func TestListen(t *testing.T) {
	ctx := t.Context()
	dbURL := pgtest.MustDatabase(t)
	a := mustOpen(t, dbURL)
	if err := pgstore.Migrate(ctx, a); err != nil {
		t.Fatal(err)
	}
	proxy, viaProxy := pgtest.MustProxy(t, dbURL)
	b := mustOpen(t, viaProxy)

	catA := pgstore.NewCatalog(a)
	if _, err := catA.Seed(ctx, "fixture", pgstore.CatalogSeed(workspacetest.NewFixture())); err != nil {
		t.Fatal(err)
	}
	dirA := pgstore.NewDirectory(a)
	if _, err := dirA.Seed(ctx, "demo", pgstore.DirectorySeed{Projects: [][2]string{{"acme", "growth"}, {"acme", "finance"}},
		Members: []pgstore.SeedMember{{Team: "acme", User: "bob", Role: access.RoleEditor, Projects: access.ProjectSet("growth")}}}); err != nil {
		t.Fatal(err)
	}
	// The keys' owner is looked up in a directory of their own, so that
	// what B's key cache answers depends on that cache alone.
	owners := access.NewMemoryDirectory()
	owners.AddProject("acme", "growth")
	owners.SetMember("acme", "bob", access.RoleEditor, access.AllProjects())
	bob, err := access.NewChecker(owners, nil).Live(ctx, access.Principal{UserID: "bob", TeamID: "acme", Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}
	keysA := access.NewKeys(pgstore.NewKeyStore(a), owners, nil)
	var secrets []string
	var revoke string
	for range 2 {
		secret, k, err := keysA.Create(ctx, bob, access.KeyRequest{Name: "ci", Scopes: []string{"data:read"}, Projects: access.AllProjects()})
		if err != nil {
			t.Fatal(err)
		}
		secrets, revoke = append(secrets, secret), k.ID
	}

	catB, dirB := pgstore.NewCatalog(b), pgstore.NewDirectory(b)
	keysB := access.NewKeys(pgstore.NewKeyStore(b), owners, nil)
	changes := make(chan pgstore.Change, 16)
	forget := pgstore.ForgetCaches(keysB, catB, dirB)
	listenURL, _ := url.Parse(dbURL)
	q := listenURL.Query()
	q.Set("application_name", "test_listener_b")
	listenURL.RawQuery = q.Encode()
	if err := pgstore.Listen(ctx, listenURL.String(), slog.New(slog.DiscardHandler), func(c pgstore.Change) {
		forget(c)
		changes <- c
	}); err != nil {
		t.Fatal(err)
	}
	next := func(want pgstore.Change) {
		t.Helper()
		select {
		case got := <-changes:
			if got != want {
				t.Fatalf("B's change = %+v, want %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("B got no change within 10 s, want %+v", want)
		}
	}
	// kept reads through B what it kept: "" where it answers, else the
	// error code (unavailable while cut, once it forgot).
	kept := func(secret string) map[string]askbi.Code {
		_, cerr := catB.Dashboard(ctx, "dash-growth")
		_, derr := dirB.Member(ctx, "acme", "bob")
		_, kerr := keysB.Verify(ctx, secret)
		return map[string]askbi.Code{"catalog": askbi.ErrorCode(cerr), "directory": askbi.ErrorCode(derr), "key": askbi.ErrorCode(kerr)}
	}
	check := func(what string, secret string, want map[string]askbi.Code) {
		t.Helper()
		if diff := cmp.Diff(want, kept(secret)); diff != "" {
			t.Errorf("%s: what B answers mismatch (-want +got):\n%s", what, diff)
		}
	}
	none := askbi.Code("")
	un := askbi.Unavailable
	// outage reads everything through B while its database is up, then
	// cuts B's pool off: B answers from what it kept.
	outage := func(secret string) {
		t.Helper()
		proxy.Restore()
		check("B on its database", secret, map[string]askbi.Code{"catalog": none, "directory": none, "key": none})
		proxy.Cut()
		check("B cut off, before any change", secret, map[string]askbi.Code{"catalog": none, "directory": none, "key": none})
	}

	outage(secrets[0])
	var n int
	if err := a.GetContext(ctx, &n, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'test_listener_b'`); err != nil || n != 1 {
		t.Fatalf("terminated %d listening backends, %v; want 1", n, err)
	}
	next(pgstore.Change{Down: true}) // then, on the reconnect:
	next(pgstore.Change{Missed: true})
	check("after the listening connection was lost", secrets[0], map[string]askbi.Code{"catalog": un, "directory": un, "key": un})

	// The listening connection is back: each change made through A
	// reaches B, which forgets that, and only that.
	outage(secrets[1])
	if err := pgstore.NewKeyStore(a).Revoke(ctx, revoke, time.Now()); err != nil {
		t.Fatal(err)
	}
	next(pgstore.Change{Kind: "key", ID: revoke})
	check("after a key was revoked", secrets[1], map[string]askbi.Code{"catalog": none, "directory": none, "key": un})
	if err := catA.DeleteDashboard(ctx, "dash-fin"); err != nil {
		t.Fatal(err)
	}
	next(pgstore.Change{Kind: "catalog"})
	check("after a catalog write", secrets[1], map[string]askbi.Code{"catalog": un, "directory": none, "key": un})
	if err := dirA.SetMember(ctx, "acme", "bob", access.RoleEditor, access.ProjectSet("finance")); err != nil {
		t.Fatal(err)
	}
	next(pgstore.Change{Kind: "member"})
	check("after a member's grant was removed", secrets[1], map[string]askbi.Code{"catalog": un, "directory": un, "key": un})
}

// mustOpen opens a pool on the database at url, closed when t ends.
func mustOpen(t *testing.T, url string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestConnectionChangesAcrossInstances: a connection renamed or deleted
// through instance A closes the Changes channel of its team on instance
// B, which stops B's chat turns that use the team's remote tools; B's
// feed skips what B published itself.
func TestConnectionChangesAcrossInstances(t *testing.T) {
	ctx := t.Context()
	dbURL := pgtest.MustDatabase(t)
	db := mustOpen(t, dbURL)
	if err := pgstore.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	keys, _ := seal.NewStaticKeyring("k", map[string][]byte{"k": seal.GenerateKey()})
	gate := access.NewGate(access.NewChecker(dir, nil), nil)
	feedA, feedB := pgstore.NewConnectionChanges(db), pgstore.NewConnectionChanges(db)
	svcA := connections.NewService(pgstore.NewConnectionStore(db), keys, gate, &connections.Options{Publish: feedA.Publish})
	svcB := connections.NewService(pgstore.NewConnectionStore(db), keys, gate, &connections.Options{Publish: feedB.Publish})
	seen := make(chan pgstore.Change, 16)
	forward := feedB.Forward(svcB.Records())
	if err := pgstore.Listen(ctx, dbURL, slog.New(slog.DiscardHandler), func(c pgstore.Change) { forward(c); seen <- c }); err != nil {
		t.Fatal(err)
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	wait := func() pgstore.Change {
		t.Helper()
		for {
			select {
			case c := <-seen:
				if c.Kind == "connection" {
					return c
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no connection change arrived")
			}
		}
	}
	conn, err := svcA.Create(ctx, alice, connections.Input{Name: "Analytics", URL: "http://127.0.0.1:9/mcp"})
	if err != nil {
		t.Fatal(err)
	}

	// B's own change reaches its listener, and is skipped.
	turnB := svcB.Records().Changes("acme")
	name := "Analytics 2"
	if _, err := svcB.Update(ctx, alice, conn.ID, connections.Patch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	if !closed(turnB) {
		t.Fatal("B's own change did not close its channel")
	}
	after := svcB.Records().Changes("acme")
	wait()
	if closed(after) {
		t.Error("B's own change, arriving back, stopped a turn started after it")
	}

	for _, change := range []func() error{
		func() error {
			name := "Analytics 3"
			_, err := svcA.Update(ctx, alice, conn.ID, connections.Patch{Name: &name})
			return err
		},
		func() error { return svcA.Delete(ctx, alice, conn.ID) },
	} {
		turnB := svcB.Records().Changes("acme")
		other := svcB.Records().Changes("globex")
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if c := wait(); c.ID != "acme" {
			t.Errorf("change of team %q; want acme", c.ID)
		}
		if !closed(turnB) {
			t.Error("A's change did not stop B's acme turns")
		}
		if closed(other) {
			t.Error("A's change of acme stopped B's globex turns")
		}
	}
}
