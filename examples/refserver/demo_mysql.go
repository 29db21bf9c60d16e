package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/mysqlsource"
	"github.com/askbi/askbi/httpserve"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/workspace"
)

// The demo's MySQL warehouse (-mysql-url): Acme's second connection,
// "Acme MySQL warehouse", read through a SELECT-only user, with two
// datasets and a chart. The same SQL runs on MySQL 8 and MariaDB.
const (
	connAcmeMySQL    = "conn_acme_mysql"
	mysqlReader      = "askbi_reader"
	sqlMySQLOrders   = `SELECT DATE_FORMAT(day - INTERVAL WEEKDAY(day) DAY, '%Y-%m-%d') AS week, CAST(SUM(orders) AS SIGNED) AS orders FROM orders GROUP BY 1 ORDER BY 1`
	sqlMySQLRevenue  = `SELECT region, CAST(SUM(revenue) AS DECIMAL(12, 2)) AS revenue FROM orders GROUP BY region ORDER BY revenue DESC, region`
	mysqlOrdersTable = `CREATE TABLE IF NOT EXISTS orders (day DATE NOT NULL, region VARCHAR(16) NOT NULL, orders INT NOT NULL, revenue DECIMAL(10, 2) NOT NULL, PRIMARY KEY (day, region))`
)

// demoMySQL seeds the MySQL warehouse at cfg.mysqlURL (a user that may
// create tables and users in its database), makes its SELECT-only user,
// serves it in sources as Acme's connection and seeds that connection's
// datasets into the catalog (once per state database). It returns the
// warehouse's readiness check.
func (a *app) demoMySQL(ctx context.Context, cfg config, catalog catalogStore, state *pgstore.DB, sources dataexec.SourceMap) (httpserve.Check, error) {
	reader, err := seedMySQL(ctx, cfg.mysqlURL)
	if err != nil {
		return httpserve.Check{}, fmt.Errorf("-mysql-url: %w", err)
	}
	db, err := mysqlsource.OpenDB(reader)
	if err != nil {
		return httpserve.Check{}, err
	}
	a.closers = append(a.closers, db.Close)
	src, err := mysqlsource.New(db, &mysqlsource.Options{MaxConns: cfg.dbMaxConns})
	if err != nil {
		return httpserve.Check{}, err
	}
	sources[connAcmeMySQL] = src
	seed := mysqlCatalog(time.Now())
	if state != nil {
		_, err = state.Catalog.Seed(ctx, "demo-mysql", seed)
	} else {
		putSeed(catalog.(*workspace.MemoryCatalog), seed)
	}
	return httpserve.Check{Name: "the MySQL warehouse", Func: db.PingContext}, err
}

// seedMySQL creates and fills the demo table in the database of ownerURL
// unless it holds rows, and (re)creates the SELECT-only user on it; it
// returns that user's DSN. The user's password is derived from the
// owner's URL, so every instance on one warehouse sets the same one.
func seedMySQL(ctx context.Context, ownerURL string) (string, error) {
	cfg, err := mysqlsource.ParseDSN(ownerURL)
	if err != nil {
		return "", err
	}
	if cfg.DBName == "" {
		return "", fmt.Errorf("the URL names no database")
	}
	db, err := mysqlsource.OpenDB(ownerURL)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Connx(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, mysqlOrdersTable); err != nil {
		return "", fmt.Errorf("seed the warehouse: %w", err)
	}
	var n int
	if err := conn.GetContext(ctx, &n, `SELECT COUNT(*) FROM orders`); err != nil {
		return "", err
	}
	if n == 0 {
		if _, err := conn.ExecContext(ctx, "INSERT IGNORE INTO orders VALUES "+mysqlOrderRows()); err != nil {
			return "", fmt.Errorf("seed the warehouse: %w", err)
		}
	}
	sum := sha256.Sum256([]byte(mysqlReader + "\x00" + ownerURL))
	password := hex.EncodeToString(sum[:16])
	for _, q := range mysqlsource.SQLForReadOnlyUser(mysqlReader, "%", password, cfg.DBName) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("create the SELECT-only user %s (the URL's user needs CREATE USER and the grant option on %s): %w", mysqlReader, cfg.DBName, err)
		}
	}
	rcfg := mysql.NewConfig()
	rcfg.User, rcfg.Passwd, rcfg.Net, rcfg.Addr, rcfg.DBName = mysqlReader, password, cfg.Net, cfg.Addr, cfg.DBName
	rcfg.TLSConfig, rcfg.TLS = cfg.TLSConfig, cfg.TLS
	return rcfg.FormatDSN(), nil
}

// mysqlOrderRows are the demo's orders, twelve weeks of four regions, as
// the VALUES list of an INSERT.
func mysqlOrderRows() string {
	regions := []string{"EMEA", "NA", "LATAM", "APAC"}
	var rows []string
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
	for d := range 84 {
		day := start.AddDate(0, 0, d)
		for i, r := range regions {
			orders := 40 + (d*7+i*13)%35 + d/7
			rows = append(rows, fmt.Sprintf("('%s', '%s', %d, %d.%02d)", day.Format(time.DateOnly), r, orders, orders*47, (d+i)%100))
		}
	}
	return strings.Join(rows, ", ")
}

// mysqlCatalog is the MySQL warehouse's connection, datasets and chart.
func mysqlCatalog(now time.Time) pgstore.CatalogSeed {
	at := now.Add(-24 * time.Hour).UTC()
	ds := func(id, project, name, sql string) workspace.Dataset {
		return workspace.Dataset{ID: id, TeamID: teamAcme, ProjectID: project, Name: name, Version: 1,
			Request: workspace.Request{ConnectionID: connAcmeMySQL, SQL: sql}, CreatedAt: at, UpdatedAt: at}
	}
	return pgstore.CatalogSeed{
		Connections: []workspace.Connection{{ID: connAcmeMySQL, TeamID: teamAcme, Name: "Acme MySQL warehouse", Type: "mysql",
			Active: true, CreatedAt: at, UpdatedAt: at}},
		Datasets: []workspace.Dataset{
			ds("ds_mysql_orders", projGrowth, "Orders by week (MySQL)", sqlMySQLOrders),
			ds("ds_mysql_revenue", projFin, "Revenue by region (MySQL)", sqlMySQLRevenue),
		},
		Charts: []workspace.Chart{{ID: "chart_mysql_orders", TeamID: teamAcme, ProjectID: projGrowth, DashboardID: "dash_growth",
			Name: "Orders by week (MySQL)", Type: workspace.ChartLine, DatasetID: "ds_mysql_orders", XField: "week", YFields: []string{"orders"},
			CreatedAt: at, UpdatedAt: at}},
	}
}
