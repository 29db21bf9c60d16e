package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/dataexec/pgsource"
)

// seedWarehouse creates and fills the demo tables in schema warehouse,
// and a SELECT-only role for the SQL source that sees that schema only;
// it returns that role's URL.
//
// With shared (-database-url: askbi's own tables live in the same
// database), the role still reads only schema warehouse, and the
// statement revoking side-effect functions from PUBLIC is left out: the
// state store needs advisory locks, and revoking needs a superuser. The
// SQL guard rejects those functions either way.
func seedWarehouse(ctx context.Context, ownerURL string, shared bool) (string, error) {
	db, err := sqlx.Open("postgres", ownerURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	// One connection holding a lock: instances starting at once on one
	// database seed it one after the other (concurrent CREATE ... IF NOT
	// EXISTS can still collide).
	conn, err := db.Connx(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, warehouseLock); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, warehouseLock)
	for _, q := range warehouseSchema {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("seed warehouse: %w", err)
		}
	}
	// The reader's password is derived from the owner's URL (which holds
	// the owner's own password): every instance on one database sets the
	// same one, so none breaks the new connections of another.
	sum := sha256.Sum256([]byte(readerRole + "\x00" + ownerURL))
	password := hex.EncodeToString(sum[:16])
	role := pgsource.SQLForReadOnlyRole(readerRole, password, warehouseSchemaName)
	if shared {
		role = role[:len(role)-1]
	}
	role = append(role, readerSearchPath...)
	for _, q := range role {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("create the read-only role: %w", err)
		}
	}
	return urlWithUser(ownerURL, readerRole, password)
}

// warehouseLock is the advisory-lock key serializing seedWarehouse.
const warehouseLock = 0x61736b6277 // "askbw"

// urlWithUser returns raw with its user and password replaced.
func urlWithUser(raw, user, password string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}
