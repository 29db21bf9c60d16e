package mysqlsource

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/askbi/askbi"
)

const testMaxSQL = 64 << 10

// testRows is the row cap of the guard tests: LIMIT ? binds 101.
const testRows = 100

func mustMode(tb testing.TB, s string) sqlMode {
	tb.Helper()
	m, err := parseSQLMode(s)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestCheckAccepts(t *testing.T) {
	const cap = int64(testRows + 1)
	appended := func(sql string) statement { return statement{sql: sql + "\nLIMIT ?", args: []any{cap}} }
	wrapped := func(sql string) statement {
		return statement{sql: "SELECT * FROM (\n" + sql + "\n) AS askbi_q LIMIT ?", args: []any{cap}}
	}
	tests := []struct {
		name string
		sql  string
		want statement
	}{
		{"select", "SELECT 1", appended("SELECT 1")},
		{"trailing semicolon", "SELECT 1;", appended("SELECT 1")},
		{"semicolon then comment", "SELECT 1; -- done", appended("SELECT 1")},
		{"trailing dash comment", "SELECT 1 -- done", appended("SELECT 1 -- done")},
		{"trailing hash comment", "SELECT 1 # done", appended("SELECT 1 # done")},
		{"trailing dashes", "SELECT 1 --", appended("SELECT 1 --")},
		{"leading comment", "/* why */ SELECT 1 ;", appended("/* why */ SELECT 1 ")},
		{"semicolon in literal", "SELECT 'a;b'", appended("SELECT 'a;b'")},
		{"quotes", `SELECT 'it''s', "x", ` + "`a``b`" + ` FROM t`, appended(`SELECT 'it''s', "x", ` + "`a``b`" + ` FROM t`)},
		// The server's default lexing: one literal, the backslash escaping
		// the quote (TestCheckUnderSQLMode has the other modes).
		{"backslash in literal", `SELECT 'a\' , SLEEP(5) -- '`, appended(`SELECT 'a\' , SLEEP(5) -- '`)},
		{"cte", "WITH x AS (SELECT 1 AS a) SELECT a FROM x", appended("WITH x AS (SELECT 1 AS a) SELECT a FROM x")},
		{"recursive cte", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
			appended("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r")},
		{"window", "SELECT id, SUM(id) OVER (ORDER BY id) FROM t", appended("SELECT id, SUM(id) OVER (ORDER BY id) FROM t")},
		{"union", "SELECT 1 UNION SELECT 2 ORDER BY 1", appended("SELECT 1 UNION SELECT 2 ORDER BY 1")},
		{"intersect", "SELECT id FROM t INTERSECT SELECT id FROM u", appended("SELECT id FROM t INTERSECT SELECT id FROM u")},
		{"except", "SELECT id FROM t EXCEPT SELECT id FROM u", appended("SELECT id FROM t EXCEPT SELECT id FROM u")},
		{"table", "TABLE t", appended("TABLE t")},
		{"values row", "VALUES ROW(1, 'a'), ROW(2, 'b')", appended("VALUES ROW(1, 'a'), ROW(2, 'b')")},
		{"json path", "SELECT j->>'$.a' FROM t", appended("SELECT j->>'$.a' FROM t")},
		{"variables read", "SELECT @a, @@version, @@SESSION.sql_mode", appended("SELECT @a, @@version, @@SESSION.sql_mode")},
		{"columns named like denied functions", "SELECT t.sleep, `get_lock`, load_file FROM t", appended("SELECT t.sleep, `get_lock`, load_file FROM t")},
		{"stored function", "SELECT w.revenue(id) FROM t", appended("SELECT w.revenue(id) FROM t")},
		// The row cap: a LIMIT within it stays, one above it is wrapped.
		{"limit within the cap", "SELECT id FROM t ORDER BY id LIMIT 10", statement{sql: "SELECT id FROM t ORDER BY id LIMIT 10", args: []any{}}},
		{"limit at the cap", "SELECT id FROM t LIMIT 101", statement{sql: "SELECT id FROM t LIMIT 101", args: []any{}}},
		{"limit with offset", "SELECT id FROM t LIMIT 5 OFFSET 1000", statement{sql: "SELECT id FROM t LIMIT 5 OFFSET 1000", args: []any{}}},
		{"limit above the cap", "SELECT id FROM t ORDER BY id DESC LIMIT 102", wrapped("SELECT id FROM t ORDER BY id DESC LIMIT 102")},
		{"limit above the cap with a comment", "SELECT id FROM t LIMIT 5000 -- all", wrapped("SELECT id FROM t LIMIT 5000 -- all")},
		{"union limit", "SELECT 1 UNION SELECT 2 LIMIT 1", statement{sql: "SELECT 1 UNION SELECT 2 LIMIT 1", args: []any{}}},
		{"limit of a union member", "(SELECT 1) UNION (SELECT 2 LIMIT 1)", appended("(SELECT 1) UNION (SELECT 2 LIMIT 1)")},
		{"limit in a subquery", "SELECT * FROM (SELECT id FROM t LIMIT 3) s", appended("SELECT * FROM (SELECT id FROM t LIMIT 3) s")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := check(tc.sql, defaultMode, nil, []any{}, testMaxSQL, testRows)
			if err != nil {
				t.Fatalf("check(%q) = %v", tc.sql, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(statement{})); diff != "" {
				t.Errorf("check(%q) mismatch (-want +got):\n%s", tc.sql, diff)
			}
		})
	}
}

// TestVerify: the row cap must be where check put it, as a placeholder
// of the whole result, never in a comment or a member of a union.
func TestVerify(t *testing.T) {
	capAt := func(sql string) func(ast.ResultSetNode) bool {
		return func(top ast.ResultSetNode) bool {
			l := limitOf(top)
			if l == nil {
				return false
			}
			m, ok := l.Count.(*test_driver.ParamMarkerExpr)
			return ok && m.Offset == len(sql)-1
		}
	}
	for _, sql := range []string{"SELECT 1 -- LIMIT ?", "SELECT 1 # LIMIT ?", "(SELECT 1 LIMIT ?)", "SELECT 1 UNION (SELECT 2 LIMIT ?)"} {
		var params []int
		if strings.HasSuffix(sql, "?)") {
			params = []int{len(sql) - 2}
		}
		if err := verify(sql, defaultMode, params, capAt(sql)); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("verify(%q) = %v, want invalid_argument", sql, err)
		}
	}
	if err := verify("SELECT 1\nLIMIT ?", defaultMode, []int{15}, capAt("SELECT 1\nLIMIT ?")); err != nil {
		t.Errorf("verify of a good statement = %v", err)
	}
}

