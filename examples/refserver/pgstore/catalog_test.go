package pgstore_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
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
