package pgpool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
)

type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("no connections in this test")
}
func (noConnector) Driver() driver.Driver { return nil }

func TestSize(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, DefaultMaxConns}, {-1, DefaultMaxConns}, {5, 5}} {
		db := sql.OpenDB(noConnector{})
		Size(db, tc.n)
		if got := db.Stats().MaxOpenConnections; got != tc.want {
			t.Errorf("Size(%d): MaxOpenConnections = %d, want %d", tc.n, got, tc.want)
		}
		db.Close()
	}
}
