// Package pgpool sizes the database/sql pools askbi opens on PostgreSQL, so
// that the reader (dataexec/pgsource) and state (pgstore) pools follow one
// rule.
package pgpool

import (
	"database/sql"
	"time"
)

// DefaultMaxConns is the size of a pool whose setting is zero. Two pools of
// 16 per server process leave room, under PostgreSQL's default
// max_connections of 100, for a second process and for administrators.
const DefaultMaxConns = 16

const (
	// maxIdleTime closes a connection unused for this long, so a quiet
	// pool shrinks back after a burst.
	maxIdleTime = 5 * time.Minute
	// maxLifetime replaces connections now and then, so changed server
	// settings, roles and credentials reach every connection.
	maxLifetime = 30 * time.Minute
)

// Size caps db at n open connections ([DefaultMaxConns] when n <= 0) and
// keeps as many idle: database/sql's default of two idle connections makes a
// busy pool open a new connection, with its SCRAM handshake, for most calls
// beyond the second at a time.
func Size(db *sql.DB, n int) {
	if n <= 0 {
		n = DefaultMaxConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(maxIdleTime)
	db.SetConnMaxLifetime(maxLifetime)
}
