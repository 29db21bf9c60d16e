package pgsource

import (
	"fmt"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/askbi/askbi"
)

// statement is one statement the guard accepted.
type statement struct {
	sql     string // its text, without a trailing semicolon (may end in a comment)
	explain bool   // an EXPLAIN (without ANALYZE) of a SELECT
}

// maxDepth bounds depthEstimate. libpg_query stops at its own stack limit
// (100 kB) with a "stack depth limit exceeded" error; this bound answers
// first, with a message that says what to change, and keeps the Go walk of
// the tree (and protobuf's decoding of it) shallow.
const maxDepth = 1000

// parse parses sql with PostgreSQL's parser: libpg_query's C code, linked
// through cgo, which is safe for concurrent use (its memory contexts are
// per thread). (Its JSON output would be faster to get, but needs far more
// stack: it gives up at a few hundred nested levels, well within maxDepth.)
func parse(sql string) (*pg_query.ParseResult, error) {
	// Each level the estimate counts takes at least one byte, so shorter
	// SQL needs no scan.
	if len(sql) > maxDepth {
		scan, err := pg_query.Scan(sql)
		if err != nil {
			return nil, syntaxError(err)
		}
		if d := depthEstimate(scan.Tokens); d > maxDepth {
			return nil, askbi.Errorf(askbi.InvalidArgument, "the SQL is too deeply nested to check (about %d levels, at most %d); split long chains of operators, JOINs or UNIONs, or nest fewer parentheses", d, maxDepth)
		}
	}
	tree, err := pg_query.Parse(sql)
	if err != nil {
		return nil, syntaxError(err)
	}
	return tree, nil
}

func syntaxError(err error) error {
	return askbi.Errorf(askbi.InvalidArgument, "SQL syntax error: %s", err.Error())
}

// depthEstimate returns an upper bound of the depth of the parse tree of
// the scanned tokens, without parsing. Every level of the tree either opens
// a parenthesis or bracket, or comes from an operator or keyword in it (a
// chain a+b+c nests to the left). So the bound is the largest sum, over the
// open groups around a token, of one per group plus the operators and
// keywords directly inside each. Names, constants and commas add no level;
// nor do AND and OR, which the parser flattens into one list.
func depthEstimate(tokens []*pg_query.ScanToken) int {
	counts := []int{0} // operators and keywords per open group
	depth, deepest := 0, 0
	for _, t := range tokens {
		switch t.Token {
		case '(', '[':
			counts = append(counts, 0)
			depth++
		case ')', ']':
			if len(counts) > 1 {
				depth -= 1 + counts[len(counts)-1]
				counts = counts[:len(counts)-1]
			}
		case ',', '.', ';', pg_query.Token_AND, pg_query.Token_OR,
			pg_query.Token_IDENT, pg_query.Token_UIDENT, pg_query.Token_PARAM,
			pg_query.Token_ICONST, pg_query.Token_FCONST, pg_query.Token_SCONST, pg_query.Token_USCONST,
			pg_query.Token_BCONST, pg_query.Token_XCONST,
			pg_query.Token_SQL_COMMENT, pg_query.Token_C_COMMENT:
		default:
			counts[len(counts)-1]++
			depth++
		}
		deepest = max(deepest, depth)
	}
	return deepest
}

