package pgsource

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/askbi/askbi"
)

const testMaxSQL = 64 << 10

func TestCheckAccepts(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want statement
	}{
		{"select", "SELECT 1", statement{sql: "SELECT 1"}},
		{"trailing semicolon", "SELECT 1;", statement{sql: "SELECT 1"}},
		{"semicolon then comment", "SELECT 1; -- done", statement{sql: "SELECT 1"}},
		{"trailing comment kept", "SELECT 1 -- done", statement{sql: "SELECT 1 -- done"}},
		{"leading comment", "/* why */ SELECT 1 ;", statement{sql: "/* why */ SELECT 1 "}},
		{"semicolon in literal", "SELECT 'a;b';", statement{sql: "SELECT 'a;b'"}},
		{"semicolon in dollar quote", "SELECT $$a;b$$", statement{sql: "SELECT $$a;b$$"}},
		{"table", "TABLE t", statement{sql: "TABLE t"}},
		{"values", "VALUES (1, 'a'), (2, 'b')", statement{sql: "VALUES (1, 'a'), (2, 'b')"}},
		{"cte", "WITH x AS (SELECT 1 AS a) SELECT a FROM x", statement{sql: "WITH x AS (SELECT 1 AS a) SELECT a FROM x"}},
		{"recursive cte", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r", statement{sql: "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r"}},
		{"window", "SELECT id, sum(id) OVER (ORDER BY id) FROM t", statement{sql: "SELECT id, sum(id) OVER (ORDER BY id) FROM t"}},
		{"ordered-set aggregate", "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) FROM t", statement{sql: "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) FROM t"}},
		{"lateral", "SELECT * FROM t, LATERAL (SELECT t.id * 2 AS d) x", statement{sql: "SELECT * FROM t, LATERAL (SELECT t.id * 2 AS d) x"}},
		{"set operation", "SELECT 1 UNION SELECT 2 ORDER BY 1", statement{sql: "SELECT 1 UNION SELECT 2 ORDER BY 1"}},
		{"sql value functions", "SELECT current_date, now(), current_user", statement{sql: "SELECT current_date, now(), current_user"}},
		{"column named like a denied prefix", "SELECT t.lo_price, nextval FROM t", statement{sql: "SELECT t.lo_price, nextval FROM t"}},
		// With standard_conforming_strings on (the parser's view, and the
		// session's), this is one literal continued on the next line.
		{"backslash in literal", "SELECT 'x\\'\n'; DELETE FROM t; --'", statement{sql: "SELECT 'x\\'\n'; DELETE FROM t; --'"}},
		{"explain", "EXPLAIN SELECT * FROM t", statement{sql: "EXPLAIN SELECT * FROM t", explain: true}},
		{"explain options", "EXPLAIN (VERBOSE, FORMAT JSON) SELECT 1;", statement{sql: "EXPLAIN (VERBOSE, FORMAT JSON) SELECT 1", explain: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := check(tc.sql, testMaxSQL, 0)
			if err != nil {
				t.Fatalf("check(%q) = %v", tc.sql, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(statement{})); diff != "" {
				t.Errorf("check(%q) mismatch (-want +got):\n%s", tc.sql, diff)
			}
		})
	}
}

// TestCheckAcceptsLarge checks that big but flat queries pass the depth
// bound and that deep-but-allowed ones parse without harming the parser.
func TestCheckAcceptsLarge(t *testing.T) {
	r := strings.Repeat
	tests := []struct{ name, sql string }{
		{"long IN list", "SELECT 1 WHERE 1 IN (" + r("1, ", 5000) + "1)"},
		{"long OR chain", "SELECT 1 FROM t WHERE " + r("id = 1 OR ", 800) + "false"},
		{"many VALUES rows", "VALUES " + r("(1, 'a'), ", 3000) + "(2, 'b')"},
		{"operator chain below the bound", "SELECT 1" + r(" + 1", 900)},
		{"nested calls below the bound", "SELECT " + r("abs(", 900) + "1" + r(")", 900)},
		{"nested subqueries below the bound", "SELECT " + r("(SELECT ", 450) + "1" + r(")", 450)},
		{"joins below the bound", "SELECT 1 FROM t" + r(" JOIN t USING (id)", 300)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := check(tc.sql, 1<<20, 0); err != nil {
				t.Fatalf("check = %v", err)
			}
		})
	}
	if _, err := check("SELECT 1 + 1", testMaxSQL, 0); err != nil {
		t.Fatalf("the parser is unhealthy after deep queries: %v", err)
	}
}