// TestCheckAcceptsLarge: big but flat queries, and deeply nested ones,
// parse without harm.
func TestCheckAcceptsLarge(t *testing.T) {
	r := strings.Repeat
	for _, tc := range []struct{ name, sql string }{
		{"long IN list", "SELECT 1 FROM t WHERE id IN (" + r("1, ", 5000) + "1)"},
		{"long OR chain", "SELECT 1 FROM t WHERE " + r("id = 1 OR ", 800) + "false"},
		{"many union members", "SELECT 1" + r(" UNION ALL SELECT 1", 1000)},
		{"nested parentheses", "SELECT " + r("(", 5000) + "1" + r(")", 5000)},
		{"nested calls", "SELECT " + r("ABS(", 3000) + "1" + r(")", 3000)},
		{"nested subqueries", "SELECT " + r("(SELECT ", 500) + "1" + r(")", 500)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := check(tc.sql, defaultMode, nil, nil, testMaxSQL, testRows); err != nil {
				t.Fatalf("check = %v", err)
			}
		})
	}
	for _, sql := range []string{"SELECT " + r("(", 30000) + "SLEEP(1)" + r(")", 30000), "SELECT " + r("(SELECT ", 3000) + "SLEEP(1)" + r(")", 3000)} {
		if _, err := check(sql, defaultMode, nil, nil, testMaxSQL, testRows); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("check(deeply nested SLEEP) = %v, want invalid_argument", err)
		}
	}
}

