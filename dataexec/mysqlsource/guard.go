package mysqlsource

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	tidb "github.com/pingcap/tidb/pkg/parser/mysql"
	// The parser's literals: the standalone parser's own driver, as its
	// documentation says (TiDB's full one pulls in all of TiDB).
	"github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/askbi/askbi"
)

// statement is one statement the guard accepted, ready to prepare.
type statement struct {
	sql  string // the user's statement with the row cap
	args []any  // its parameters: the variables', then the row cap's (when sql ends in LIMIT ?)
}

// sqlMode is the sql_mode the guard parses under and the session runs
// with: the same flags, so that text cannot mean one thing to the guard
// and another to the server (NO_BACKSLASH_ESCAPES decides where a '...'
// ends, ANSI_QUOTES whether "..." is a string or a name).
type sqlMode struct {
	text string       // as pinned on the session: upper-case flags, comma-separated
	tidb tidb.SQLMode // the flags the parser reads
}

// noBackslashEscapes and ansiQuotes are the flags that change where a
// quoted region ends, which bind's lexer follows too.
func (m sqlMode) noBackslashEscapes() bool { return m.tidb.HasNoBackslashEscapesMode() }
func (m sqlMode) ansiQuotes() bool         { return m.tidb.HasANSIQuotesMode() }

// emulations are the sql_mode flags that make MariaDB read another
// dialect (ORACLE switches to a PL/SQL grammar); the guard's parser does
// not, so a server in one of them is refused.
var emulations = []string{"ORACLE", "MSSQL", "DB2", "MAXDB", "POSTGRESQL", "MYSQL323", "MYSQL40"}

// semanticModes are flags of MySQL 8 or MariaDB that the parser does not
// know and that change no syntax, only what statements do.
var semanticModes = []string{"SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL", "EMPTY_STRING_IS_NULL", "TIME_TRUNCATE_FRACTIONAL"}

// parseSQLMode reads a sql_mode value as the server reports it. It
// returns Unsupported for a flag that changes the syntax in a way the
// parser does not follow, or that it does not know.
func parseSQLMode(s string) (sqlMode, error) {
	var flags, known []string
	for f := range strings.SplitSeq(strings.ToUpper(strings.TrimSpace(s)), ",") {
		f = strings.TrimSpace(f)
		switch _, ok := tidb.Str2SQLMode[f]; {
		case f == "":
			continue
		case slices.Contains(emulations, f):
			return sqlMode{}, askbi.Errorf(askbi.Unsupported, "the database's sql_mode includes %s, a dialect the SQL check cannot read; use a server or Options.SQLMode without it", f)
		case ok:
			// A combination (ANSI, TRADITIONAL) is given to the parser as
			// its parts, as the server reads it.
			known = append(append(known, f), tidb.CombinationSQLMode[f]...)
		case !slices.Contains(semanticModes, f):
			return sqlMode{}, askbi.Errorf(askbi.Unsupported, "the database's sql_mode includes %s, which the SQL check does not know; use a server or Options.SQLMode without it", f)
		}
		flags = append(flags, f)
	}
	m, err := tidb.GetSQLMode(strings.Join(known, ","))
	if err != nil {
		return sqlMode{}, askbi.Errorf(askbi.Unsupported, "the database's sql_mode cannot be read: %v", err)
	}
	return sqlMode{text: strings.Join(flags, ","), tidb: m}, nil
}

// parse parses sql under mode with TiDB's MySQL parser. A parser is not
// safe for concurrent use, and reuses the slice it returns on its next
// parse, so each call has one of its own.
func parse(sql string, mode sqlMode) ([]ast.StmtNode, error) {
	p := parser.New()
	p.SetSQLMode(mode.tidb)
	stmts, _, err := p.Parse(sql, "utf8mb4", "utf8mb4_general_ci")
	if err != nil {
		return nil, err
	}
	return stmts, nil
}

// executableComment finds the comments the server runs as SQL: /*! ... */
// (MySQL and MariaDB, with or without a version), /*M! ... */ (MariaDB),
// /*T! ... */ (which the parser runs and the servers do not) and the
// optimizer hints /*+ ... */ (which MySQL reads and may set variables
// with: SET_VAR, MAX_EXECUTION_TIME). Anywhere in the text, strings
// included: a lexer of our own could tell a comment from a string
// differently from the server's.
var executableComment = regexp.MustCompile(`/\*([!+]|[A-Za-z]!)`)