func TestCheckRejects(t *testing.T) {
	r := strings.Repeat
	tests := []struct {
		name string
		sql  string
		want string // a fragment of the message
	}{
		{"empty", "", "the SQL is empty"},
		{"blank", " \n\t", "the SQL is empty"},
		{"only a comment", "-- nothing", "no statement"},
		{"only semicolons", ";;", "no statement"},
		{"too long", "SELECT '" + r("x", 1<<20) + "'", "at most 65536 are allowed"},
		{"syntax error", "SELEC 1", "SQL syntax error: syntax error at or near \"SELEC\""},
		{"unterminated literal", "SELECT 'x", "SQL syntax error"},

		// Several statements, however hidden.
		{"two selects", "SELECT 1; SELECT 2", "remove the second statement"},
		{"commit then delete", "COMMIT; DELETE FROM t", "remove the second statement"},
		{"end then drop", "END; DROP TABLE t", "remove the second statement"},
		{"read write then delete", "SET TRANSACTION READ WRITE; DELETE FROM t; COMMIT", "remove the second statement"},
		{"semicolon in block comment", "SELECT 1 /* ; */; DELETE FROM t", "remove the second statement"},
		{"semicolon in dollar quote", "SELECT $$;$$; DELETE FROM t", "remove the second statement"},
		{"line comment", "SELECT 1 -- x\n; DELETE FROM t", "remove the second statement"},
		{"values then delete", "VALUES (1) ; DELETE FROM t", "remove the second statement"},

		// Not a SELECT.
		{"delete", "DELETE FROM t", "not DELETE"},
		{"insert select", "INSERT INTO t SELECT * FROM t", "not INSERT"},
		{"update", "UPDATE t SET v = 'x'", "not UPDATE"},
		{"merge", "MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE", "not MERGE"},
		{"do", "DO $$ BEGIN DELETE FROM t; END $$", "not DO"},
		{"copy to stdout", "COPY t TO STDOUT", "not COPY"},
		{"copy query", "COPY (SELECT 1) TO STDOUT", "not COPY"},
		{"prepare", "PREPARE p AS SELECT 1", "not PREPARE"},
		{"execute", "EXECUTE p", "not EXECUTE"},
		{"listen", "LISTEN x", "not LISTEN"},
		{"notify", "NOTIFY x", "not NOTIFY"},
		{"call", "CALL p()", "not CALL"},
		{"begin", "BEGIN", "not a transaction statement"},
		{"commit", "COMMIT", "not a transaction statement"},
		{"set", "SET search_path = evil", "not SET or RESET"},
		{"reset all", "RESET ALL", "not SET or RESET"},
		{"show all", "SHOW ALL", "not SHOW"},
		{"create temp table", "CREATE TEMP TABLE x (a int)", "not CREATE TABLE"},
		{"create table as", "CREATE TABLE x AS SELECT 1", "not CREATE TABLE AS"},
		{"declare cursor", "DECLARE c CURSOR FOR SELECT 1", "not DECLARE CURSOR"},
		{"lock", "LOCK TABLE t", "not LOCK"},
		{"truncate", "TRUNCATE t", "not TRUNCATE"},
		{"analyze", "ANALYZE t", "not VACUUM or ANALYZE"},
		{"discard", "DISCARD ALL", "not DISCARD"},
		{"grant", "GRANT SELECT ON t TO PUBLIC", "not this statement"},

		// EXPLAIN.
		{"explain analyze delete", "EXPLAIN ANALYZE DELETE FROM t", "EXPLAIN ANALYZE is not allowed"},
		{"explain analyze select", "EXPLAIN ANALYZE SELECT 1", "EXPLAIN ANALYZE is not allowed"},
		{"explain (analyze)", "EXPLAIN (ANALYZE) SELECT 1", "EXPLAIN ANALYZE is not allowed"},
		{"explain (analyze false)", "EXPLAIN (ANALYZE false) SELECT 1", "EXPLAIN ANALYZE is not allowed"},
		{"explain delete", "EXPLAIN DELETE FROM t", "not DELETE"},
		{"explain insert", "EXPLAIN (COSTS off) INSERT INTO t VALUES (1)", "not INSERT"},
		{"explain select into", "EXPLAIN SELECT * INTO x FROM t", "INTO is not allowed"},

		// Writes and locks inside a SELECT.
		{"data-modifying cte", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "data-modifying statements in WITH are not allowed"},
		{"insert cte", "WITH d AS (INSERT INTO t VALUES (9) RETURNING *) SELECT 1", "data-modifying statements in WITH are not allowed"},
		{"nested update cte", "SELECT * FROM (WITH u AS (UPDATE t SET v = 'x' RETURNING 1) SELECT * FROM u) s", "data-modifying statements in WITH are not allowed"},
		{"for update", "SELECT * FROM t FOR UPDATE", "SELECT ... FOR UPDATE is not allowed"},
		{"for no key update", "SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED", "FOR NO KEY UPDATE is not allowed"},
		{"for share in subquery", "SELECT * FROM (SELECT * FROM t FOR SHARE) s", "FOR SHARE is not allowed"},
		{"for key share in cte", "WITH x AS (SELECT * FROM t FOR KEY SHARE) SELECT * FROM x", "FOR KEY SHARE is not allowed"},
		{"select into", "SELECT * INTO x FROM t", "SELECT ... INTO is not allowed"},
		{"parameter", "SELECT $1", "parameters such as $1 are not supported"},

		// Denied functions, however spelled and wherever they hide.
		{"nextval", "SELECT nextval('s')", "function nextval is not allowed"},
		{"setval", "SELECT setval('s', 5)", "function setval is not allowed"},
		{"advisory lock", "SELECT pg_advisory_lock(1)", "function pg_advisory_lock is not allowed"},
		{"try advisory lock", "SELECT pg_try_advisory_xact_lock(1)", "function pg_try_advisory_xact_lock is not allowed"},
		{"sleep", "SELECT pg_sleep(60)", "function pg_sleep is not allowed"},
		{"sleep for", "SELECT pg_sleep_for('1 minute')", "function pg_sleep_for is not allowed"},
		{"schema-qualified", "SELECT pg_catalog.pg_sleep(1)", "function pg_sleep is not allowed"},
		{"quoted", `select "pg_sleep"(1)`, "function pg_sleep is not allowed"},
		{"upper case", "SELECT PG_SLEEP(1)", "function pg_sleep is not allowed"},
		{"unicode escape", `SELECT U&"pg\005fsleep"(1)`, "function pg_sleep is not allowed"},
		{"functional notation", "SELECT (1.5::float8).pg_sleep", "function pg_sleep is not allowed"},
		{"functional notation nextval", "SELECT ('s'::regclass).nextval", "function nextval is not allowed"},
		{"in scalar subquery", "SELECT (SELECT pg_sleep(1))", "function pg_sleep is not allowed"},
		{"in cte", "WITH x AS (SELECT pg_sleep(1)) SELECT * FROM x", "function pg_sleep is not allowed"},
		{"in lateral", "SELECT * FROM t, LATERAL (SELECT pg_sleep(1)) s", "function pg_sleep is not allowed"},
		{"in order by", "SELECT * FROM t ORDER BY pg_sleep(1)", "function pg_sleep is not allowed"},
		{"in from", "SELECT * FROM pg_sleep(1)", "function pg_sleep is not allowed"},
		{"in rows from", "SELECT * FROM ROWS FROM (generate_series(1, 2), pg_sleep(1))", "function pg_sleep is not allowed"},
		{"in argument", "SELECT coalesce(NULL, pg_sleep(1)::text)", "function pg_sleep is not allowed"},
		{"in named argument", "SELECT make_interval(secs => pg_sleep(1))", "function pg_sleep is not allowed"},
		{"in window", "SELECT sum(id) OVER (ORDER BY pg_sleep(1)) FROM t", "function pg_sleep is not allowed"},
		{"in filter", "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM t", "function pg_sleep is not allowed"},
		{"in case", "SELECT CASE WHEN false THEN pg_sleep(1) END", "function pg_sleep is not allowed"},
		{"in values", "VALUES (pg_sleep(1))", "function pg_sleep is not allowed"},
		{"in explain", "EXPLAIN SELECT pg_sleep(1)", "function pg_sleep is not allowed"},
		{"set_config", "SELECT set_config('statement_timeout', '0', false)", "function set_config is not allowed"},
		{"query_to_xml", "SELECT query_to_xml('delete from t', true, true, '')", "function query_to_xml is not allowed"},
		{"table_to_xml", "SELECT table_to_xml('t', true, true, '')", "function table_to_xml is not allowed"},
		{"cursor_to_xml", "SELECT cursor_to_xml('c', 1, true, true, '')", "function cursor_to_xml is not allowed"},
		{"ts_stat", "SELECT * FROM ts_stat('delete from t')", "function ts_stat is not allowed"},
		{"dblink", "SELECT * FROM dblink('dbname=x', 'delete from t') AS d(x int)", "function dblink is not allowed"},
		{"dblink_exec", "SELECT public.dblink_exec('delete from t')", "function dblink_exec is not allowed"},
		{"lo_import", "SELECT lo_import('/etc/passwd')", "function lo_import is not allowed"},
		{"lowrite", "SELECT lowrite(0, 'x')", "function lowrite is not allowed"},
		{"pg_read_file", "SELECT pg_read_file('/etc/passwd')", "function pg_read_file is not allowed"},
		{"pg_ls_dir", "SELECT pg_ls_dir('.')", "function pg_ls_dir is not allowed"},
		{"pg_file_write", "SELECT pg_file_write('x', 'y', false)", "function pg_file_write is not allowed"},
		{"pg_notify", "SELECT pg_notify('x', 'y')", "function pg_notify is not allowed"},
		{"txid_current", "SELECT txid_current()", "function txid_current is not allowed"},
		{"pg_current_xact_id", "SELECT pg_current_xact_id()", "function pg_current_xact_id is not allowed"},
		{"terminate", "SELECT pg_terminate_backend(1)", "function pg_terminate_backend is not allowed"},
		{"cancel", "SELECT pg_cancel_backend(1)", "function pg_cancel_backend is not allowed"},
		{"reload", "SELECT pg_reload_conf()", "function pg_reload_conf is not allowed"},
		{"stat reset", "SELECT pg_stat_reset()", "function pg_stat_reset is not allowed"},
		{"replication slot", "SELECT pg_create_logical_replication_slot('x', 'pgoutput')", "function pg_create_logical_replication_slot is not allowed"},
		{"logical message", "SELECT pg_logical_emit_message(true, 'x', 'y')", "function pg_logical_emit_message is not allowed"},
		{"memory contexts", "SELECT pg_log_backend_memory_contexts(1)", "function pg_log_backend_memory_contexts is not allowed"},
		{"collations", "SELECT pg_import_system_collations('pg_catalog')", "function pg_import_system_collations is not allowed"},
		{"http", "SELECT http_get('http://x')", "function http_get is not allowed"},

		// Too deep for the parser.
		{"operator chain", "SELECT 1" + r("+1", 5000), "too deeply nested"},
		{"not chain", "SELECT " + r("NOT ", 5000) + "true", "too deeply nested"},
		{"nested calls", "SELECT " + r("abs(", 5000) + "1" + r(")", 5000), "too deeply nested"},
		{"join chain", "SELECT 1 FROM t" + r(" JOIN t ON true", 4000), "too deeply nested"},
		{"cast chain", "SELECT 1" + r("::int", 5000), "too deeply nested"},
		{"nested arrays", "SELECT " + r("ARRAY[", 5000) + "1" + r("]", 5000), "too deeply nested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.sql, testMaxSQL, 0)
			if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
				t.Fatalf("check(%.80q) code = %q (%v), want %q", tc.sql, got, err, askbi.InvalidArgument)
			}
			if msg := askbi.ErrorMessage(err); !strings.Contains(msg, tc.want) {
				t.Errorf("check(%.80q) message = %q, want it to contain %q", tc.sql, msg, tc.want)
			}
		})
	}
	if _, err := check("SELECT 1 + 1", testMaxSQL, 0); err != nil {
		t.Fatalf("the parser is unhealthy after the rejections: %v", err)
	}
}

