package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/pgsource"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/workspace"
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
	// A role is the cluster's, and the lock above only this database's:
	// servers seeding other databases of one cluster at once (the tests')
	// may change the role's catalog row together, and PostgreSQL refuses
	// the second with "tuple concurrently updated". Each statement sets
	// the role to the same end, so one that lost runs again.
	for _, q := range role {
		for try := 1; ; try++ {
			_, err := conn.ExecContext(ctx, q)
			if err == nil {
				break
			}
			if !pgstore.LostCatalogRace(err) || try == 5 {
				return "", fmt.Errorf("create the read-only role: %w", err)
			}
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
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

// demoPostgres prepares the state database and the demo warehouse, on
// -database-url or on the private cluster, and returns the state
// database's URL (a.readerURL is the warehouse's read-only URL).
func (a *app) demoPostgres(ctx context.Context, cfg config) (string, error) {
	stateURL, owner := cfg.databaseURL, cfg.databaseURL
	if cfg.databaseURL == "" {
		c, err := startCluster(ctx, cfg.dataDir)
		if err != nil {
			return "", err
		}
		a.closers = append(a.closers, c.Stop)
		for _, name := range []string{"askbi", "warehouse"} {
			if err := c.CreateDatabase(ctx, name); err != nil {
				return "", err
			}
		}
		stateURL, owner = c.URL("askbi"), c.URL("warehouse")
		a.storage = "PostgreSQL, private cluster in " + cfg.dataDir
	} else {
		a.storage = "PostgreSQL at -database-url"
	}
	reader, err := seedWarehouse(ctx, owner, cfg.databaseURL != "")
	if err != nil {
		return "", err
	}
	a.readerURL, a.creds.WarehouseDatabaseURL = reader, owner
	return stateURL, nil
}

// startCluster starts the private cluster, with a superuser password kept
// in the data folder so other local users cannot connect.
func startCluster(ctx context.Context, dir string) (*pgtest.Cluster, error) {
	// Searchable, not readable: the cluster below may run as the postgres
	// system user; the password file stays private.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	pwFile := filepath.Join(dir, "superuser-password")
	pw, err := os.ReadFile(pwFile)
	if errors.Is(err, os.ErrNotExist) {
		pw = []byte(rand.Text())
		if err := os.WriteFile(pwFile, pw, 0o600); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return pgtest.Start(ctx, filepath.Join(dir, "pg"), &pgtest.Options{Password: strings.TrimSpace(string(pw))})
}

// demoWorkspace seeds the demo workspace (its catalog and directory) and
// serves the two demo warehouses in sources: in memory with the built-in
// demo rows, or once per database with the PostgreSQL warehouse
// (whatever users saved, placed or deleted since stays as they left it);
// with -mysql-url, the MySQL warehouse too (demo_mysql.go). It returns
// the readiness checks of the databases it uses.
func (a *app) demoWorkspace(ctx context.Context, cfg config, state *pgstore.DB, activity *mcpserver.MemoryActivity, sources dataexec.SourceMap) (catalogStore, access.Directory, []httpserve.Check, error) {
	catalog, dir, checks, err := a.baseWorkspace(ctx, cfg, state, activity, sources)
	if err != nil || cfg.mysqlURL == "" {
		return catalog, dir, checks, err
	}
	check, err := a.demoMySQL(ctx, cfg, catalog, state, sources)
	if err != nil {
		return nil, nil, nil, err
	}
	return catalog, dir, append(checks, check), nil
}

// baseWorkspace is demoWorkspace without the MySQL warehouse.
func (a *app) baseWorkspace(ctx context.Context, cfg config, state *pgstore.DB, activity *mcpserver.MemoryActivity, sources dataexec.SourceMap) (catalogStore, access.Directory, []httpserve.Check, error) {
	if state == nil {
		mem := workspace.NewMemoryCatalog()
		putSeed(mem, seedWorkspace(activity, "demo", time.Now()))
		demo := newDemoSource()
		sources["conn_acme_wh"], sources["conn_globex_wh"] = demo, demo
		return mem, memoryDirectory(demoDirectory()), nil, nil
	}
	pc, pd := state.Catalog, state.Directory
	if _, err := pc.Seed(ctx, "demo", seedWorkspace(activity, "postgres", time.Now())); err != nil {
		return nil, nil, nil, err
	}
	if _, err := pd.Seed(ctx, "demo", demoDirectory()); err != nil {
		return nil, nil, nil, err
	}
	reader, err := pgsource.OpenDB(a.readerURL)
	if err != nil {
		return nil, nil, nil, err
	}
	a.closers = append(a.closers, reader.Close)
	src, err := pgsource.New(reader, &pgsource.Options{MaxConns: cfg.dbMaxConns})
	if err != nil {
		return nil, nil, nil, err
	}
	sources["conn_acme_wh"], sources["conn_globex_wh"] = src, src
	return pc, pd, []httpserve.Check{{Name: "the state database", Func: state.SQL.PingContext}, {Name: "the demo warehouse", Func: reader.PingContext}}, nil
}

// errNoPostgres is demoPostgres's error where PostgreSQL is not installed.
var errNoPostgres = pgtest.ErrNotInstalled

// defaultDataDir is the user's cache folder, or for root (whose home the
// postgres system user cannot enter) /var/lib/askbi/refserver.
func defaultDataDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/askbi/refserver"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "askbi", "refserver")
	}
	return filepath.Join(os.TempDir(), "askbi-refserver")
}