// attacks is the guard's attack list (docs/security.md has it with the
// messages): each must be refused before anything runs.
var attacks = []struct {
	name string
	sql  string
	want string // a fragment of the message
}{
	{"empty", "", "the SQL is empty"},
	{"blank", " \n\t", "the SQL is empty"},
	{"only a comment", "-- nothing", "no statement"},
	{"only semicolons", ";;", "no statement"},
	{"too long", "SELECT '" + strings.Repeat("x", 1<<20) + "'", "at most 65536 are allowed"},
	{"syntax error", "SELEC 1", "SQL syntax error"},
	{"unterminated literal", "SELECT 'x", "SQL syntax error"},
	{"unterminated comment", "SELECT 1 /* x", "SQL syntax error"},
	{"NUL", "SELECT 1\x00; DELETE FROM t", "not valid UTF-8 text"},
	{"invalid UTF-8", "SELECT '\xff'", "not valid UTF-8 text"},
	{"control character", "SELECT 1 --\x01; DELETE FROM t", "control character"},

	// Comments the server runs.
	{"executable comment", "SELECT 1 /*!, SLEEP(5) */", "executable comments such as /*!"},
	{"versioned executable comment", "SELECT 1 /*!50000 , SLEEP(5) */", "executable comments such as /*!"},
	{"executable comment statement", "/*! DELETE FROM t */ SELECT 1", "executable comments such as /*!"},
	{"MariaDB executable comment", "SELECT 1 /*M!100000 , SLEEP(5) */", "executable comments such as /*M!"},
	{"MariaDB executable comment lower case", "SELECT 1 /*m!, SLEEP(5) */", "executable comments such as /*m!"},
	{"TiDB executable comment", "SELECT 1 /*T! , SLEEP(5) */", "executable comments such as /*T!"},
	{"executable comment in a string", "SELECT '/*!'", "strings included"},
	{"optimizer hint SET_VAR", "SELECT /*+ SET_VAR(max_execution_time = 0) */ 1", "optimizer hints"},
	{"optimizer hint MAX_EXECUTION_TIME", "SELECT /*+ MAX_EXECUTION_TIME(100000000) */ 1", "optimizer hints"},

	// Several statements, however hidden.
	{"two selects", "SELECT 1; SELECT 2", "remove the second statement"},
	{"select then delete", "SELECT 1; DELETE FROM t", "remove the second statement"},
	{"commit then delete", "COMMIT; DELETE FROM t", "remove the second statement"},
	{"semicolon in block comment", "SELECT 1 /* ; */; DELETE FROM t", "remove the second statement"},
	{"semicolon in literal", "SELECT ';'; DELETE FROM t", "remove the second statement"},
	{"semicolon in quoted name", "SELECT 1 AS `;`; DELETE FROM t", "remove the second statement"},
	{"dash comment", "SELECT 1 -- x\n; DELETE FROM t", "remove the second statement"},
	{"hash comment", "SELECT 1 # x\n; DELETE FROM t", "remove the second statement"},
	{"dashes without a space", "SELECT 1 --1; DELETE FROM t", "remove the second statement"},

	// Not a SELECT.
	{"delete", "DELETE FROM t", "not DELETE"},
	{"insert", "INSERT INTO t VALUES (9, 'z')", "not INSERT or REPLACE"},
	{"insert select", "INSERT INTO t SELECT * FROM t", "not INSERT or REPLACE"},
	{"replace", "REPLACE INTO t VALUES (1, 'z')", "not INSERT or REPLACE"},
	{"update", "UPDATE t SET v = 'x'", "not UPDATE"},
	{"set user variable", "SET @a = 1", "not SET"},
	{"set sql_mode", "SET SESSION sql_mode = ''", "not SET"},
	{"set names", "SET NAMES gbk", "not SET"},
	{"set max_statement_time", "SET max_statement_time = 0", "not SET"},
	{"set transaction read write", "SET TRANSACTION READ WRITE", "not SET"},
	{"prepare", "PREPARE p FROM 'DELETE FROM t'", "not PREPARE"},
	{"execute", "EXECUTE p", "not EXECUTE"},
	{"deallocate", "DEALLOCATE PREPARE p", "not DEALLOCATE"},
	{"do", "DO SLEEP(1)", "not DO"},
	{"call", "CALL p()", "not CALL"},
	{"load data", "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "not LOAD DATA"},
	{"lock tables", "LOCK TABLES t WRITE", "not LOCK TABLES"},
	{"unlock tables", "UNLOCK TABLES", "not UNLOCK TABLES"},
	{"handler", "HANDLER t OPEN", "SQL syntax error"},
	{"show", "SHOW TABLES", "not SHOW"},
	{"explain", "EXPLAIN SELECT 1", "not EXPLAIN"},
	{"explain analyze", "EXPLAIN ANALYZE SELECT 1", "not EXPLAIN"},
	{"begin", "BEGIN", "not a transaction statement"},
	{"start transaction read write", "START TRANSACTION READ WRITE", "not a transaction statement"},
	{"commit", "COMMIT", "not a transaction statement"},
	{"create table", "CREATE TABLE x (a int)", "not CREATE TABLE"},
	{"create temporary table", "CREATE TEMPORARY TABLE x (a int)", "not CREATE TABLE"},
	{"create table as", "CREATE TABLE x AS SELECT 1", "not CREATE TABLE"},
	{"drop", "DROP TABLE t", "not DROP"},
	{"truncate", "TRUNCATE t", "not TRUNCATE"},
	{"grant", "GRANT ALL ON *.* TO 'x'@'%'", "not GRANT"},
	{"use", "USE mysql", "not USE"},
	{"kill", "KILL 1", "not KILL"},
	{"flush", "FLUSH PRIVILEGES", "not FLUSH"},

	// Writes through WITH.
	{"with delete", "WITH x AS (SELECT 1 AS id) DELETE FROM t WHERE id IN (SELECT id FROM x)", "data-modifying statements with WITH are not allowed"},
	{"with update", "WITH x AS (SELECT 1) UPDATE t SET v = 'x'", "data-modifying statements with WITH are not allowed"},
	{"delete inside with", "WITH d AS (DELETE FROM t) SELECT 1", "SQL syntax error"},

	// INTO: files and variables.
	{"into outfile", "SELECT * FROM t INTO OUTFILE '/tmp/x'", "SELECT ... INTO OUTFILE is not allowed"},
	{"into outfile in a union member", "SELECT 1 UNION SELECT 2 INTO OUTFILE '/tmp/x'", "INTO"},
	{"into dumpfile", "SELECT v FROM t LIMIT 1 INTO DUMPFILE '/tmp/x'", "SELECT ... INTO is not allowed"},
	{"into variable", "SELECT id FROM t LIMIT 1 INTO @a", "SELECT ... INTO is not allowed"},
	{"into variable before from", "SELECT id INTO @a FROM t LIMIT 1", "SELECT ... INTO is not allowed"},

	// Locking reads.
	{"for update", "SELECT * FROM t FOR UPDATE", "FOR UPDATE is not allowed"},
	{"for update nowait", "SELECT * FROM t FOR UPDATE NOWAIT", "FOR UPDATE NOWAIT is not allowed"},
	{"for update skip locked", "SELECT * FROM t FOR UPDATE SKIP LOCKED", "FOR UPDATE SKIP LOCKED is not allowed"},
	{"lock in share mode", "SELECT * FROM t LOCK IN SHARE MODE", "LOCK IN SHARE MODE"},
	{"for share", "SELECT * FROM t FOR SHARE", "FOR SHARE"},
	{"for update in subquery", "SELECT * FROM t WHERE id IN (SELECT id FROM t FOR UPDATE)", "FOR UPDATE is not allowed"},
	{"for update in cte", "WITH x AS (SELECT * FROM t FOR UPDATE) SELECT * FROM x", "FOR UPDATE is not allowed"},
	{"for update in derived table", "SELECT * FROM (SELECT * FROM t FOR UPDATE) s", "FOR UPDATE is not allowed"},

	// Assignments.
	{"assignment", "SELECT @a := 1", "assigning variables"},
	{"assignment in where", "SELECT * FROM t WHERE (@a := id) > 0", "assigning variables"},
	{"counter", "SELECT @n := @n + 1 FROM t", "assigning variables"},
	{"parameter", "SELECT ?", "parameters such as ? are not supported"},

	// Sleeping, waiting, locking and file functions, however spelled
	// and wherever they hide.
	{"sleep", "SELECT SLEEP(60)", "function SLEEP is not allowed"},
	{"sleep lower case", "select sleep(60)", "function SLEEP is not allowed"},
	{"sleep quoted", "SELECT `sleep`(60)", "function SLEEP is not allowed"},
	{"sleep with a space", "SELECT SLEEP (60)", "function SLEEP is not allowed"},
	{"sleep qualified", "SELECT mysql.sleep(60)", "function SLEEP is not allowed"},
	{"sleep in subquery", "SELECT (SELECT SLEEP(1))", "function SLEEP is not allowed"},
	{"sleep in cte", "WITH x AS (SELECT SLEEP(1)) SELECT * FROM x", "function SLEEP is not allowed"},
	{"sleep in derived table", "SELECT * FROM (SELECT SLEEP(1) AS s) d", "function SLEEP is not allowed"},
	{"sleep in where", "SELECT * FROM t WHERE SLEEP(1) = 0", "function SLEEP is not allowed"},
	{"sleep in join", "SELECT * FROM t JOIN t u ON SLEEP(1) = 0", "function SLEEP is not allowed"},
	{"sleep in order by", "SELECT * FROM t ORDER BY SLEEP(1)", "function SLEEP is not allowed"},
	{"sleep in having", "SELECT id FROM t GROUP BY id HAVING SLEEP(1) = 0", "function SLEEP is not allowed"},
	{"sleep in window", "SELECT ROW_NUMBER() OVER (ORDER BY SLEEP(1)) FROM t", "function SLEEP is not allowed"},
	{"sleep in case", "SELECT CASE WHEN id = 1 THEN SLEEP(1) END FROM t", "function SLEEP is not allowed"},
	{"sleep in argument", "SELECT COALESCE(NULL, SLEEP(1))", "function SLEEP is not allowed"},
	{"sleep in union member", "SELECT 1 UNION SELECT SLEEP(1)", "function SLEEP is not allowed"},
	{"sleep in limit subquery", "SELECT * FROM t WHERE id IN (SELECT SLEEP(1))", "function SLEEP is not allowed"},
	{"sleep in values", "VALUES ROW(SLEEP(1))", "function SLEEP is not allowed"},
	{"benchmark", "SELECT BENCHMARK(100000000, MD5('x'))", "function BENCHMARK is not allowed"},
	{"get_lock", "SELECT GET_LOCK('x', 10)", "function GET_LOCK is not allowed"},
	{"release_lock", "SELECT RELEASE_LOCK('x')", "function RELEASE_LOCK is not allowed"},
	{"release_all_locks", "SELECT RELEASE_ALL_LOCKS()", "function RELEASE_ALL_LOCKS is not allowed"},
	{"is_free_lock", "SELECT IS_FREE_LOCK('x')", "function IS_FREE_LOCK is not allowed"},
	{"is_used_lock", "SELECT IS_USED_LOCK('x')", "function IS_USED_LOCK is not allowed"},
	{"load_file", "SELECT LOAD_FILE('/etc/passwd')", "function LOAD_FILE is not allowed"},
	{"master_pos_wait", "SELECT MASTER_POS_WAIT('log', 4)", "function MASTER_POS_WAIT is not allowed"},
	{"source_pos_wait", "SELECT SOURCE_POS_WAIT('log', 4)", "function SOURCE_POS_WAIT is not allowed"},
	{"master_gtid_wait", "SELECT MASTER_GTID_WAIT('0-1-100')", "function MASTER_GTID_WAIT is not allowed"},
	{"wait_for_executed_gtid_set", "SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", "function WAIT_FOR_EXECUTED_GTID_SET is not allowed"},
	{"wait_until_sql_thread_after_gtids", "SELECT WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS('x')", "function WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS is not allowed"},
	{"nextval", "SELECT NEXTVAL(s)", "function NEXTVAL is not allowed"},
	{"next value for", "SELECT NEXT VALUE FOR s", "function NEXTVAL is not allowed"},
	{"previous value for", "SELECT PREVIOUS VALUE FOR s", "sequences (NEXT VALUE FOR, PREVIOUS VALUE FOR) are not allowed"},
	{"setval", "SELECT SETVAL(s, 100)", "function SETVAL is not allowed"},
	{"lastval", "SELECT LASTVAL(s)", "function LASTVAL is not allowed"},
	{"locking service", "SELECT SERVICE_GET_WRITE_LOCKS('ns', 'x', 10)", "function SERVICE_GET_WRITE_LOCKS is not allowed"},
	{"version tokens", "SELECT VERSION_TOKENS_LOCK_EXCLUSIVE('x', 10)", "function VERSION_TOKENS_LOCK_EXCLUSIVE is not allowed"},
	{"spider", "SELECT SPIDER_DIRECT_SQL('DELETE FROM t', 'x', 'srv \"s\"')", "function SPIDER_DIRECT_SQL is not allowed"},
	{"sys_exec", "SELECT sys_exec('rm -rf /')", "function SYS_EXEC is not allowed"},
}

func TestCheckRejects(t *testing.T) {
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.sql, defaultMode, nil, nil, testMaxSQL, testRows)
			if got := askbi.ErrorCode(err); got != askbi.InvalidArgument {
				t.Fatalf("check(%.80q) code = %q (%v), want %q", tc.sql, got, err, askbi.InvalidArgument)
			}
			if msg := askbi.ErrorMessage(err); !strings.Contains(msg, tc.want) {
				t.Errorf("check(%.80q) message = %q, want it to contain %q", tc.sql, msg, tc.want)
			}
		})
	}
}

