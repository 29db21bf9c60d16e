// Package mysqlsource is the MySQL and MariaDB dataexec.Source: it runs
// one bounded, read-only SELECT at a time through sqlx and
// go-sql-driver/mysql, and describes what its user may read
// (dataexec.Inspector).
//
//	db, err := mysqlsource.OpenDB("mysql://askbi_reader:...@db:3306/warehouse")
//	...
//	src, err := mysqlsource.New(db, nil)
//	...
//	t, err := src.Query(ctx, dataexec.Query{SQL: "SELECT country, COUNT(*) FROM signups GROUP BY 1", MaxRows: 1000, MaxBytes: 1 << 20})
//	if askbi.ErrorCode(err) == askbi.InvalidArgument {
//		// askbi.ErrorMessage(err) tells the model what to change.
//	}
//
// The tests run on MariaDB 10.11 (Debian's mariadb-server, started per
// test package by internal/mysqltest); MySQL 8 is supported by the same
// code (max_execution_time instead of max_statement_time) and tested
// only where ASKBI_TEST_MYSQL_DSN points the tests at one.
//
// # Walls
//
// Each query passes, in order:
//
//  1. The sql_mode: the server's own (its global sql_mode, read once by
//     the Source's first call) or Options.SQLMode. The guard parses under
//     it and every session is pinned to it, so that text cannot mean one
//     thing to the guard and another to the server: under
//     NO_BACKSLASH_ESCAPES, 'a\' , SLEEP(5) -- ' is a string and a call;
//     under ANSI_QUOTES, "..." is a name. A mode that switches MariaDB to
//     another dialect (ORACLE, MSSQL, DB2, MAXDB, POSTGRESQL) or one the
//     guard does not know is Unsupported.
//  2. Before parsing, the text: UTF-8, without NUL or control characters
//     other than tab and line breaks, at most Options.MaxSQLBytes long,
//     and without the comments the server runs as SQL: /*! ... */ (with or
//     without a version), MariaDB's /*M! ... */, TiDB's /*T! ... */ and the
//     optimizer hints /*+ ... */ (SET_VAR, MAX_EXECUTION_TIME), refused
//     anywhere in the text, strings included.
//  3. A guard using TiDB's MySQL parser (github.com/pingcap/tidb/pkg/parser,
//     pure Go): exactly one SELECT (WITH, UNION, EXCEPT, INTERSECT, TABLE
//     and VALUES ROW included); anywhere in the tree no INTO (OUTFILE,
//     DUMPFILE, @variable), no FOR UPDATE, FOR SHARE or LOCK IN SHARE MODE,
//     no assignment to a variable (@v := ...), no ? placeholder but the
//     ones bound for variables, and no function that sleeps, waits, locks
//     or reads server files (SLEEP, BENCHMARK, GET_LOCK and the other
//     named-lock functions, the replication waits, LOAD_FILE, sequences,
//     the locking service, version tokens, Spider's and lib_mysqludf_sys's),
//     whatever its schema or quoting. SET, PREPARE, EXECUTE, DO, CALL,
//     LOAD DATA, LOCK TABLES, HANDLER, SHOW, EXPLAIN and every other
//     statement are refused, and so is a data-modifying statement with
//     WITH. A rejection is InvalidArgument with a message the model can
//     act on; nothing runs.
//  4. The row cap pushed into the statement: LIMIT ? (MaxRows+1) is
//     appended, after a line break that ends a trailing comment; a
//     statement with its own LIMIT above the cap is wrapped (SELECT * FROM
//     (...) AS askbi_q LIMIT ?), which keeps its ORDER BY but needs unique
//     column names. The result is parsed and checked once more, with the
//     cap where it was put.
//  5. A connection of its own, with sql_mode, utf8mb4, the UTC time
//     zone, the statement timeout (MariaDB's max_statement_time, MySQL's max_execution_time)
//     and lock_wait_timeout set for the time left before ctx's deadline
//     (Options.DefaultTimeout without one), and START TRANSACTION READ
//     ONLY. The statement is prepared on the server (which accepts one
//     statement only) and run through the binary protocol.
//  6. Reading with the row and byte caps: Truncated is set with
//     dataexec.TruncatedRows or dataexec.TruncatedBytes; a first row alone
//     over the byte cap is TooLarge. A row is read whole before it is
//     measured: its size is bounded by the server's max_allowed_packet (16
//     MiB on MariaDB, 64 MiB on MySQL 8 by default), not by MaxBytes.
//  7. When ctx ends (the caller hung up, or the deadline passed), or the
//     byte cap stops reading, the driver closes the connection and the
//     statement is killed with KILL QUERY from a second connection, again
//     until the session is gone; Query returns after that.
//  8. The connection is closed, never reused: nothing a call leaves on its
//     session (user variables, session variables, named locks, temporary
//     tables, prepared statements) reaches another call. (The driver does
//     not send COM_RESET_CONNECTION, which would let it be reused.)
//
// The guard cannot see into views or stored functions the query calls: a
// view over SLEEP runs until the timeout, and a function that writes is
// stopped by the READ ONLY transaction. TiDB's parser reads MySQL's
// grammar, not all of MariaDB's: MariaDB-only syntax (VALUES (1), (2)
// without ROW, FETCH FIRST, PREVIOUS VALUE FOR) and a few names the
// parser takes for keywords (a function called slow or status; quote it:
// `slow`()) are refused as syntax errors, which fails closed. The last
// wall is the user's privileges.
//
// # Variables
//
// Source is a dataexec.VariableBinder. Each {{name}} reference in the SQL
// becomes a ? placeholder, sent with the prepared statement apart from its
// text, so no value can change the statement. A reference inside a
// string, a quoted name or a comment (read under the pinned sql_mode), a ?
// written by hand, a reference to a name Query.Variables lacks and a value
// of the wrong shape are InvalidArgument before anything runs; a
// placeholder the parser sees elsewhere than where it was put is refused
// too. Numbers are BIGINT when they are integers that fit, DECIMAL(p, s)
// when they have a point, DOUBLE with an exponent; strings are utf8mb4
// text; dates CAST(? AS DATE); booleans MySQL's 1 and 0, as it has no
// boolean type.
//
// # A SELECT-only user
//
// Connect as a user that can read and nothing else. [SQLForReadOnlyUser]
// returns these statements with the names quoted; as an administrator:
//
//	CREATE USER IF NOT EXISTS 'askbi_reader'@'%' IDENTIFIED BY '...';
//	ALTER USER 'askbi_reader'@'%' IDENTIFIED BY '...';
//	REVOKE ALL PRIVILEGES, GRANT OPTION FROM 'askbi_reader'@'%';
//	GRANT SELECT ON `warehouse`.* TO 'askbi_reader'@'%';
//
// Without FILE, LOAD_FILE reads nothing and INTO OUTFILE writes nothing;
// without EXECUTE, no stored routine runs; SLEEP, GET_LOCK and BENCHMARK
// need no privilege, which is why the guard refuses them.
//
// # Results
//
// Cells are JSON-friendly: integers are int64 (BIGINT UNSIGNED above
// 2^63-1 json.Number), FLOAT and DOUBLE float64, DECIMAL json.Number,
// DATE, DATETIME and TIMESTAMP time.Time in UTC, MySQL's JSON decoded
// (numbers as json.Number; MariaDB's JSON is text and stays a string),
// BIT an integer, binary strings (BINARY, VARBINARY, BLOB, GEOMETRY)
// base64, and everything else (text, TIME, ENUM, SET) its text. NULL is
// nil. Booleans are TINYINT: 1 and 0.
package mysqlsource
