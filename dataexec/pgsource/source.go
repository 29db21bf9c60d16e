package pgsource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgpool"
	"github.com/askbi/askbi/internal/sqlcell"
)

// Limits used when a Query leaves MaxRows or MaxBytes zero.
const (
	DefaultMaxRows  = 1000
	DefaultMaxBytes = 1 << 20
)

// Options configures a Source. The zero value is valid.
type Options struct {
	// DefaultTimeout bounds a call whose ctx has no deadline. Zero means 15s.
	DefaultTimeout time.Duration
	// MaxSQLBytes is the longest SQL text accepted. Zero means 64 KiB.
	MaxSQLBytes int
	// MaxConns is the most connections the pool opens, and keeps idle so
	// that busy callers reuse them instead of paying a new connection's
	// authentication each call. Zero means 16. Run at most MaxConns-1
	// queries at once (bound them above, per team or source): a cancel the
	// server missed is repeated through a spare connection.
	MaxConns int
}

// Source runs bounded, read-only SQL on PostgreSQL. It implements
// [dataexec.Source], [dataexec.Inspector] and [dataexec.VariableBinder], and is
// safe for concurrent use.
type Source struct {
	db             *sqlx.DB
	defaultTimeout time.Duration
	maxSQL         int
}

var (
	_ dataexec.Source         = (*Source)(nil)
	_ dataexec.Inspector      = (*Source)(nil)
	_ dataexec.VariableBinder = (*Source)(nil)
)

// New returns a Source over db, which should connect as a SELECT-only role
// (see [SQLForReadOnlyRole]) and be used by this Source alone: every
// connection is reset with DISCARD ALL when it goes back to the pool, which
// would drop prepared statements of other users. Open db with [OpenDB] (or
// binary_parameters=yes in its DSN), or each query takes two more round
// trips. New sizes db's pool (see Options.MaxConns). opts may be nil.
func New(db *sqlx.DB, opts *Options) (*Source, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Source{db: db, defaultTimeout: opts.DefaultTimeout, maxSQL: opts.MaxSQLBytes}
	if s.defaultTimeout <= 0 {
		s.defaultTimeout = 15 * time.Second
	}
	if s.maxSQL <= 0 {
		s.maxSQL = 64 << 10
	}
	pgpool.Size(db.DB, opts.MaxConns)
	return s, nil
}

// OpenDB opens a pool of connections to dsn (a lib/pq connection string
// or URL, for a role as New asks) set up as the Source wants it: with
// lib/pq's binary_parameters, which sends a statement that has parameters
// together with their values, in one round trip where lib/pq otherwise
// takes two. That setting also sends []byte parameters in binary; the
// Source sends none. Pass the pool to New, and close it when done.
func OpenDB(dsn string) (*sqlx.DB, error) {
	c, err := connector(dsn)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(c), "postgres"), nil
}

// connector is OpenDB's lib/pq connector.
func connector(dsn string) (*pq.Connector, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.BinaryParameters = true
	return pq.NewConnectorConfig(cfg)
}

// Query runs q.SQL, which must be one read-only SELECT (or EXPLAIN without
// ANALYZE), with its {{name}} references bound to q.Variables as
// parameters, and returns at most q.MaxRows rows whose cells' estimated
// JSON size stays within q.MaxBytes. It returns the codes [dataexec.Source]
// and [dataexec.VariableBinder] document.
func (s *Source) Query(ctx context.Context, q dataexec.Query) (_ *dataexec.Table, err error) {
	defer askbi.Wrap(&err, "pgsource.Source.Query")
	// The limit is on the SQL as written: the parameters bind puts in place
	// of its references may make it longer.
	if len(q.SQL) > s.maxSQL {
		return nil, errTooLong(len(q.SQL), s.maxSQL)
	}
	b, err := bind(q.SQL, q.Variables)
	if err != nil {
		return nil, err
	}
	st, err := check(b.sql, max(s.maxSQL, len(b.sql)), len(b.args))
	if err != nil {
		return nil, err
	}
	maxRows, maxBytes := q.MaxRows, q.MaxBytes
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	var t *dataexec.Table
	err = s.session(ctx, func(ctx context.Context, conn *sqlx.Conn) (err error) {
		t, err = read(ctx, conn, st, b.args, maxRows, maxBytes)
		return err
	})
	if err != nil {
		return nil, nameParams(err, b.names)
	}
	return t, nil
}

