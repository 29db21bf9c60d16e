package mysqlsource

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
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
	// MaxConns is the most connections the pool opens. Zero means 16. Run
	// at most MaxConns-1 queries at once (bound them above, per team or
	// source): a query whose caller went away is killed from a spare
	// connection.
	MaxConns int
	// SQLMode is the sql_mode the guard parses under and every session is
	// pinned to, such as "ANSI_QUOTES,STRICT_TRANS_TABLES". Empty means the
	// server's own (its global sql_mode), read once, by the Source's first
	// call, before that call's SQL is checked.
	SQLMode string
}

// Source runs bounded, read-only SQL on MySQL or MariaDB. It implements
// [dataexec.Source], [dataexec.Inspector] and [dataexec.VariableBinder],
// and is safe for concurrent use.
type Source struct {
	db             *sqlx.DB
	defaultTimeout time.Duration
	maxSQL         int
	// mode is the sql_mode pinned on every session: from Options.SQLMode,
	// or learned from the server by the first call (under learning).
	mode     atomic.Pointer[sqlMode]
	learning sync.Mutex
}

var (
	_ dataexec.Source         = (*Source)(nil)
	_ dataexec.Inspector      = (*Source)(nil)
	_ dataexec.VariableBinder = (*Source)(nil)
)

// defaultMode is MySQL's and MariaDB's lexing without sql_mode flags:
// backslash escapes in strings, "..." a string.
var defaultMode = sqlMode{}

// New returns a Source over db, which should connect as a SELECT-only
// user (see [SQLForReadOnlyUser]); open it with [OpenDB]. Every call
// takes a connection of its own and closes it at the end: nothing a call
// leaves on its session (user variables, session settings, named locks,
// temporary tables, prepared statements) reaches another. New sizes db's
// pool (see Options.MaxConns). opts may be nil. It returns
// InvalidArgument for an Options.SQLMode the guard cannot read.
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
	if opts.SQLMode != "" {
		m, err := parseSQLMode(opts.SQLMode)
		if err != nil {
			return nil, askbi.Errorf(askbi.InvalidArgument, "Options.SQLMode: %s", askbi.ErrorMessage(err))
		}
		s.mode.Store(&m)
	}
	conns := opts.MaxConns
	if conns <= 0 {
		conns = 16
	}
	db.SetMaxOpenConns(conns)
	// Idle connections are only those that ran a lookup or a KILL: every
	// session a query ran on is closed.
	db.SetMaxIdleConns(2)
	return s, nil
}

// OpenDB opens a pool of connections to dsn, a go-sql-driver/mysql DSN
// ("user:password@tcp(host:3306)/warehouse") or a URL
// ("mysql://user:password@host:3306/warehouse", "?socket=/path" for a
// Unix socket; mariadb:// too), set up as the Source wants it: times as
// time.Time in UTC, statements always prepared on the server, one
// statement a call, no LOCAL INFILE. Pass the pool to New, and close it
// when done.
func OpenDB(dsn string) (*sqlx.DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(c), "mysql"), nil
}

// ParseDSN reads dsn as [OpenDB] does: a go-sql-driver/mysql DSN or a
// mysql:// (or mariadb://) URL, with the Source's settings applied.
func ParseDSN(dsn string) (*mysql.Config, error) {
	var cfg *mysql.Config
	var err error
	if u, uerr := url.Parse(dsn); uerr == nil && (u.Scheme == "mysql" || u.Scheme == "mariadb") {
		cfg, err = configFromURL(u)
	} else {
		cfg, err = mysql.ParseDSN(dsn)
	}
	if err != nil {
		return nil, err
	}
	cfg.ParseTime, cfg.Loc = true, time.UTC
	cfg.InterpolateParams, cfg.MultiStatements, cfg.AllowAllFiles = false, false, false
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	return cfg, nil
}

// configFromURL is the configuration of a mysql:// URL: its query holds
// the DSN's parameters, and socket names a Unix socket.
func configFromURL(u *url.URL) (*mysql.Config, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, err
	}
	socket := q.Get("socket")
	q.Del("socket")
	cfg, err := mysql.ParseDSN("/?" + q.Encode())
	if err != nil {
		return nil, err
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.Net, cfg.Addr = "tcp", u.Host
	if socket != "" {
		cfg.Net, cfg.Addr = "unix", socket
	} else if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	return cfg, nil
}

