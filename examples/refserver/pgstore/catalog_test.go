package pgstore_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/catalogtest"
	"github.com/askbi/askbi/examples/refserver/pgstore"
)

// MustCatalog returns a Catalog on a database of its own holding f.
func MustCatalog(t *testing.T, f catalogtest.Fixture) (*pgstore.Catalog, *sqlx.DB) {
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
	catalogtest.Run(t, func(t *testing.T, f catalogtest.Fixture) dataexec.Catalog {
		c, _ := MustCatalog(t, f)
		return c
	})
}

// TestCatalogSeedOnce: a second seed of the same name changes nothing,
// not even an entity the first seed stored and a user changed since.
func TestCatalogSeedOnce(t *testing.T) {
	ctx := context.Background()
	c, _ := MustCatalog(t, catalogtest.NewFixture())
	if err := c.DeleteDashboard(ctx, "dash-growth"); err != nil {
		t.Fatal(err)
	}
	ok, err := c.Seed(ctx, "fixture", pgstore.CatalogSeed(catalogtest.NewFixture()))
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
	c, db := MustCatalog(t, catalogtest.NewFixture())
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
// where PostgreSQL fails the write after the row is in place (an AFTER
// trigger on the dataset's row, as a constraint or a lost connection
// would), answers an error and leaves no trace of the dataset or its
// request in the database, read with SQL rather than through the
// Catalog. Any write of the dataset in more than one committed step
// fails here.
func TestSaveDatasetRollback(t *testing.T) {
	ctx := context.Background()
	c, db := MustCatalog(t, catalogtest.NewFixture())
	for _, q := range []string{
		`CREATE FUNCTION fail_dataset() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN RAISE EXCEPTION 'injected failure after the write'; END $$`,
		`CREATE TRIGGER fail_dataset AFTER INSERT OR UPDATE ON catalog_entities FOR EACH ROW
		 WHEN (NEW.type = 'dataset' AND NEW.name = 'Signups by plan') EXECUTE FUNCTION fail_dataset()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
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
	saved, err := exec.Explore(ctx, live, save)
	if err == nil || saved != nil {
		t.Fatalf("save with the write failing = %+v, %v; want an error and nothing saved", saved, err)
	}
	if code := askbi.ErrorCode(err); code != askbi.Internal {
		t.Errorf("save error code = %s, want internal", code)
	}
	if n := count(); n != before {
		t.Errorf("the failed save left %d dataset rows behind", n-before)
	}
	var leftover int
	if err := db.Get(&leftover, `SELECT count(*) FROM catalog_entities WHERE name = 'Signups by plan' OR doc::text LIKE '%FROM signups"%'`); err != nil {
		t.Fatal(err)
	}
	if leftover != 0 {
		t.Errorf("the failed save left %d rows naming the dataset or its request", leftover)
	}
	for _, e := range audit.Entries() {
		if e.Action == dataexec.ActionDatasetSave && e.Outcome == access.OutcomeOK {
			t.Errorf("the failed save was audited as saved: %+v", e)
		}
	}

	// The same save succeeds once the database accepts it, and leaves one
	// row: the trigger above was what refused it.
	if _, err := db.Exec(`DROP TRIGGER fail_dataset ON catalog_entities`); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Explore(ctx, live, save); err != nil {
		t.Fatalf("save once the write is accepted = %v", err)
	}
	if n := count(); n != before+1 {
		t.Errorf("after a good save the catalog has %d more datasets, want 1", n-before)
	}
}