// allowedControls are the control characters SQL text may hold; the
// others the parser and the servers treat differently (after "--", say).
const allowedControls = "\t\n\v\f\r"

// lexical is the guard's second reading of sql: its own lexer (lex,
// which follows MySQL's and MariaDB's rules under mode) over the code
// outside strings, quoted names and comments. It catches what TiDB's
// parser could read otherwise than the servers, or a node the tree walk
// does not reach:
//
//   - under ANSI_QUOTES, a backslash in a "quoted name" is a character to
//     the servers but escapes the next quote to the parser, so
//     "a\" , SLEEP(5) -- " would hide the call from the parser;
//   - a denied function called by its bare or `quoted` name, an
//     assignment (:=), INTO, and a locking read (FOR UPDATE, FOR SHARE,
//     LOCK IN SHARE MODE), found in the code itself.
//
// Comments count as spaces, as the servers read them.
func lexical(sql string, mode sqlMode) error {
	_, regions, _ := lex(sql, mode)
	code, names := []byte(sql), []byte(sql)
	for _, r := range regions {
		if mode.ansiQuotes() && r.open == '"' && strings.IndexByte(sql[r.start:r.end], '\\') >= 0 {
			return askbi.Errorf(askbi.InvalidArgument, "a backslash inside a \"quoted name\" is not allowed under the database's ANSI_QUOTES; quote the name with backticks")
		}
		quotedName := r.open == '`' || r.open == '"' && mode.ansiQuotes()
		for i := r.start; i < r.end; i++ {
			code[i] = ' '
			// names keeps a quoted name's letters, so that `sleep`(1)
			// reads as the call it is.
			if !quotedName || sql[i] == r.open {
				names[i] = ' '
			}
		}
	}
	for _, m := range calledRe.FindAllSubmatch(names, -1) {
		if name := strings.ToLower(string(m[1])); deniedFunction(name) {
			return askbi.Errorf(askbi.InvalidArgument, "function %s is not allowed in read-only queries", strings.ToUpper(name))
		}
	}
	switch {
	case bytes.Contains(code, []byte(":=")):
		return askbi.Errorf(askbi.InvalidArgument, "assigning variables (:=) is not allowed in read-only queries")
	case intoRe.Match(code):
		return askbi.Errorf(askbi.InvalidArgument, "SELECT ... INTO is not allowed; remove INTO")
	case lockingRe.Match(code):
		return askbi.Errorf(askbi.InvalidArgument, "locking reads (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE) are not allowed in read-only queries; remove them")
	case sequenceRe.Match(code):
		return askbi.Errorf(askbi.InvalidArgument, "sequences (NEXT VALUE FOR, PREVIOUS VALUE FOR) are not allowed in read-only queries")
	}
	return nil
}

var (
	// calledRe finds a name followed by an opening parenthesis.
	calledRe   = regexp.MustCompile(`([A-Za-z_$][A-Za-z0-9_$]*)\s*\(`)
	lockingRe  = regexp.MustCompile(`(?i)\bFOR\s+(UPDATE|SHARE)\b|\bLOCK\s+IN\s+SHARE\s+MODE\b`)
	sequenceRe = regexp.MustCompile(`(?i)\b(NEXT|PREVIOUS)\s+VALUE\s+FOR\b`)
)

