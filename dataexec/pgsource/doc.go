// Package pgsource is the PostgreSQL dataexec.Source: it runs one bounded,
// read-only SELECT at a time through sqlx and lib/pq, and describes what its
// role may read (dataexec.Inspector).
//
//	db, err := pgsource.OpenDB("postgres://askbi_reader:...@db:5432/warehouse")
//	...
//	src, err := pgsource.New(db, nil)
//	...
//	t, err := src.Query(ctx, dataexec.Query{SQL: "SELECT country, count(*) FROM signups GROUP BY 1", MaxRows: 1000, MaxBytes: 1 << 20})
//	if askbi.ErrorCode(err) == askbi.InvalidArgument {
//		// askbi.ErrorMessage(err) tells the model what to change.
//	}
//
// # Walls
//
// Each query passes, in order:
//
//  1. A guard using PostgreSQL's own parser (libpg_query, linked through
//     cgo by pg_query_go, so building needs a C compiler): exactly one SELECT (VALUES
//     and TABLE included) or EXPLAIN without ANALYZE; anywhere in the tree
//     no other statement, no SELECT INTO, no FOR UPDATE/SHARE, no
//     data-modifying WITH, no $n parameters but the ones bound for
//     variables (see below), and no function from a
//     denylist (sleeping, advisory locks, sequences, set_config, signals,
//     replication, server files, large objects, dblink, query_to_xml and
//     others that run SQL text), whatever the schema or quoting. The text
//     is UTF-8, at most Options.MaxSQLBytes long and nested at most about
//     1,000 levels deep. A rejection is InvalidArgument with a message the
//     model can act on; nothing runs.
//  2. A dedicated pooled connection, a READ ONLY transaction, and
//     statement_timeout, lock_timeout and idle_in_transaction_session_timeout
//     set for the time left before ctx's deadline (Options.DefaultTimeout
//     without one), all in one round trip. A cancelled ctx cancels the query on the server; as
//     PostgreSQL drops a cancel that arrives between two protocol messages,
//     the cancel is repeated from a spare pooled connection until the query
//     stops.
//  3. The statement alone through the extended protocol (which refuses a
//     second statement), first described (its columns, reading no row),
//     then wrapped so that the server stops after MaxRows+1 rows and
//     refuses a row whose variable-length values' text is larger than
//     MaxBytes; text, varchar and bytea are measured from their stored
//     length, without detoasting. Values whose text has a bound (numeric:
//     147,457 bytes, numeric(p, s) and varchar(n) less) are counted only
//     when their bounds add up to more than MaxBytes: a row the server
//     lets through holds at most twice MaxBytes, and step 4 refuses it.
//     With a pool from OpenDB, the describe and the query take one round
//     trip each.
//  4. Reading with the row and byte caps: Truncated is set with
//     dataexec.TruncatedRows or dataexec.TruncatedBytes; a first row alone
//     over the byte cap is TooLarge.
//  5. ROLLBACK, then DISCARD ALL before the connection goes back to the
//     pool (settings, prepared statements, cursors, LISTEN, advisory locks,
//     temporary tables); a connection that cannot be reset is closed.
//
// The guard cannot see into views or functions the query calls: a view over
// pg_sleep runs until the timeout. The last wall is the role's privileges.
//
// # Variables
//
// Source is a dataexec.VariableBinder. Each {{name}} reference in the SQL
// becomes a bind parameter of its own, sent with the statement apart from
// its text, so no value can change the statement. A reference inside a
// string, a quoted name, a dollar quote or a comment, a $n written by hand,
// a reference to a name Query.Variables lacks and a value of the wrong
// shape are InvalidArgument before anything runs. Strings are untyped
// parameters, resolved by the server from where they stand as a quoted
// literal is; numbers are integer, bigint or numeric as the constant
// would be; dates are date and booleans boolean. Where the server cannot
// tell a string's type ({{s}} IS NULL) its message names the variable;
// {{s}}::text fixes it. The typed literal form DATE {{d}} does not parse
// with a parameter; write {{d}}::date.
//
// # A SELECT-only role
//
// Connect as a role that can read and nothing else. [SQLForReadOnlyRole]
// returns these statements with the names quoted; in outline, as a
// superuser:
//
//	CREATE ROLE askbi_reader;  -- only when missing
//	GRANT CONNECT ON DATABASE warehouse TO askbi_reader;
//	ALTER ROLE askbi_reader WITH LOGIN PASSWORD '...' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
//	ALTER ROLE askbi_reader SET default_transaction_read_only = on;
//	ALTER ROLE askbi_reader SET statement_timeout = '30s';
//	ALTER ROLE askbi_reader SET idle_in_transaction_session_timeout = '60s';
//	GRANT USAGE ON SCHEMA public TO askbi_reader;
//	GRANT SELECT ON ALL TABLES IN SCHEMA public TO askbi_reader;
//	ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO askbi_reader;
//	-- Database-wide: every non-superuser role loses these.
//	REVOKE EXECUTE ON FUNCTION pg_sleep(double precision), pg_advisory_lock(bigint), ...,
//	  set_config(text, text, boolean), pg_notify(text, text), lo_import(text), ...,
//	  pg_read_file(text), query_to_xml(text, boolean, boolean, text), ..., dblink(text), ...
//	  FROM PUBLIC;
//
// Sequence functions keep EXECUTE (column defaults call nextval); the role
// has no USAGE on sequences, so it cannot advance them.
//
// # Results
//
// Cells are JSON-friendly: integers are int64, floats float64 (NaN and
// infinities included), numeric json.Number, json and jsonb decoded (numbers
// as json.Number), timestamps and dates time.Time, time of day a string,
// bytea base64, and everything else (uuid, interval, arrays, enums) its
// PostgreSQL text form. NULL is nil.
package pgsource