// TestLayersRefuseAlone: a call, an assignment, INTO and a locking read
// are each refused by the tree walk alone and by the lexical reading
// alone, so that a gap in one (a node the walk does not reach, a lexing
// difference) is covered by the other.
func TestLayersRefuseAlone(t *testing.T) {
	both := regexp.MustCompile(`function |INTO|FOR UPDATE|FOR SHARE|LOCK IN SHARE|assigning`)
	n := 0
	for _, tc := range attacks {
		if !both.MatchString(tc.want) || strings.Contains(tc.sql, "/*") {
			continue
		}
		n++
		t.Run(tc.name, func(t *testing.T) {
			if _, err := walkTree(tc.sql, defaultMode, nil); askbi.ErrorCode(err) != askbi.InvalidArgument {
				t.Errorf("walkTree(%q) = %v, want invalid_argument", tc.sql, err)
			}
			if err := lexical(tc.sql, defaultMode); askbi.ErrorCode(err) != askbi.InvalidArgument {
				t.Errorf("lexical(%q) = %v, want invalid_argument", tc.sql, err)
			}
		})
	}
	if n < 50 {
		t.Errorf("only %d attacks checked layer by layer", n)
	}
}

// TestLexical: the lexical reading refuses by itself what the parser
// could miss, and lets through the names, strings and comments that only
// look like it.
func TestLexical(t *testing.T) {
	tests := []struct {
		mode, sql string
		refuse    bool
	}{
		{"", "SELECT sleep FROM t", false},
		{"", "SELECT 'SLEEP(1)', \"INTO\" -- FOR UPDATE\n", false},
		{"", "SELECT 1 /* GET_LOCK(x) := */", false},
		{"", "SELECT `for` FROM t", false},
		{"", "SELECT `into`, `for update` FROM t", false},
		{"", "SELECT SLEEP/**/(1)", true},
		{"", "SELECT `SLEEP` (1)", true},
		{"", "SELECT db.`get_lock`('x', 1)", true},
		{"", "SELECT * FROM t FOR/**/UPDATE", true},
		{"", "SELECT * FROM t LOCK\nIN SHARE MODE", true},
		{"", "SELECT @a:=1", true},
		{"", "SELECT NEXT  VALUE FOR s", true},
		{"", "SELECT 1 INTO @a", true},
		{"ANSI_QUOTES", `SELECT "sleep"(1)`, true},
		{"ANSI_QUOTES", `SELECT 1 AS "a\" , SLEEP(5) -- "`, true},
		{"", `SELECT "sleep"`, false},
		{"NO_BACKSLASH_ESCAPES", `SELECT 'a\' , SLEEP(5) -- '`, true},
		{"", `SELECT 'a\' , SLEEP(5) -- '`, false},
	}
	for _, tc := range tests {
		err := lexical(tc.sql, mustMode(t, tc.mode))
		if got := askbi.ErrorCode(err) == askbi.InvalidArgument; got != tc.refuse || (err != nil && !got) {
			t.Errorf("lexical(%q) under %q = %v, want refused %v", tc.sql, tc.mode, err, tc.refuse)
		}
	}
}