// check accepts sql when it is exactly one read-only SELECT (VALUES and
// TABLE included) or an EXPLAIN of one, without ANALYZE. It parses with
// PostgreSQL's own parser and walks every node of the tree, so nothing
// hides in subqueries, CTEs, expressions or function arguments.
//
// params is the number of bind parameters bind put in: each of $1 to
// $params must appear exactly once, as a value, and no other $n at all.
// That is how a disagreement between bind's lexer and PostgreSQL's about
// where a reference stood (in a string, say) is caught.
//
// The guard is the first of several walls, not the only one: the query also
// runs in a READ ONLY transaction, through the extended protocol (one
// statement only), with a timeout, as (ideally) a SELECT-only role. It
// cannot see inside views or user functions the query calls; the role's
// privileges and the read-only transaction cover those.
func check(sql string, maxLen, params int) (statement, error) {
	if len(sql) > maxLen {
		return statement{}, errTooLong(len(sql), maxLen)
	}
	if !utf8.ValidString(sql) || strings.ContainsRune(sql, 0) {
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL is not valid UTF-8 text")
	}
	if strings.TrimSpace(sql) == "" {
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL is empty; send one SELECT statement")
	}
	tree, err := parse(sql)
	if err != nil {
		return statement{}, err
	}
	switch len(tree.Stmts) {
	case 0:
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "the SQL holds no statement, only comments; send one SELECT statement")
	case 1:
	default:
		return statement{}, askbi.Errorf(askbi.InvalidArgument, "only one read-only SELECT statement is allowed; remove the second statement")
	}
	raw := tree.Stmts[0]
	start, end := int(raw.StmtLocation), len(sql)
	if raw.StmtLen > 0 { // zero means up to the end
		end = start + int(raw.StmtLen)
	}
	if start < 0 || start > end || end > len(sql) {
		return statement{}, &askbi.Error{Code: askbi.Internal, Err: fmt.Errorf("pgsource: the parser placed the statement at [%d:%d] of %d bytes", start, end, len(sql))}
	}
	st := statement{sql: sql[start:end]}
	node := raw.Stmt
	if ex := node.GetExplainStmt(); ex != nil {
		for _, opt := range ex.Options {
			if strings.EqualFold(opt.GetDefElem().GetDefname(), "analyze") {
				return statement{}, askbi.Errorf(askbi.InvalidArgument, "EXPLAIN ANALYZE is not allowed because it runs the statement; use EXPLAIN without ANALYZE")
			}
		}
		st.explain, node = true, ex.Query
	}
	if node.GetSelectStmt() == nil {
		var name protoreflect.Name
		if f := node.ProtoReflect().WhichOneof(nodeOneof); f != nil {
			name = f.Message().Name()
		}
		return statement{}, statementError(name)
	}
	uses := make([]int, params+1)
	visit := func(m proto.Message) error {
		if p, ok := m.(*pg_query.ParamRef); ok && p.Number >= 1 && int(p.Number) <= params {
			uses[p.Number]++
			return nil
		}
		return checkNode(m)
	}
	if err := walk(node.ProtoReflect(), visit); err != nil {
		return statement{}, err
	}
	for _, n := range uses[1:] {
		if n != 1 {
			return statement{}, askbi.Errorf(askbi.InvalidArgument, "sql: a {{variable}} could not be bound where it stands; write each one bare, as a value, outside quotes, comments and names")
		}
	}
	return st, nil
}

func errTooLong(n, maxLen int) error {
	return askbi.Errorf(askbi.InvalidArgument, "the SQL is %d bytes long; at most %d are allowed", n, maxLen)
}

var nodeOneof = (&pg_query.Node{}).ProtoReflect().Descriptor().Oneofs().ByName("node")

// walk calls visit on m and on every message nested in it, depth first.
// The tree's depth is bounded by the protobuf decoder's recursion limit.
func walk(m protoreflect.Message, visit func(proto.Message) error) error {
	if err := visit(m.Interface()); err != nil {
		return err
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Message() == nil:
		case fd.IsList():
			for i, l := 0, v.List(); i < l.Len() && err == nil; i++ {
				err = walk(l.Get(i).Message(), visit)
			}
		default:
			err = walk(v.Message(), visit)
		}
		return err == nil
	})
	return err
}

// checkNode rejects one node of a SELECT's tree that could write, lock,
// have side effects or run other SQL.
func checkNode(m proto.Message) error {
	switch n := m.(type) {
	case *pg_query.IntoClause:
		return askbi.Errorf(askbi.InvalidArgument, "SELECT ... INTO is not allowed because it creates a table; remove INTO")
	case *pg_query.LockingClause:
		return askbi.Errorf(askbi.InvalidArgument, "SELECT ... %s is not allowed in read-only queries; remove it", lockStrength[n.Strength])
	case *pg_query.CommonTableExpr:
		if n.Ctequery.GetSelectStmt() == nil {
			return askbi.Errorf(askbi.InvalidArgument, "data-modifying statements in WITH are not allowed")
		}
	case *pg_query.FuncCall:
		if name := lastName(n.Funcname); deniedFunction(name) {
			return askbi.Errorf(askbi.InvalidArgument, "function %s is not allowed in read-only queries", name)
		}
	case *pg_query.A_Indirection:
		// (expr).f is PostgreSQL's functional notation for f(expr), e.g.
		// ('s'::regclass).nextval, so every field name here may be a call.
		for _, ind := range n.Indirection {
			if name := strings.ToLower(ind.GetString_().GetSval()); deniedFunction(name) {
				return askbi.Errorf(askbi.InvalidArgument, "function %s is not allowed in read-only queries", name)
			}
		}
	case *pg_query.ParamRef:
		return askbi.Errorf(askbi.InvalidArgument, "query parameters such as $%d are not supported; write the values into the query", n.Number)
	case *pg_query.SelectStmt, *pg_query.RawStmt:
	default:
		if name := m.ProtoReflect().Descriptor().Name(); strings.HasSuffix(string(name), "Stmt") {
			return statementError(name)
		}
	}
	return nil
}

var lockStrength = map[pg_query.LockClauseStrength]string{
	pg_query.LockClauseStrength_LCS_FORKEYSHARE:    "FOR KEY SHARE",
	pg_query.LockClauseStrength_LCS_FORSHARE:       "FOR SHARE",
	pg_query.LockClauseStrength_LCS_FORNOKEYUPDATE: "FOR NO KEY UPDATE",
	pg_query.LockClauseStrength_LCS_FORUPDATE:      "FOR UPDATE",
}