// Query runs q.SQL, which must be one read-only SELECT, with its {{name}}
// references bound to q.Variables as parameters, and returns at most
// q.MaxRows rows whose cells' estimated JSON size stays within
// q.MaxBytes. It returns the codes [dataexec.Source] and
// [dataexec.VariableBinder] document, and Unsupported when the server's
// sql_mode is one the guard cannot read.
func (s *Source) Query(ctx context.Context, q dataexec.Query) (_ *dataexec.Table, err error) {
	defer askbi.Wrap(&err, "mysqlsource.Source.Query")
	// The limit is on the SQL as written: what bind puts in place of its
	// references may make it longer.
	if len(q.SQL) > s.maxSQL {
		return nil, errTooLong(len(q.SQL), s.maxSQL)
	}
	maxRows, maxBytes := q.MaxRows, q.MaxBytes
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	ctx, cancel := s.withDeadline(ctx)
	defer cancel()
	mode, err := s.sqlMode(ctx)
	if err != nil {
		return nil, err
	}
	b, err := bind(q.SQL, q.Variables, mode)
	if err != nil {
		return nil, err
	}
	st, err := check(b.sql, mode, b.offsets, b.args, max(s.maxSQL, len(b.sql)), maxRows)
	if err != nil {
		return nil, err
	}
	var t *dataexec.Table
	err = s.session(ctx, mode, func(ctx context.Context, conn *sqlx.Conn, halt func()) (err error) {
		t, err = read(ctx, conn, st, maxRows, maxBytes, halt)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// withDeadline returns ctx with its deadline, or one DefaultTimeout away.
func (s *Source) withDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, s.defaultTimeout)
}

// sqlMode returns the sql_mode to parse under and pin: Options.SQLMode,
// or the server's global one, read on the first call that needs it.
func (s *Source) sqlMode(ctx context.Context) (sqlMode, error) {
	if m := s.mode.Load(); m != nil {
		return *m, nil
	}
	s.learning.Lock()
	defer s.learning.Unlock()
	if m := s.mode.Load(); m != nil {
		return *m, nil
	}
	budget := timeLeft(ctx)
	var text string
	if err := s.db.GetContext(ctx, &text, "SELECT @@GLOBAL.sql_mode"); err != nil {
		return sqlMode{}, classify(ctx, err, budget)
	}
	m, err := parseSQLMode(text)
	if err != nil {
		return sqlMode{}, err
	}
	s.mode.Store(&m)
	return m, nil
}

func timeLeft(ctx context.Context) time.Duration {
	d, _ := ctx.Deadline()
	return max(time.Until(d), 0)
}

// read runs st and reads its capped result. halt stops the query on the
// server when reading stops early, instead of draining rows it will not
// use.
func read(ctx context.Context, conn *sqlx.Conn, st statement, maxRows int, maxBytes int64, halt func()) (*dataexec.Table, error) {
	// Prepared on the server, which accepts one statement only, and run
	// through the binary protocol, which sends the parameters as values.
	stmt, err := conn.PrepareContext(ctx, st.sql)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	rows, err := stmt.QueryContext(ctx, st.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	t := &dataexec.Table{Columns: make([]string, len(cols)), Rows: [][]any{}}
	types := make([]string, len(cols))
	for i, c := range cols {
		t.Columns[i], types[i] = c.Name(), c.DatabaseTypeName()
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var total int64
	for rows.Next() {
		if len(t.Rows) == maxRows {
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedRows
			return t, nil
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(vals))
		size := int64(2) // [ and ]
		for i, v := range vals {
			cell, n, err := normalize(v, types[i])
			if err != nil {
				return nil, err
			}
			row[i], size = cell, size+n+1
		}
		if total+size > maxBytes {
			halt()
			if len(t.Rows) == 0 {
				return nil, errRowTooLarge(maxBytes)
			}
			t.Truncated, t.TruncatedReason = true, dataexec.TruncatedBytes
			return t, nil
		}
		total += size
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return t, nil
}

func errRowTooLarge(maxBytes int64) error {
	return askbi.Errorf(askbi.TooLarge, "a single row is larger than the %s result cap; select fewer or smaller columns", sqlcell.Bytes(maxBytes))
}

// session runs f on a connection of its own, in a READ ONLY transaction
// under the server's statement timeout, which ends with ctx's deadline,
// and with mode pinned. The connection is closed afterwards, which ends
// the transaction and everything the session held. When ctx ends first,
// or f calls halt, the statement running on it is killed from another
// connection; session returns once it is gone (or killBound passed).
func (s *Source) session(ctx context.Context, mode sqlMode, f func(ctx context.Context, conn *sqlx.Conn, halt func()) error) (err error) {
	budget := timeLeft(ctx)
	defer func() {
		if err != nil {
			err = classify(ctx, err, budget)
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return err
	}
	var id int64
	var version string
	if err := conn.QueryRowxContext(ctx, "SELECT CONNECTION_ID(), VERSION()").Scan(&id, &version); err != nil {
		discard(conn)
		return err
	}
	qctx, halt := context.WithCancel(ctx)
	defer halt()
	stop := s.killOnCancel(qctx, id)
	err = setUp(qctx, conn, mode, version)
	if err == nil {
		err = f(qctx, conn, halt)
	}
	discard(conn)
	stop()
	return err
}

// setUp pins the session's settings and opens its read-only transaction.
func setUp(ctx context.Context, conn *sqlx.Conn, mode sqlMode, version string) error {
	if _, err := conn.ExecContext(ctx, settings(mode, version, timeLeft(ctx))); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "START TRANSACTION READ ONLY")
	return err
}

// settings is the statement that pins a session's settings for a call
// with left to run on the server of version. It is ours alone, and so is
// every value in it: the mode was checked by parseSQLMode (upper-case
// letters, _ and commas).
func settings(mode sqlMode, version string, left time.Duration) string {
	// MariaDB's max_statement_time (seconds) covers any statement;
	// MySQL's max_execution_time (milliseconds) covers read-only SELECTs,
	// which is all that runs here. Zero would mean no limit: keep a floor.
	ms := max(left, 100*time.Millisecond).Milliseconds()
	timeout := fmt.Sprintf("max_execution_time = %d", ms)
	if isMariaDB(version) {
		timeout = fmt.Sprintf("max_statement_time = %.3f", float64(ms)/1000)
	}
	locks := int64(math.Ceil(max(left, time.Second).Seconds())) // whole seconds, at least 1
	// The time zone is UTC, as the driver reads TIMESTAMP values (which
	// the server writes in the session's zone).
	return fmt.Sprintf("SET NAMES utf8mb4, SESSION sql_mode = '%s', SESSION time_zone = '+00:00', SESSION %s, SESSION lock_wait_timeout = %d",
		mode.text, timeout, locks)
}

func isMariaDB(version string) bool { return strings.Contains(version, "MariaDB") }

// discard closes conn's session instead of returning it to the pool:
// database/sql closes a connection that reports ErrBadConn.
func discard(conn *sqlx.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// killBound bounds how long a call waits, once its caller went away, for
// the killed statement to end on the server.
const killBound = 5 * time.Second

// killOnCancel kills the statement running on session id once ctx ends,
// until the returned stop is called.
//
// When ctx ends, go-sql-driver closes the connection at once, but the
// server finishes the statement that runs on it before it notices: a
// long aggregate would run on to its timeout. So KILL QUERY is sent from
// another connection, and again every 50 ms until the session is gone
// (KILL answers "unknown thread"): a KILL QUERY that reaches the server
// before the statement started is dropped. The session is gone once its
// statement ended and the caller closed the connection.
//
// stop waits for the killing to end, so that no KILL outlives the call.
func (s *Source) killOnCancel(ctx context.Context, id int64) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		kctx, cancel := context.WithTimeout(context.Background(), killBound)
		defer cancel()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			_, err := s.db.ExecContext(kctx, "KILL QUERY "+strconv.FormatInt(id, 10))
			if myErr, ok := errors.AsType[*mysql.MySQLError](err); ok && myErr.Number == errUnknownThread {
				return
			}
			select {
			case <-kctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// MySQL and MariaDB error numbers the Source tells apart.
const (
	errUnknownThread         = 1094 // ER_NO_SUCH_THREAD
	errReadOnlyTransaction   = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	errQueryInterrupted      = 1317 // ER_QUERY_INTERRUPTED: KILL QUERY
	errStatementTimeout      = 1969 // ER_STATEMENT_TIMEOUT: MariaDB's max_statement_time
	errExecutionTimeout      = 3024 // ER_QUERY_TIMEOUT: MySQL's max_execution_time
	errLockWaitTimeout       = 1205 // ER_LOCK_WAIT_TIMEOUT
	errTableAccessDenied     = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errColumnAccessDenied    = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	errProcedureAccessDenied = 1370 // ER_PROCACCESS_DENIED_ERROR
)

// classify turns err into an askbi error with a message safe for users.
func classify(ctx context.Context, err error, budget time.Duration) error {
	if _, ok := errors.AsType[*askbi.Error](err); ok {
		return err
	}
	myErr, isMy := errors.AsType[*mysql.MySQLError](err)
	var num uint16
	var class string
	if isMy {
		num, class = myErr.Number, string(myErr.SQLState[:2])
	}
	switch {
	case num == errQueryInterrupted || num == errStatementTimeout || num == errExecutionTimeout || num == errLockWaitTimeout ||
		ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		msg := fmt.Sprintf("the query took longer than the %s limit", sqlcell.Duration(budget))
		if errors.Is(ctx.Err(), context.Canceled) {
			msg = "the query was cancelled" // the caller went away
		}
		return &askbi.Error{Code: askbi.Timeout, Message: msg, Err: err}
	case num == errReadOnlyTransaction:
		return &askbi.Error{Code: askbi.InvalidArgument, Message: "the query tried to write; only read-only queries are allowed", Err: err}
	case isMy && (unavailableErrors[num] || class == "08" || class == "28"),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, new(*net.OpError)):
		return &askbi.Error{Code: askbi.Unavailable, Message: "the database is unavailable; try again later", Err: err}
	case isMy && (userErrorClasses[class] || userErrors[num]):
		// The message is about the user's own SQL or data, which they may
		// read; the connection's user and host are left out.
		return &askbi.Error{Code: askbi.InvalidArgument, Message: userRe.ReplaceAllString(myErr.Message, "the connection's user"), Err: err}
	}
	return err
}

// userRe finds the account in a server message ("denied to user
// 'reader'@'%'"), whose name may hold quotes.
var userRe = regexp.MustCompile(`user '.*?'@'[^']*'`)

// userErrorClasses are SQLSTATE classes caused by the query or the data
// it reads: the user can fix them.
var userErrorClasses = map[string]bool{
	"0A": true, // feature not supported
	"21": true, // cardinality violation (subquery returns more than 1 row)
	"22": true, // data exception
	"23": true, // integrity constraint: an ambiguous column, for a read
	"42": true, // syntax error or access rule violation
}

// userErrors are errors of the query in SQLSTATE HY000, the general class.
var userErrors = map[uint16]bool{
	1111: true,                         // invalid use of group function
	1221: true,                         // incorrect usage
	1267: true, 1270: true, 1271: true, // illegal mix of collations
	1356: true,                         // a view references what does not exist
	1436: true,                         // thread stack overrun: too deeply nested
	3143: true, 3144: true, 3146: true, // JSON paths and values
	errTableAccessDenied: true, errColumnAccessDenied: true, errProcedureAccessDenied: true,
}

// unavailableErrors are errors of a server that cannot serve now, or of
// the connection's settings, whatever their SQLSTATE.
var unavailableErrors = map[uint16]bool{
	1037: true, 1038: true, 1041: true, 1114: true, // out of memory, a temporary table full
	1040: true, 1203: true, 1226: true, // too many connections, the user's limits
	1044: true, 1045: true, 1049: true, // access to the database, login, unknown database
	1053: true, 1927: true, // shutdown, connection killed
	1129: true, 1130: true, // host blocked or not allowed
	1213: true, // deadlock
}