// check accepts sql, run under mode, when it is exactly one SELECT (with
// WITH, set operations, TABLE and VALUES ROW) with no write, lock, file,
// wait or assignment anywhere in its tree, and returns it ready to run:
// with LIMIT ? for maxRows+1 rows when the row cap is not already in it.
//
// params are the offsets in sql of the ? placeholders bind put in for
// variables: exactly those must be the statement's parameters, so a
// disagreement between bind's lexer and the parser (about where a string
// ends, say) is refused instead of binding a value where it does not
// stand. args are their values.
//
// The guard is the first of several walls: the statement also runs in a
// READ ONLY transaction, prepared (one statement only), with the
// server's statement timeout, on a session closed after the call, as
// (ideally) a SELECT-only user. It cannot see into views or stored
// functions the query calls; the user's privileges and the read-only
// transaction cover those.
func check(sql string, mode sqlMode, params []int, args []any, maxLen int, maxRows int) (statement, error) {
	if len(sql) > maxLen {
		return statement{}, errTooLong(len(sql), maxLen)
	}
	if !utf8.ValidString(sql) || strings.ContainsRune(sql, 0) {
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL is not valid UTF-8 text")
	}
	if strings.ContainsFunc(sql, func(r rune) bool {
		return (r < 0x20 || r == 0x7f) && !strings.ContainsRune(allowedControls, r)
	}) {
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL holds a control character; remove it")
	}
	if strings.TrimSpace(sql) == "" {
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL is empty; send one SELECT statement")
	}
	if m := executableComment.FindString(sql); m != "" {
		if m == "/*+" {
			return statement{}, askbi.Errorf(askbi.InvalidArgument, "optimizer hints /*+ ... */ are not allowed (they can change the server's limits); remove them (the text /*+ is refused anywhere in the SQL)")
		}
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "executable comments such as %s ... */ are not allowed; remove them (the text %s is refused anywhere in the SQL, strings included)", m, m)
	}
	top, err := analyze(sql, mode, params)
	if err != nil {
		return statement{}, err
	}
	text := strings.TrimSuffix(top.Text(), ";")
	if !strings.HasPrefix(sql, text) {
		return statement{}, &askbi.Error{Code: askbi.Internal, Err: fmt.Errorf("mysqlsource: the parser's statement text is not at the start of the SQL")}
	}
	st := statement{sql: text, args: slices.Clip(args)}
	cap := int64(maxRows) + 1
	limit := limitOf(top)
	if limit != nil && literalAtMost(limit.Count, cap) {
		// The statement's own LIMIT is within the cap: the server stops
		// there.
		return st, verify(st.sql, mode, params, func(top ast.ResultSetNode) bool { return limitOf(top) != nil })
	}
	// Without a LIMIT, one is appended (the newline ends a trailing "--"
	// or "#" comment). A statement whose own LIMIT is above the cap, or
	// not a number, is wrapped: the derived table keeps its ORDER BY,
	// since it has a LIMIT, but needs unique column names.
	prefix, suffix := "", "\nLIMIT ?"
	if limit != nil {
		prefix, suffix = "SELECT * FROM (\n", "\n) AS askbi_q LIMIT ?"
	}
	st.sql = prefix + text + suffix
	st.args = append(st.args, cap)
	shifted := make([]int, len(params), len(params)+1)
	for i, p := range params {
		shifted[i] = p + len(prefix)
	}
	capAt := len(st.sql) - 1
	return st, verify(st.sql, mode, append(shifted, capAt), func(top ast.ResultSetNode) bool {
		l := limitOf(top)
		if l == nil || l.Offset != nil {
			return false
		}
		m, ok := l.Count.(*test_driver.ParamMarkerExpr)
		return ok && m.Offset == capAt
	})
}

// verify checks the statement check built, once more from its text, and
// that capped sees the row cap where it was put: so the cap is never
// read as part of a comment, or applied to less than the whole result.
func verify(sql string, mode sqlMode, params []int, capped func(ast.ResultSetNode) bool) error {
	top, err := analyze(sql, mode, params)
	if rs, ok := top.(ast.ResultSetNode); err == nil && (!ok || !capped(rs)) {
		err = fmt.Errorf("the row cap is not where it was put")
	}
	if err != nil {
		return askbi.Errorf(askbi.InvalidArgument, "the row limit could not be added to this query (%s); end it with a plain SELECT and no trailing text", askbi.ErrorMessage(err))
	}
	return nil
}

// analyze reads sql twice, each reading enough alone to refuse a call,
// an assignment, INTO or a locking read: as a tree (walkTree) and as
// text (lexical).
func analyze(sql string, mode sqlMode, params []int) (ast.StmtNode, error) {
	top, err := walkTree(sql, mode, params)
	if err != nil {
		return nil, err
	}
	return top, lexical(sql, mode)
}