func TestDepthEstimate(t *testing.T) {
	tests := []struct {
		sql  string
		want int
	}{
		{"SELECT a, b, c FROM t", 2},              // SELECT, FROM
		{"SELECT 1 + 2 + 3", 3},                   // SELECT, +, +
		{"SELECT f(g(h(1)))", 4},                  // SELECT and three groups
		{"SELECT (1 + 2), (3 + 4 + 5)", 4},        // SELECT, group, +, + (the deeper sibling)
		{"SELECT x FROM t WHERE a AND b OR c", 3}, // AND and OR are flattened
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			if got := depthEstimate(mustScan(t, tc.sql)); got != tc.want {
				t.Errorf("depthEstimate(%q) = %d, want %d", tc.sql, got, tc.want)
			}
		})
	}
}

func mustScan(tb testing.TB, sql string) []*pg_query.ScanToken {
	tb.Helper()
	scan, err := pg_query.Scan(sql)
	if err != nil {
		tb.Fatal(err)
	}
	return scan.Tokens
}

func BenchmarkGuard(b *testing.B) {
	const sql = `WITH weekly AS (
  SELECT date_trunc('week', created_at) AS week, country, count(*) AS signups
  FROM signups
  WHERE created_at >= now() - interval '90 days' AND plan IN ('pro', 'team')
  GROUP BY 1, 2
)
SELECT week, country, signups,
       sum(signups) OVER (PARTITION BY country ORDER BY week) AS running
FROM weekly
ORDER BY week DESC, signups DESC
LIMIT 100`
	if _, err := check(sql, testMaxSQL, 0); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := check(sql, testMaxSQL, 0); err != nil {
			b.Fatal(err)
		}
	}
}