// TestCheckUnderSQLMode: the guard reads quotes as the server does under
// the session's sql_mode; parsed under another mode, each of these would
// hide a call the server runs, or refuse text the server reads as a
// string.
func TestCheckUnderSQLMode(t *testing.T) {
	tests := []struct {
		mode   string
		sql    string
		refuse string // a fragment of the message; "" when accepted
	}{
		{"", `SELECT 'a\' , SLEEP(5) -- '`, ""},
		{"NO_BACKSLASH_ESCAPES", `SELECT 'a\' , SLEEP(5) -- '`, "function SLEEP is not allowed"},
		{"", `SELECT 'a\'' , SLEEP(5) -- '`, "function SLEEP is not allowed"},
		{"NO_BACKSLASH_ESCAPES", `SELECT 'a\'' , SLEEP(5) -- '`, ""},
		{"", `SELECT "x\" , SLEEP(5) -- "`, ""},
		{"NO_BACKSLASH_ESCAPES", `SELECT "x\" , SLEEP(5) -- "`, "function SLEEP is not allowed"},
		// Under ANSI_QUOTES the servers read "x\" as a name and run SLEEP,
		// where TiDB's parser reads the backslash as an escape: refused
		// before parsing.
		{"ANSI_QUOTES", `SELECT "x\" , SLEEP(5) -- "`, `backslash inside a "quoted name"`},
		{"ANSI_QUOTES", `SELECT 1 AS "a\" , SLEEP(5) -- "`, `backslash inside a "quoted name"`},
		{"ANSI", `SELECT 1 AS "a\" , SLEEP(5) -- "`, `backslash inside a "quoted name"`},
		{"ANSI_QUOTES", `SELECT 'a\\b' AS "c"`, ""}, // backslashes in strings stay
		{"", `SELECT "a" FROM t`, ""},
		{"ANSI_QUOTES", `SELECT "a" FROM t`, ""},
		{"", `SELECT 'a' "; DELETE FROM t; -- "`, ""},
		{"ANSI_QUOTES", `SELECT 'a' "; DELETE FROM t; -- "`, ""}, // a quoted alias
		{"NO_BACKSLASH_ESCAPES", `SELECT '\'; DELETE FROM t; -- '`, "remove the second statement"},
	}
	for _, tc := range tests {
		t.Run(tc.mode+" "+tc.sql, func(t *testing.T) {
			_, err := check(tc.sql, mustMode(t, tc.mode), nil, nil, testMaxSQL, testRows)
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("check = %v, want it accepted", err)
			case tc.refuse != "" && (askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), tc.refuse)):
				t.Errorf("check = %v, want invalid_argument with %q", err, tc.refuse)
			}
		})
	}
}