// walkTree parses sql under mode and walks every node of its one
// statement: a SELECT, or a set operation of them, with nothing in it
// that writes, locks, reads or writes server files, waits or assigns.
// Its ? placeholders must be those at the offsets params.
func walkTree(sql string, mode sqlMode, params []int) (ast.StmtNode, error) {
	stmts, err := parse(sql, mode)
	if err != nil {
		return nil, syntaxError(sql, mode, err)
	}
	switch len(stmts) {
	case 0:
		return nil, askbi.Errorf(askbi.InvalidArgument, "the SQL holds no statement, only comments; send one SELECT statement")
	case 1:
	default:
		return nil, askbi.Errorf(askbi.InvalidArgument, "only one read-only SELECT statement is allowed; remove the second statement")
	}
	top := stmts[0]
	if withOf(top) != nil {
		return nil, askbi.Errorf(askbi.InvalidArgument, "data-modifying statements with WITH are not allowed; only one read-only SELECT statement is")
	}
	// The walker refuses every statement but a SELECT or a set operation
	// of them, the top one included.
	w := &walker{}
	top.Accept(w)
	if w.err != nil {
		return nil, w.err
	}
	if !slices.Equal(w.params, params) {
		if len(params) == 0 {
			return nil, askbi.Errorf(askbi.InvalidArgument, "query parameters such as ? are not supported; write the values into the query")
		}
		return nil, askbi.Errorf(askbi.InvalidArgument, "sql: a {{variable}} could not be bound where it stands; write each one bare, as a value, outside quotes, comments and names")
	}
	return top, nil
}

func withOf(n ast.StmtNode) *ast.WithClause {
	switch n := n.(type) {
	case *ast.UpdateStmt:
		return n.With
	case *ast.DeleteStmt:
		return n.With
	}
	return nil
}

// limitOf returns the LIMIT of the whole result of a top-level statement.
func limitOf(n ast.Node) *ast.Limit {
	switch n := n.(type) {
	case *ast.SelectStmt:
		return n.Limit
	case *ast.SetOprStmt:
		return n.Limit
	}
	return nil
}

// literalAtMost reports whether e is an integer literal no larger than n.
func literalAtMost(e ast.ExprNode, n int64) bool {
	v, ok := e.(*test_driver.ValueExpr)
	if !ok {
		return false
	}
	switch x := v.GetValue().(type) {
	case int64:
		return x >= 0 && x <= n
	case uint64:
		return x <= uint64(n)
	}
	return false
}

// walker visits every node of a statement, records its placeholders'
// offsets and stops at the first one the guard refuses.
type walker struct {
	err    error
	params []int
}

func (w *walker) Enter(n ast.Node) (ast.Node, bool) {
	if w.err == nil {
		w.err = w.check(n)
	}
	return n, w.err != nil
}

func (w *walker) Leave(n ast.Node) (ast.Node, bool) { return n, w.err == nil }

// check refuses one node that could write, lock, reach server files,
// wait, or set state.
func (w *walker) check(n ast.Node) error {
	switch n := n.(type) {
	case *ast.SelectStmt:
		if n.SelectIntoOpt != nil {
			return askbi.Errorf(askbi.InvalidArgument, "SELECT ... INTO %s is not allowed; remove INTO", intoNames[n.SelectIntoOpt.Tp])
		}
		if n.LockInfo != nil && n.LockInfo.LockType != ast.SelectLockNone {
			return askbi.Errorf(askbi.InvalidArgument, "SELECT ... %s is not allowed in read-only queries; remove it", lockName(n.LockInfo.LockType))
		}
	case *ast.SetOprStmt, *ast.SetOprSelectList, *ast.WithClause, *ast.CommonTableExpression:
	case *ast.FuncCallExpr:
		if name := n.FnName.L; deniedFunction(name) {
			return askbi.Errorf(askbi.InvalidArgument, "function %s is not allowed in read-only queries", strings.ToUpper(name))
		}
	case *ast.VariableExpr:
		if n.Value != nil {
			return askbi.Errorf(askbi.InvalidArgument, "assigning variables (@%s := ...) is not allowed in read-only queries", n.Name)
		}
	case *test_driver.ParamMarkerExpr:
		w.params = append(w.params, n.Offset)
	case ast.StmtNode:
		// Nothing but a SELECT may stand at the top, or inside one.
		return statementError(n)
	}
	return nil
}

var intoNames = map[ast.SelectIntoType]string{
	ast.SelectIntoOutfile:  "OUTFILE",
	ast.SelectIntoDumpfile: "DUMPFILE",
	ast.SelectIntoVars:     "@variable",
}

func lockName(t ast.SelectLockType) string {
	switch t {
	case ast.SelectLockForShare:
		return "FOR SHARE (LOCK IN SHARE MODE)"
	case ast.SelectLockForShareNoWait:
		return "FOR SHARE NOWAIT"
	}
	return strings.ToUpper(t.String())
}