// statementError rejects a statement that is not a SELECT, naming it when
// the name helps the model.
func statementError(name protoreflect.Name) error {
	what, ok := statementNames[name]
	if !ok {
		what = "this statement"
	}
	return askbi.Errorf(askbi.InvalidArgument, "only one read-only SELECT statement is allowed, not %s", what)
}

var statementNames = map[protoreflect.Name]string{
	"InsertStmt":        "INSERT",
	"UpdateStmt":        "UPDATE",
	"DeleteStmt":        "DELETE",
	"MergeStmt":         "MERGE",
	"CopyStmt":          "COPY",
	"DoStmt":            "DO",
	"CallStmt":          "CALL",
	"PrepareStmt":       "PREPARE",
	"ExecuteStmt":       "EXECUTE",
	"DeallocateStmt":    "DEALLOCATE",
	"ListenStmt":        "LISTEN",
	"UnlistenStmt":      "UNLISTEN",
	"NotifyStmt":        "NOTIFY",
	"TransactionStmt":   "a transaction statement",
	"VariableSetStmt":   "SET or RESET",
	"VariableShowStmt":  "SHOW",
	"ExplainStmt":       "a nested EXPLAIN",
	"CreateTableAsStmt": "CREATE TABLE AS",
	"CreateStmt":        "CREATE TABLE",
	"DropStmt":          "DROP",
	"TruncateStmt":      "TRUNCATE",
	"LockStmt":          "LOCK",
	"DeclareCursorStmt": "DECLARE CURSOR",
	"FetchStmt":         "FETCH",
	"ClosePortalStmt":   "CLOSE",
	"DiscardStmt":       "DISCARD",
	"VacuumStmt":        "VACUUM or ANALYZE",
}

// lastName returns the lower-cased last part of a qualified name, so that
// pg_catalog.pg_sleep is pg_sleep.
func lastName(parts []*pg_query.Node) string {
	if len(parts) == 0 {
		return ""
	}
	return strings.ToLower(parts[len(parts)-1].GetString_().GetSval())
}

// deniedFunction reports whether a function of that name may have side
// effects (locks, sequences, settings, signals, replication, files, large
// objects, network) or runs SQL text given as an argument. A same-named user
// function is denied too: the guard cannot tell them apart, and the name
// alone is reason enough to ask for a rename.
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
	// Sequences.
	"nextval": true, "setval": true, "currval": true, "lastval": true,
	// Settings, notifications, session state.
	"set_config": true, "pg_notify": true, "setseed": true,
	"pg_export_snapshot": true, "pg_stat_force_next_flush": true,
	// Other backends and the server.
	"pg_cancel_backend": true, "pg_terminate_backend": true,
	"pg_reload_conf": true, "pg_rotate_logfile": true, "pg_rotate_logfile_old": true,
	"pg_promote": true, "pg_switch_wal": true, "pg_switch_xlog": true,
	"pg_backup_start": true, "pg_backup_stop": true, "pg_start_backup": true, "pg_stop_backup": true,
	"pg_import_system_collations": true, "pg_nextoid": true,
	"pg_drop_replication_slot": true, "pg_replication_slot_advance": true,
	"pg_sync_replication_slots": true, "pg_stat_file": true,
	"pg_stat_statements_reset": true, "pg_prewarm": true,
	// Large objects without the lo_ prefix.
	"loread": true, "lowrite": true,
	// They run SQL text passed as an argument.
	"ts_stat": true, "ts_rewrite": true,
	// pgsql-http.
	"http": true,
}

var deniedPrefixes = []string{
	"pg_advisory_", "pg_try_advisory_", // session locks that outlive the transaction
	"pg_sleep",                    // pg_sleep, pg_sleep_for, pg_sleep_until
	"txid_", "pg_current_xact_id", // assign transaction IDs
	"pg_stat_reset",                  // statistics resets
	"pg_read_", "pg_ls_", "pg_file_", // server files (adminpack too)
	"lo_",                              // large objects: lo_import reads server files
	"dblink", "postgres_fdw_", "http_", // other servers
	"pg_background_",                                   // pg_background runs SQL text
	"pg_create_", "pg_copy_", "pg_replication_origin_", // replication slots, restore points
	"pg_log", // pg_logical_*, pg_log_backend_memory_contexts, pg_log_standby_snapshot, pg_logdir_ls
	"pg_wal_replay_",
	"binary_upgrade_",
	// They run SQL text or read whole tables: query_to_xml('DELETE ...').
	"query_to_xml", "cursor_to_xml", "table_to_xml", "schema_to_xml", "database_to_xml",
}