func TestParseSQLMode(t *testing.T) {
	tests := []struct {
		in, text string
		code     askbi.Code // "" when accepted
	}{
		{"", "", ""},
		{"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION", // MariaDB 10.11's default
			"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION", ""},
		{"ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", // MySQL 8's
			"ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", ""},
		{"REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI",
			"REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ONLY_FULL_GROUP_BY,ANSI", ""},
		{" no_backslash_escapes , simultaneous_assignment", "NO_BACKSLASH_ESCAPES,SIMULTANEOUS_ASSIGNMENT", ""},
		{"PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ORACLE,NO_KEY_OPTIONS", "", askbi.Unsupported},
		{"MSSQL", "", askbi.Unsupported},
		{"POSTGRESQL", "", askbi.Unsupported},
		{"STRICT_TRANS_TABLES,NO_SUCH_MODE", "", askbi.Unsupported},
		{"STRICT_TRANS_TABLES,'; DROP TABLE t; --", "", askbi.Unsupported},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			m, err := parseSQLMode(tc.in)
			if got := askbi.ErrorCode(err); err != nil && got != tc.code || err == nil && tc.code != "" {
				t.Fatalf("parseSQLMode(%q) = %v, want code %q", tc.in, err, tc.code)
			}
			if m.text != tc.text {
				t.Errorf("parseSQLMode(%q).text = %q, want %q", tc.in, m.text, tc.text)
			}
		})
	}
	if m := mustMode(t, "ANSI_QUOTES,NO_BACKSLASH_ESCAPES"); !m.ansiQuotes() || !m.noBackslashEscapes() {
		t.Errorf("the lexing flags were lost: %+v", m)
	}
	if _, err := New(nil, &Options{SQLMode: "ORACLE"}); askbi.ErrorCode(err) != askbi.InvalidArgument {
		t.Errorf("New with Options.SQLMode ORACLE = %v, want invalid_argument", err)
	}
}