// syntaxError is the error of SQL the parser refused. What the lexical
// reading refuses is named instead: SELECT ... INTO DUMPFILE and INTO
// @variable, which the servers run, do not parse.
func syntaxError(sql string, mode sqlMode, err error) error {
	if lerr := lexical(sql, mode); lerr != nil {
		return lerr
	}
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	return askbi.Errorf(askbi.InvalidArgument, "SQL syntax error: %s", strings.TrimSpace(msg))
}

var intoRe = regexp.MustCompile(`(?i)\bINTO\b`)

func errTooLong(n, maxLen int) error {
	return askbi.Errorf(askbi.InvalidArgument, "the SQL is %d bytes long; at most %d are allowed", n, maxLen)
}

// statementError refuses a statement that is not a SELECT, naming it
// when the name helps the model.
func statementError(n ast.Node) error {
	what, ok := statementNames[fmt.Sprintf("%T", n)]
	if !ok {
		what = "this statement"
	}
	return askbi.Errorf(askbi.InvalidArgument, "only one read-only SELECT statement is allowed, not %s", what)
}

var statementNames = map[string]string{
	"*ast.InsertStmt":        "INSERT or REPLACE",
	"*ast.UpdateStmt":        "UPDATE",
	"*ast.DeleteStmt":        "DELETE",
	"*ast.SetStmt":           "SET",
	"*ast.PrepareStmt":       "PREPARE",
	"*ast.ExecuteStmt":       "EXECUTE",
	"*ast.DeallocateStmt":    "DEALLOCATE",
	"*ast.DoStmt":            "DO",
	"*ast.CallStmt":          "CALL",
	"*ast.ExplainStmt":       "EXPLAIN",
	"*ast.ShowStmt":          "SHOW",
	"*ast.LoadDataStmt":      "LOAD DATA",
	"*ast.LockTablesStmt":    "LOCK TABLES",
	"*ast.UnlockTablesStmt":  "UNLOCK TABLES",
	"*ast.BeginStmt":         "a transaction statement",
	"*ast.CommitStmt":        "a transaction statement",
	"*ast.RollbackStmt":      "a transaction statement",
	"*ast.CreateTableStmt":   "CREATE TABLE",
	"*ast.DropTableStmt":     "DROP",
	"*ast.TruncateTableStmt": "TRUNCATE",
	"*ast.AlterTableStmt":    "ALTER TABLE",
	"*ast.GrantStmt":         "GRANT",
	"*ast.UseStmt":           "USE",
	"*ast.KillStmt":          "KILL",
	"*ast.FlushStmt":         "FLUSH",
}

// deniedFunction reports whether a function of that name sleeps, waits,
// locks, reads server files, changes a sequence or runs SQL elsewhere.
// A same-named stored function is denied too: the guard cannot tell them
// apart, and the name alone is reason enough to ask for a rename.
func deniedFunction(name string) bool {
	if deniedNames[name] {
		return true
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var deniedNames = map[string]bool{
	// Sleeping and burning time.
	"sleep": true, "benchmark": true,
	// Named locks: held by the session, beyond the transaction.
	"get_lock": true, "release_lock": true, "release_all_locks": true, "is_free_lock": true, "is_used_lock": true,
	// Waits for replication.
	"master_pos_wait": true, "source_pos_wait": true, "master_gtid_wait": true,
	"wait_for_executed_gtid_set": true, "wait_until_sql_thread_after_gtids": true, "sql_thread_wait_after_gtids": true,
	// Server files.
	"load_file": true,
	// Sequences (MariaDB): NEXT VALUE FOR s is nextval(s).
	"nextval": true, "setval": true, "lastval": true,
	// lib_mysqludf_sys: shell commands.
	"sys_exec": true, "sys_eval": true, "sys_get": true, "sys_set": true,
}

var deniedPrefixes = []string{
	"service_get_", "service_release_", // the locking service (MySQL)
	"version_tokens_",                                                         // version tokens and their locks (MySQL)
	"keyring_", "audit_log_", "mysql_firewall_", "set_firewall_", "firewall_", // plugins' administration
	"spider_",                                        // Spider: SQL run on other servers (MariaDB)
	"group_replication_", "asynchronous_connection_", // replication administration
}
