package pgsource

import (
	"strings"

	"github.com/lib/pq"
)

// SQLForReadOnlyRole returns the statements that create (or update) role as
// a login that can only read the tables and views of schema in the current
// database, now and later, for the Source to connect as. Run them in order
// as a superuser, or as the owner of the schema's tables with CREATEROLE
// (the last statement then needs a superuser). They can be run again: an
// existing role gets the password and settings anew.
//
// An empty password leaves the role without one (for peer or trust
// authentication). The statements hold the password, so do not log them.
//
// The last statement revokes EXECUTE from PUBLIC on functions with side
// effects or that run SQL text (pg_sleep, advisory locks, set_config,
// pg_notify, large objects, server files, query_to_xml and the like,
// dblink): this applies to every role of the database except superusers,
// so leave it out where other applications need those functions. Note that
// a non-superuser cannot run pg_dump without set_config.
func SQLForReadOnlyRole(role, password, schema string) []string {
	r, sch := pq.QuoteIdentifier(role), pq.QuoteIdentifier(schema)
	pw := "NULL"
	if password != "" {
		pw = pq.QuoteLiteral(password)
	}
	create := `BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = ` + pq.QuoteLiteral(role) + `) THEN
    CREATE ROLE ` + r + `;
  END IF;
  EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), ` + pq.QuoteLiteral(role) + `);
END`
	return []string{
		"DO " + dollarQuote(create),
		"ALTER ROLE " + r + " WITH LOGIN PASSWORD " + pw + " NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
		// Defaults for any client using these credentials; the Source sets
		// its own per transaction. They are not a security boundary (a
		// session may change them); the privileges below are.
		"ALTER ROLE " + r + " SET default_transaction_read_only = on",
		"ALTER ROLE " + r + " SET statement_timeout = '30s'",
		"ALTER ROLE " + r + " SET idle_in_transaction_session_timeout = '60s'",
		"GRANT USAGE ON SCHEMA " + sch + " TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA " + sch + " TO " + r,
		// Tables the current user creates in schema later are readable too.
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + sch + " GRANT SELECT ON TABLES TO " + r,
		revokeDangerousFunctions,
	}
}

// revokeDangerousFunctions revokes EXECUTE from PUBLIC on the built-in
// functions the guard denies whose loss does not break ordinary writers
// (sequence functions stay: column defaults call nextval), and on dblink's.
const revokeDangerousFunctions = `DO $askbi$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
    WHERE (n.nspname = 'pg_catalog' AND (
        p.proname IN ('set_config', 'pg_notify', 'loread', 'lowrite', 'ts_stat', 'pg_stat_file')
        OR p.proname LIKE ANY (ARRAY['pg\_sleep%', 'pg\_advisory\_%', 'pg\_try\_advisory\_%', 'lo\_%',
          'pg\_read\_%', 'pg\_ls\_%', 'query\_to\_xml%', 'cursor\_to\_xml%', 'table\_to\_xml%',
          'schema\_to\_xml%', 'database\_to\_xml%'])))
      OR p.proname LIKE 'dblink%'
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END
$askbi$`

// dollarQuote quotes body with a dollar-quote tag that body does not
// contain, so no name or password inside can end the quote.
func dollarQuote(body string) string {
	tag := "$askbi$"
	for strings.Contains(body, tag) {
		tag = tag[:len(tag)-1] + "_$"
	}
	return tag + "\n" + body + "\n" + tag
}