// rowTooLarge marks the error the wrapped query raises for an oversized row.
const rowTooLarge = "askbi_row_too_large"

// read runs st with the values of its parameters and reads its capped
// result.
func read(ctx context.Context, conn *sqlx.Conn, st statement, params []any, maxRows int, maxBytes int64) (*dataexec.Table, error) {
	query, args := st.sql, params
	var names []string // the columns' names, when the wrapper renames them
	if !st.explain {
		cols, err := describe(ctx, conn, st.sql, params)
		if err != nil {
			return nil, err
		}
		names = make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name()
		}
		query, args = wrap(st.sql, cols, params, maxRows, maxBytes)
	}
	// The statement goes alone through the extended protocol, which
	// accepts one statement only: lib/pq sends a query with arguments as
	// an unnamed prepared statement, but one without arguments through the
	// simple protocol, which runs several, so an EXPLAIN (which may have
	// none) is prepared explicitly.
	// stop cancels the query on the server when we stop reading early,
	// instead of draining rows we will not use.
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	var rows *sql.Rows
	var err error
	if st.explain {
		stmt, perr := conn.PrepareContext(ctx, query)
		if perr != nil {
			return nil, perr
		}
		defer stmt.Close()
		rows, err = stmt.QueryContext(qctx, args...)
	} else {
		rows, err = conn.QueryContext(qctx, query, args...)
	}
	if isRowTooLarge(err) {
		return nil, errRowTooLarge(maxBytes)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	if names != nil && len(names) != len(cols) {
		// The tables' locks, taken by describe, hold their columns still.
		return nil, fmt.Errorf("pgsource: the query described %d columns and returned %d", len(names), len(cols))
	}
	t := &dataexec.Table{Columns: make([]string, len(cols)), Rows: [][]any{}}
	types := make([]string, len(cols))
	for i, c := range cols {
		t.Columns[i], types[i] = c.Name(), c.DatabaseTypeName()
		if names != nil {
			t.Columns[i] = names[i]
		}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var total int64
	var cells []any // rows are cut from it, a chunk at a time
	for rows.Next() {
		if len(t.Rows) == maxRows {
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedRows
			return t, nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		if len(cells) < len(vals) || len(vals) == 0 {
			cells = make([]any, len(vals)*min(64, maxRows-len(t.Rows)))
		}
		row := cells[:len(vals):len(vals)]
		cells = cells[len(vals):]
		size := int64(2) // [ and ]
		for i, v := range vals {
			cell, n, err := normalize(v, types[i])
			if err != nil {
				return nil, err
			}
			row[i], size = cell, size+n+1
		}
		if total+size > maxBytes {
			if len(t.Rows) == 0 {
				return nil, errRowTooLarge(maxBytes)
			}
			stop()
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedBytes
			return t, nil
		}
		total += size
		t.Rows = append(t.Rows, row)
	}
	switch err := rows.Err(); {
	case isRowTooLarge(err) && len(t.Rows) > 0:
		t.Truncated, t.TruncatedReason = true, dataexec.TruncatedBytes
	case isRowTooLarge(err):
		return nil, errRowTooLarge(maxBytes)
	case err != nil:
		return nil, err
	}
	return t, nil
}

// describe returns the result columns of sql with params, reading no row.
// The locks it takes on the tables and views sql reads last until the
// transaction ends, so their columns cannot change before the query runs.
// (A LIMIT parameter keeps it in the extended protocol, which runs one
// statement only.)
func describe(ctx context.Context, conn *sqlx.Conn, sql string, params []any) ([]*sql.ColumnType, error) {
	q := "SELECT * FROM (\n" + sql + "\n) AS askbi_q LIMIT $" + strconv.Itoa(len(params)+1)
	rows, err := conn.QueryContext(ctx, q, append(slices.Clip(params), 0)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	return cols, rows.Close()
}

// wrap returns sql wrapped in the row cap and the row-size check, and the
// arguments it takes.
//
// LIMIT makes the server stop after maxRows+1 rows. lib/pq reads each row
// message whole into memory before we see it, so a row holding a 200 MB
// value would cost 200 MB here; the WHERE clause makes the server refuse
// such a row instead: the sum of its variable-length values' text sizes
// must fit in maxBytes. text, varchar and bytea are measured from their
// stored length, without converting (or detoasting) them; jsonb, arrays
// and any other type are converted to text, as the client receives them.
// Left out are the values whose text is short and bounded (fixedTypes),
// and those whose text has a bound (textBound: numeric, varchar(n)) while
// their bounds add up to at most maxBytes: a row the server lets through
// then holds at most twice maxBytes, and read refuses it. The refusal is
// an integer cast error carrying the marker, evaluated only for an
// oversized row. OFFSET 0 keeps the check above the user's query (after
// its ORDER BY), so it runs only on rows that are returned. The columns
// are renamed askbi_1, askbi_2, ... so that the check can name each one,
// whatever the query called them (duplicates, "?column?"). The newlines
// end a trailing "--" comment in sql. The caps take the parameter numbers
// after those of the variables.
func wrap(sql string, cols []*sql.ColumnType, params []any, maxRows int, maxBytes int64) (string, []any) {
	n := len(params)
	var aliases, sizes, boundedSizes []string
	var bounds int64
	for i, c := range cols {
		name := "askbi_" + strconv.Itoa(i+1)
		aliases = append(aliases, name)
		typ := c.DatabaseTypeName()
		if fixedTypes[typ] {
			continue
		}
		size := "coalesce(" + textSize(name, typ) + ", 0)"
		if b := textBound(c); b > 0 {
			bounds += b
			boundedSizes = append(boundedSizes, size)
			continue
		}
		sizes = append(sizes, size)
	}
	if bounds > maxBytes {
		sizes = append(sizes, boundedSizes...)
	}
	var b strings.Builder
	b.WriteString("SELECT * FROM (SELECT * FROM (\n" + sql + "\n) AS askbi_q OFFSET 0) AS askbi_q")
	if len(aliases) > 0 {
		b.WriteString("(" + strings.Join(aliases, ", ") + ")")
	}
	if len(sizes) > 0 {
		size := "(" + strings.Join(sizes, " + ") + ")"
		b.WriteString(" WHERE CASE WHEN " + size + " > $" + strconv.Itoa(n+2) +
			" THEN (" + size + "::text || ' " + rowTooLarge + "')::int = 0 ELSE true END")
	}
	b.WriteString(" LIMIT $" + strconv.Itoa(n+1))
	args := append(slices.Clip(params), int64(maxRows)+1)
	if len(sizes) > 0 {
		args = append(args, maxBytes)
	}
	return b.String(), args
}

// fixedTypes are the types (as lib/pq names them) whose text form is
// short and bounded, so the row-size check leaves them out. All are of
// fixed length but inet and cidr, whose text is at most 43 bytes.
var fixedTypes = map[string]bool{
	"BOOL": true, "INT2": true, "INT4": true, "INT8": true, "FLOAT4": true, "FLOAT8": true, "OID": true,
	"DATE": true, "TIME": true, "TIMETZ": true, "TIMESTAMP": true, "TIMESTAMPTZ": true, "INTERVAL": true,
	"UUID": true, "MONEY": true, "CHAR": true, "INET": true, "CIDR": true, "MACADDR": true,
}

// maxNumericText is the longest text of a numeric: a sign, 131,072 digits
// before the point and 16,383 after it, PostgreSQL's limits.
const maxNumericText = 1 + 131072 + 1 + 16383

// textBound returns the most bytes the text of a value of column c can
// take, or 0 when its type sets no bound: numeric (numeric(p, s): a sign,
// a point, at most p-s digits before it, or one zero, and s after it),
// and varchar(n) or char(n) (n characters of up to 4 bytes). lib/pq
// reports a numeric without precision as 65535 digits (past PostgreSQL's
// 1,000: none), a negative scale (PostgreSQL 15's) as a large positive
// one, which overstates the bound, and a varchar without length as a
// negative one.
func textBound(c *sql.ColumnType) int64 {
	switch c.DatabaseTypeName() {
	case "NUMERIC":
		if p, sc, ok := c.DecimalSize(); ok && p > 0 && p <= 1000 {
			return 2 + max(p-sc, 1) + max(sc, 0)
		}
		return maxNumericText
	case "VARCHAR", "BPCHAR":
		if n, ok := c.Length(); ok && n > 0 && n <= 10485760 {
			return 4 * n
		}
	}
	return 0
}

// textSize returns the SQL for the size of column col's text form, of
// type typ. octet_length of a text, varchar or bytea reads the stored
// length without detoasting the value (bytea's text is hex: two characters
// a byte, and "\x"); any other type is converted to text, as the client
// will receive it.
func textSize(col, typ string) string {
	switch typ {
	case "TEXT", "VARCHAR", "BPCHAR", "NAME":
		return "octet_length(" + col + ")::int8"
	case "BYTEA":
		return "2 * octet_length(" + col + ")::int8 + 2"
	}
	return "octet_length(" + col + "::text)::int8"
}

// isRowTooLarge reports whether err is the wrapped query refusing a row.
func isRowTooLarge(err error) bool {
	pqErr, ok := errors.AsType[*pq.Error](err)
	return ok && pqErr.Code == "22P02" && strings.Contains(pqErr.Message, rowTooLarge)
}

func errRowTooLarge(maxBytes int64) error {
	return askbi.Errorf(askbi.TooLarge, "a single row is larger than the %s result cap; select fewer or smaller columns", sqlcell.Bytes(maxBytes))
}

// session runs f in a READ ONLY transaction on a connection of its own, with
// server-side timeouts that end with ctx's deadline. It always rolls back,
// then resets the connection before the pool may reuse it. f must not end
// the transaction.
func (s *Source) session(ctx context.Context, f func(context.Context, *sqlx.Conn) error) (err error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(s.defaultTimeout)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	budget := max(time.Until(deadline), 0)
	defer func() {
		if err != nil {
			err = classify(ctx, err, budget)
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	err = s.attempt(ctx, deadline, f, false)
	if err != nil && ServerClosed(err) && ctx.Err() == nil {
		// The server had closed the connection (a restart closes every
		// pooled one), so the statements never ran. Everything here is
		// read-only, so running it again is safe: once, on a connection
		// that answers.
		err = s.attempt(ctx, deadline, f, true)
	}
	return err
}

// attempt runs f once in a read-only transaction on one pooled
// connection; with checked, on one that first answers a ping.
func (s *Source) attempt(ctx context.Context, deadline time.Time, f func(context.Context, *sqlx.Conn) error, checked bool) error {
	conn, err := s.conn(ctx, checked)
	if err != nil {
		return err
	}
	defer release(conn)
	// One round trip opens the transaction, sets its limits and reads the
	// backend's pid: without arguments lib/pq sends the batch through the
	// simple protocol and returns the rows of its last statement. The
	// batch is ours alone (the user's SQL never goes through the simple
	// protocol). BEGIN starts a transaction block that outlives the batch;
	// release rolls it back.
	//
	// Zero would mean no timeout; keep a floor. SET, unlike set_config,
	// needs no EXECUTE privilege (SQLForReadOnlyRole revokes it); its value
	// cannot be a parameter, so it is our own formatted integer.
	// standard_conforming_strings is what the guard's parser assumes; with
	// it off, backslashes in literals would split the text differently.
	ms := max(time.Until(deadline), 100*time.Millisecond).Milliseconds()
	var pid int
	if err := conn.QueryRowxContext(ctx, fmt.Sprintf(`BEGIN READ ONLY;
SET LOCAL statement_timeout = %[1]d;
SET LOCAL lock_timeout = %[1]d;
SET LOCAL idle_in_transaction_session_timeout = %[1]d;
SET LOCAL standard_conforming_strings = on;
SELECT pg_backend_pid()`, ms)).Scan(&pid); err != nil {
		return err
	}
	defer s.cancelAgain(ctx, pid)()
	return f(ctx, conn)
}

// conn takes a pooled connection; with checked, one that answers a
// ping, discarding the dead ones a server restart left in the pool
// (each fails its ping at once).
func (s *Source) conn(ctx context.Context, checked bool) (*sqlx.Conn, error) {
	if !checked {
		return s.db.Connx(ctx)
	}
	for range s.db.Stats().Idle + 1 {
		conn, err := s.db.Connx(ctx)
		if err != nil {
			return nil, err
		}
		if err = conn.PingContext(ctx); err == nil {
			return conn, nil
		}
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // the pool discards it
		_ = conn.Close()
		if !ServerClosed(err) {
			return nil, err
		}
	}
	return s.db.Connx(ctx)
}

// ServerClosed reports whether err says the server had closed the
// connection: lib/pq's bad connection (it reports a FATAL message such as
// 57P01 admin_shutdown so), an end of stream, a reset socket. A read-only
// statement that failed so may run again; a write may have happened.
func ServerClosed(err error) bool {
	if pqErr, ok := errors.AsType[*pq.Error](err); ok {
		return pqErr.Fatal() || strings.HasPrefix(string(pqErr.Code), "08")
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, new(*net.OpError))
}

// cancelAgain cancels backend pid from another pooled connection, every
// quarter second once ctx is over, until the returned stop is called.
//
// lib/pq sends one cancel request when ctx ends, and PostgreSQL drops a
// cancel that reaches the backend between two protocol messages: after
// Bind has planned the query and before Execute runs it. The server-side
// timeouts would then be the only stop, long after the caller left. This
// needs a spare connection in the pool; without one, it waits for one.
//
// stop waits for the watch to end, so that no cancel reaches the backend
// once its connection is back in the pool.
func (s *Source) cancelAgain(ctx context.Context, pid int) (stop func()) {
	wctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-wctx.Done():
			return
		case <-ctx.Done():
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			_, _ = s.db.ExecContext(wctx, "SELECT pg_cancel_backend($1)", pid)
		}
	}()
	return func() {
		cancel()
		<-exited
	}
}

// release ends the transaction, resets the session (settings, prepared
// statements, cursors, LISTEN, advisory locks, temporary tables) and
// returns conn to the pool, or makes the pool discard it when either
// fails. DISCARD ALL cannot run in a transaction block, nor in a batch
// with the ROLLBACK: two round trips.
func release(conn *sqlx.Conn) {
	// ctx may be over by now; the reset needs its own short deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	} else if _, err := conn.ExecContext(ctx, "DISCARD ALL"); err != nil {
		// database/sql closes a connection that reports ErrBadConn.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = conn.Close()
}

// classify turns err into an askbi error with a message safe for users.
func classify(ctx context.Context, err error, budget time.Duration) error {
	if _, ok := errors.AsType[*askbi.Error](err); ok {
		return err
	}
	pqErr, isPQ := errors.AsType[*pq.Error](err)
	var code, class string
	if isPQ && len(pqErr.Code) == 5 {
		code, class = string(pqErr.Code), string(pqErr.Code[:2])
	}
	switch {
	case code == "57014" || code == "55P03" || ctx.Err() != nil || // query_canceled, lock_not_available
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		msg := fmt.Sprintf("the query took longer than the %s limit", sqlcell.Duration(budget))
		if errors.Is(ctx.Err(), context.Canceled) {
			msg = "the query was cancelled" // the caller went away
		}
		return &askbi.Error{Code: askbi.Timeout, Message: msg, Err: err}
	case code == "25006": // read_only_sql_transaction
		return &askbi.Error{Code: askbi.InvalidArgument, Message: "the query tried to write; only read-only queries are allowed", Err: err}
	case userErrorClasses[class]:
		// The message is about the user's own SQL or data, which they may
		// read; it holds no credentials. The detail is left out.
		msg := pqErr.Message
		if pqErr.Hint != "" {
			msg += " (hint: " + pqErr.Hint + ")"
		}
		return &askbi.Error{Code: askbi.InvalidArgument, Message: msg, Err: err}
	case unavailableClasses[class],
		errors.Is(err, driver.ErrBadConn), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, new(*net.OpError)):
		return &askbi.Error{Code: askbi.Unavailable, Message: "the database is unavailable; try again later", Err: err}
	}
	return err
}

// userErrorClasses are SQLSTATE classes caused by the query or the data it
// reads: the user can fix them.
var userErrorClasses = map[string]bool{
	"0A": true, // feature_not_supported
	"21": true, // cardinality_violation
	"22": true, // data_exception
	"2F": true, // sql_routine_exception
	"42": true, // syntax_error_or_access_rule_violation
	"54": true, // program_limit_exceeded
	"P0": true, // plpgsql_error, e.g. RAISE in a function the query calls
}

// unavailableClasses are SQLSTATE classes of a server that cannot serve now.
var unavailableClasses = map[string]bool{
	"08": true, // connection_exception
	"28": true, // invalid_authorization_specification
	"3D": true, // invalid_catalog_name
	"40": true, // transaction_rollback (serialization failure, deadlock)
	"53": true, // insufficient_resources
	"57": true, // operator_intervention (shutdown); 57014 is handled before
}
