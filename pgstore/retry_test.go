package pgstore_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/pgstore"
)

// TestUnreachableIsUnavailable: a state read on a database that cannot
// be reached is unavailable (503 and a retry hint), not internal.
func TestUnreachableIsUnavailable(t *testing.T) {
	db, err := sqlx.Open("postgres", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = pgstore.NewKeyStore(db).ByPrefix(context.Background(), "abcdefghijkl")
	if askbi.ErrorCode(err) != askbi.Unavailable {
		t.Errorf("ByPrefix on an unreachable database = %v, want unavailable", err)
	}
}