// TestSettings: what each flavour's session is pinned to.
func TestSettings(t *testing.T) {
	mode := mustMode(t, "ANSI_QUOTES,STRICT_TRANS_TABLES")
	tests := []struct {
		version string
		left    time.Duration
		want    string
	}{
		{"10.11.19-MariaDB-0+deb12u1", 2500 * time.Millisecond,
			"SET NAMES utf8mb4, SESSION sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES', SESSION time_zone = '+00:00', SESSION max_statement_time = 2.500, SESSION lock_wait_timeout = 3"},
		{"8.0.36", 2500 * time.Millisecond,
			"SET NAMES utf8mb4, SESSION sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES', SESSION time_zone = '+00:00', SESSION max_execution_time = 2500, SESSION lock_wait_timeout = 3"},
		{"8.4.0", 0, // a floor, never 0 (no limit)
			"SET NAMES utf8mb4, SESSION sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES', SESSION time_zone = '+00:00', SESSION max_execution_time = 100, SESSION lock_wait_timeout = 1"},
		{"11.4.2-MariaDB", 0,
			"SET NAMES utf8mb4, SESSION sql_mode = 'ANSI_QUOTES,STRICT_TRANS_TABLES', SESSION time_zone = '+00:00', SESSION max_statement_time = 0.100, SESSION lock_wait_timeout = 1"},
	}
	for _, tc := range tests {
		if got := settings(mode, tc.version, tc.left); got != tc.want {
			t.Errorf("settings(%s, %s) =\n%s\nwant\n%s", tc.version, tc.left, got, tc.want)
		}
	}
}

func BenchmarkGuard(b *testing.B) {
	const sql = `WITH weekly AS (
  SELECT DATE_FORMAT(created_at, '%x-%v') AS week, country, COUNT(*) AS signups
  FROM signups
  WHERE created_at >= NOW() - INTERVAL 90 DAY AND plan IN ('pro', 'team')
  GROUP BY 1, 2
)
SELECT week, country, signups,
       SUM(signups) OVER (PARTITION BY country ORDER BY week) AS running
FROM weekly
ORDER BY week DESC, signups DESC
LIMIT 100`
	if _, err := check(sql, defaultMode, nil, nil, testMaxSQL, 1000); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := check(sql, defaultMode, nil, nil, testMaxSQL, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
