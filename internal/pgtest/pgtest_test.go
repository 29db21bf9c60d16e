package pgtest

import (
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestSmoke(t *testing.T) {
	db := MustDB(t)
	var n int
	if err := db.Get(&n, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}
