package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// MustCatalog returns a Catalog on a database of its own holding f.
func MustCatalog(t *testing.T, f workspacetest.Fixture) (*pgstore.Catalog, *sqlx.DB) {
	t.Helper()
	db := MustStore(t)
	c := pgstore.NewCatalog(db)
	ok, err := c.Seed(context.Background(), "fixture", pgstore.CatalogSeed(f))
	if err != nil || !ok {
		t.Fatalf("Seed = %v, %v", ok, err)
	}
	return c, db
}

func TestCatalog(t *testing.T) {
	workspacetest.Run(t, func(t *testing.T, f workspacetest.Fixture) workspace.Catalog {
		c, _ := MustCatalog(t, f)
		return c
	})
}

// TestCatalogSeedOnce: a second seed of the same name changes nothing,
// not even an entity the first seed stored and a user changed since.
func TestCatalogSeedOnce(t *testing.T) {
	ctx := context.Background()
	c, _ := MustCatalog(t, workspacetest.NewFixture())
	if err := c.DeleteDashboard(ctx, "dash-growth"); err != nil {
		t.Fatal(err)
	}
	ok, err := c.Seed(ctx, "fixture", pgstore.CatalogSeed(workspacetest.NewFixture()))
	if err != nil || ok {
		t.Fatalf("second Seed = %v, %v; want false, nil", ok, err)
	}
	if _, err := c.Dashboard(ctx, "dash-growth"); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("Dashboard deleted after the first seed = %v, want still not_found", err)
	}
}

// failOn installs a trigger that makes the database refuse every change of
// type typ in catalog_entities, as a failure in the middle of a write
// would.
func failOn(t *testing.T, db *sqlx.DB, op, typ string) {
	t.Helper()
	for _, q := range []string{
		`CREATE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
		`CREATE TRIGGER fail_write BEFORE ` + op + ` ON catalog_entities FOR EACH ROW
		 WHEN (OLD.type = '` + typ + `') EXECUTE FUNCTION fail_write()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCatalogRollback: DeleteDashboard deletes the dashboard, then its
// charts; when the second step fails, the first is rolled back.
func TestCatalogRollback(t *testing.T) {
	ctx := context.Background()
	c, db := MustCatalog(t, workspacetest.NewFixture())
	failOn(t, db, "DELETE", "chart")
	if err := c.DeleteDashboard(ctx, "dash-growth"); askbi.ErrorCode(err) != askbi.Internal {
		t.Fatalf("DeleteDashboard with its charts' delete failing = %v, want internal", err)
	}
	if _, err := c.Dashboard(ctx, "dash-growth"); err != nil {
		t.Errorf("Dashboard after the failed delete = %v, want it kept", err)
	}
	for _, id := range []string{"chart-signups", "chart-country"} {
		if _, err := c.Chart(ctx, id); err != nil {
			t.Errorf("Chart(%s) after the failed delete = %v, want it kept", id, err)
		}
	}
}

// TestSaveDatasetRollback (seed 000 Test Plan: "failed database writes
// roll back"): a dataset save through the Executor on the real catalog,
// where PostgreSQL fails the save's first row write, then its second, and
// so on (an AFTER trigger on every table, so each failure comes after
// its row is in place, as a constraint or a lost connection would),
// answers an error each time and leaves no trace of the dataset or its
// request in the database, read with SQL rather than through the
// Catalog; once the failure comes after the save's last write, the save
// succeeds and leaves one dataset. A save written in more than one
// committed step (say the dataset's row, then its request in a second
// statement) fails here at its second write.
func TestSaveDatasetRollback(t *testing.T) {
	ctx := context.Background()
	c, db := MustCatalog(t, workspacetest.NewFixture())
	// writes counts every row write, across statements and transactions:
	// a sequence is not rolled back. failWrite(n) makes the nth fail.
	for _, q := range []string{
		`CREATE SEQUENCE writes`,
		`CREATE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('writes'); RETURN NULL; END $$`,
		`DO $$ DECLARE t text; BEGIN
		   FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() LOOP
		     EXECUTE format('CREATE TRIGGER fail_write AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION fail_write()', t);
		   END LOOP; END $$`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	failWrite := func(n int) {
		t.Helper()
		for _, q := range []string{
			fmt.Sprintf(`CREATE OR REPLACE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS $$
			 BEGIN IF nextval('writes') = %d THEN RAISE EXCEPTION 'injected failure on write %d'; END IF; RETURN NULL; END $$`, n, n),
			`SELECT setval('writes', 1, false)`,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func() (n int) {
		t.Helper()
		if err := db.Get(&n, `SELECT count(*) FROM catalog_entities WHERE type = 'dataset'`); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()

	const sql = "SELECT week, plan, signups FROM signups"
	src := dataexec.NewTableSource(map[string]*dataexec.Table{sql: {
		Columns: []string{"week", "plan", "signups"},
		Rows:    [][]any{{"2026-11-02", "pro", 12.0}, {"2026-11-09", "pro", 15.0}},
	}})
	audit := access.NewMemoryAudit(0)
	exec := dataexec.NewExecutor(c, dataexec.SourceMap{"conn-wh": src}, &dataexec.Options{Audit: audit})
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	live, err := access.NewGate(access.NewChecker(dir, nil), nil).Begin(ctx, access.Principal{
		UserID: "alice", TeamID: "acme", Projects: access.AllProjects(), Scopes: access.AllScopes, Auth: access.AuthSession})
	if err != nil {
		t.Fatal(err)
	}

	save := dataexec.Exploration{Operation: dataexec.ExploreSave, Name: "Signups by plan", DashboardID: "dash-growth",
		ConnectionID: "conn-wh", SQL: sql}
	const maxWrites = 20
	for n := 1; ; n++ {
		if n > maxWrites {
			t.Fatalf("the save still fails with the failure at write %d", n)
		}
		failWrite(n)
		saved, err := exec.Explore(ctx, live, save)
		if err == nil {
			// The failure came after the save's last write.
			if n == 1 {
				t.Fatal("the save wrote nothing")
			}
			t.Logf("the save makes %d row writes", n-1)
			break
		}
		if saved != nil {
			t.Errorf("failure at write %d: save = %+v, %v; want nothing saved", n, saved, err)
		}
		if code := askbi.ErrorCode(err); code != askbi.Internal {
			t.Errorf("failure at write %d: error code = %s, want internal", n, code)
		}
		if got := count(); got != before {
			t.Errorf("failure at write %d: the failed save left %d dataset rows behind", n, got-before)
		}
		var leftover int
		if err := db.Get(&leftover, `SELECT count(*) FROM catalog_entities WHERE name = 'Signups by plan' OR doc::text LIKE '%FROM signups"%'`); err != nil {
			t.Fatal(err)
		}
		if leftover != 0 {
			t.Fatalf("failure at write %d: the failed save left %d rows naming the dataset or its request", n, leftover)
		}
		for _, e := range audit.Entries() {
			if e.Action == dataexec.ActionDatasetSave && e.Outcome == access.OutcomeOK {
				t.Fatalf("failure at write %d: the failed save was audited as saved: %+v", n, e)
			}
		}
	}
	if n := count(); n != before+1 {
		t.Errorf("after a good save the catalog has %d more datasets, want 1", n-before)
	}
}
