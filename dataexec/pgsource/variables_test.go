package pgsource

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

func vars(country any) map[string]dataexec.VariableValue {
	return map[string]dataexec.VariableValue{
		"country": {Type: workspace.VarString, Value: country},
		"n":       {Type: workspace.VarNumber, Value: json.Number("-5")},
		"since":   {Type: workspace.VarDate, Value: "2026-01-01"},
		"paid":    {Type: workspace.VarBoolean, Value: true},
	}
}

const quotedRef = "sql: variable {{country}} must not be inside quotes or a comment; write it bare, its value is passed as a parameter"

// TestBind holds the cases of dataexec's former renderSQL test, now that
// values are bind parameters instead of literals, and the cases binding
// adds: a variable used twice, number types, values of the wrong shape.
func TestBind(t *testing.T) {
	with := func(name string, v dataexec.VariableValue) map[string]dataexec.VariableValue {
		m := vars("x")
		m[name] = v
		return m
	}
	for _, tc := range []struct {
		name    string
		sql     string
		vars    map[string]dataexec.VariableValue
		want    bound
		wantErr string
	}{
		{name: "all types", sql: "SELECT * FROM t WHERE c = {{country}} AND d >= {{ since }} AND p = {{paid}} LIMIT 1-{{n}}", vars: vars("US"),
			want: bound{sql: "SELECT * FROM t WHERE c =  $1  AND d >=  ($2::date)  AND p =  ($3::boolean)  LIMIT 1- ($4::integer) ",
				args: []any{"US", "2026-01-01", true, "-5"}, names: []string{"country", "since", "paid", "n"}}},
		{name: "quotes stay in the value", sql: "SELECT {{country}}", vars: vars("x' OR '1'='1"),
			want: bound{sql: "SELECT  $1 ", args: []any{"x' OR '1'='1"}, names: []string{"country"}}},
		{name: "comment and semicolon stay in the value", sql: "SELECT {{country}}", vars: vars("'; DROP TABLE users; --"),
			want: bound{sql: "SELECT  $1 ", args: []any{"'; DROP TABLE users; --"}, names: []string{"country"}}},
		{name: "dollar quote stays in the value", sql: "SELECT {{country}}", vars: vars("$$ || pg_sleep(10) || $$"),
			want: bound{sql: "SELECT  $1 ", args: []any{"$$ || pg_sleep(10) || $$"}, names: []string{"country"}}},
		{name: "E prefix cannot fuse", sql: "SELECT E{{country}}", vars: vars("x"),
			want: bound{sql: "SELECT E $1 ", args: []any{"x"}, names: []string{"country"}}},
		{name: "identifier before cannot fuse", sql: "SELECT a{{n}}", vars: vars("x"),
			want: bound{sql: "SELECT a ($1::integer) ", args: []any{"-5"}, names: []string{"n"}}},
		{name: "no references", sql: "SELECT '{{' || 1", want: bound{sql: "SELECT '{{' || 1"}},
		{name: "identifier with dollar", sql: "SELECT a$b$ FROM t WHERE c = {{country}}", vars: vars("x"),
			want: bound{sql: "SELECT a$b$ FROM t WHERE c =  $1 ", args: []any{"x"}, names: []string{"country"}}},
		{name: "escape string with escaped quote", sql: `SELECT E'it\'s', {{country}}`, vars: vars("x"),
			want: bound{sql: `SELECT E'it\'s',  $1 `, args: []any{"x"}, names: []string{"country"}}},
		{name: "same variable twice", sql: "SELECT {{n}} + {{n}}, {{country}} = {{country}}", vars: vars("x"),
			want: bound{sql: "SELECT  ($1::integer)  +  ($2::integer) ,  $3  =  $4 ", args: []any{"-5", "-5", "x", "x"},
				names: []string{"n", "n", "country", "country"}}},
		{name: "bigint", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number("2147483648")}),
			want: bound{sql: "SELECT  ($1::bigint) ", args: []any{"2147483648"}, names: []string{"n"}}},
		{name: "beyond bigint", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number("9223372036854775808")}),
			want: bound{sql: "SELECT  ($1::numeric) ", args: []any{"9223372036854775808"}, names: []string{"n"}}},
		{name: "decimal", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number("2.5")}),
			want: bound{sql: "SELECT  ($1::numeric) ", args: []any{"2.5"}, names: []string{"n"}}},
		{name: "exponent", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number("1e3")}),
			want: bound{sql: "SELECT  ($1::numeric) ", args: []any{"1e3"}, names: []string{"n"}}},
		{name: "backslash in a string value is only a value", sql: "SELECT {{country}}", vars: vars(`\'`),
			want: bound{sql: "SELECT  $1 ", args: []any{`\'`}, names: []string{"country"}}},

		{name: "positional parameter is not a dollar quote, and is refused", sql: "SELECT $1, {{country}}", vars: vars("x"),
			wantErr: "query parameters such as $1 are not supported; write the values into the query"},
		{name: "positional parameter without references", sql: "SELECT $12", wantErr: "query parameters such as $12 are not supported; write the values into the query"},
		{name: "inside quotes", sql: "SELECT * FROM t WHERE c = '{{country}}'", vars: vars("x"), wantErr: quotedRef},
		{name: "inside E string after escaped quote", sql: `SELECT E'\' {{country}}'`, vars: vars("x"), wantErr: quotedRef},
		{name: "inside quoted identifier", sql: `SELECT "{{country}}"`, vars: vars("x"), wantErr: quotedRef},
		{name: "inside dollar quote", sql: "SELECT $tag$ {{country}} $tag$", vars: vars("x"), wantErr: quotedRef},
		{name: "inside line comment", sql: "SELECT 1 -- {{country}}\n", vars: vars("x"), wantErr: quotedRef},
		{name: "inside nested block comment", sql: "SELECT /* a /* b */ {{country}} */ 1", vars: vars("x"), wantErr: quotedRef},
		{name: "unterminated string", sql: "SELECT 'abc {{country}}", vars: vars("x"), wantErr: quotedRef},
		{name: "backslash in plain string with variables", sql: `SELECT '\', {{country}} -- '`, vars: vars("x"),
			wantErr: "sql: a query with variables must not have backslashes in its string literals"},
		{name: "undeclared", sql: "SELECT {{region}}", vars: vars("x"), wantErr: "sql: variable {{region}} is not declared"},
		{name: "number then statement", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number("1; DROP")}),
			wantErr: "variables: n must be a number"},
		{name: "number as a Go string", sql: "SELECT {{n}}", vars: with("n", dataexec.VariableValue{Type: workspace.VarNumber, Value: "1"}),
			wantErr: "variables: n must be a number"},
		{name: "date out of range", sql: "SELECT {{since}}", vars: with("since", dataexec.VariableValue{Type: workspace.VarDate, Value: "2026-13-40"}),
			wantErr: "variables: since must be a date (YYYY-MM-DD)"},
		{name: "boolean as text", sql: "SELECT {{paid}}", vars: with("paid", dataexec.VariableValue{Type: workspace.VarBoolean, Value: "true"}),
			wantErr: "variables: paid must be true or false"},
		{name: "NUL in a string", sql: "SELECT {{country}}", vars: vars("a\x00b"), wantErr: "variables: country must be valid text without NUL"},
		{name: "unknown type", sql: "SELECT {{country}}", vars: with("country", dataexec.VariableValue{Type: "json", Value: "{}"}),
			wantErr: "variables: country has an unknown type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bind(tc.sql, tc.vars)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("bind error = %v, want invalid_argument %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(bound{})); diff != "" {
				t.Errorf("bind mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBindHostileValues checks that no string value, however hostile,
// reaches the SQL text: the text is the same for all of them and the
// value travels whole as the parameter. (TestQueryVariables sends them to
// a real server.)
func TestBindHostileValues(t *testing.T) {
	for _, v := range hostileStrings {
		got, err := bind("SELECT {{country}} AS v", map[string]dataexec.VariableValue{"country": {Type: workspace.VarString, Value: v}})
		if err != nil {
			t.Errorf("bind(%q): %v", v, err)
			continue
		}
		want := bound{sql: "SELECT  $1  AS v", args: []any{v}, names: []string{"country"}}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(bound{})); diff != "" {
			t.Errorf("bind(%q) mismatch (-want +got):\n%s", v, diff)
		}
	}
}

// hostileStrings are string values that would end or escape a literal.
var hostileStrings = []string{
	"'", "''", "'''", "x'--", "x'/*", "*/'", "$$'$$", "$a$", "{{country}}", "E'", "\"", "';SELECT 1;'",
	"\n'\n", "‘unicode quotes’", "U&'\\0041'", `\'`, "'; DROP TABLE x; --", "$1", "",
}

// TestCheckParams checks the wall behind bind's lexer: where the lexer and
// PostgreSQL disagree about where a reference stood, the parameters bind
// put in do not each appear once as a value, and check refuses.
func TestCheckParams(t *testing.T) {
	const unbound = "sql: a {{variable}} could not be bound where it stands; write each one bare, as a value, outside quotes, comments and names"
	for _, tc := range []struct {
		name   string
		sql    string
		params int
		want   string // "" when accepted
	}{
		{"each once", "SELECT  $1  = ($2::integer) ", 2, ""},
		{"in explain", "EXPLAIN SELECT  $1 ", 1, ""},
		{"swallowed by a string", "SELECT ' $1 '", 1, unbound},
		{"swallowed by a comment", "SELECT 1 -- $1 \n", 1, unbound},
		{"used twice", "SELECT  $1 ,  $1 ", 2, unbound},
		{"beyond the bound ones", "SELECT  $1 ,  $2 ", 1, "query parameters such as $2 are not supported; write the values into the query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.sql, testMaxSQL, tc.params)
			if got := askbi.ErrorMessage(err); got != tc.want {
				t.Errorf("check(%q, %d) = %v, want %q", tc.sql, tc.params, err, tc.want)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	src := &Source{}
	got, err := src.References("SELECT {{a}}, {{ b }}, {{a}} FROM t WHERE x = '{{' -- {{\n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "a"}, got); diff != "" {
		t.Errorf("References mismatch (-want +got):\n%s", diff)
	}
	if _, err := src.References("SELECT '{{a}}'"); askbi.ErrorCode(err) != askbi.InvalidArgument {
		t.Errorf("References(quoted) = %v, want invalid_argument", err)
	}
}

func TestNameParams(t *testing.T) {
	names := []string{"since", "country"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"placeholder", askbi.Errorf(askbi.InvalidArgument, "could not determine data type of parameter $2"),
			"could not determine data type of parameter {{country}}"},
		{"quoted placeholder", askbi.Errorf(askbi.InvalidArgument, `syntax error at or near "$1"`), `syntax error at or near "{{since}}"`},
		{"a cap's parameter stays", askbi.Errorf(askbi.InvalidArgument, "parameter $3"), "parameter $3"},
		{"longer number stays", askbi.Errorf(askbi.InvalidArgument, "value $12"), "value $12"},
		{"other codes stay", askbi.Errorf(askbi.Timeout, "parameter $1"), "parameter $1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := askbi.ErrorMessage(nameParams(tc.err, names)); got != tc.want {
				t.Errorf("message = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestQueryVariables runs variables on a real server: values come back
// typed as declared and whole, each use of a variable takes its type from
// where it stands, and hostile strings stay values.
func TestQueryVariables(t *testing.T) {
	f := mustFixture(t)
	mustExec(t, f.admin,
		`CREATE TYPE mood AS ENUM ('happy', 'sad')`,
		`CREATE TABLE x (m mood, d date, ts timestamptz)`,
		`INSERT INTO x VALUES ('happy', '2026-01-02', '2026-01-02 10:00+00')`,
	)
	v := func(typ workspace.VariableType, val any) dataexec.VariableValue {
		return dataexec.VariableValue{Type: typ, Value: val}
	}
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		sql  string
		vars map[string]dataexec.VariableValue
		want []any // the one row
	}{
		{"typed as declared", "SELECT {{s}} AS s, {{i}} AS i, {{big}} AS big, {{f}} AS f, {{d}} AS d, {{b}} AS b",
			map[string]dataexec.VariableValue{"s": v(workspace.VarString, "it's"), "i": v(workspace.VarNumber, json.Number("-5")),
				"big": v(workspace.VarNumber, json.Number("5000000000")), "f": v(workspace.VarNumber, json.Number("2.50")),
				"d": v(workspace.VarDate, "2026-01-02"), "b": v(workspace.VarBoolean, false)},
			[]any{"it's", int64(-5), int64(5000000000), json.Number("2.50"), day, false}},
		{"integer where a function needs one", "SELECT repeat('x', {{n}}) AS r, count(*) AS c FROM generate_series(1, {{n}})",
			map[string]dataexec.VariableValue{"n": v(workspace.VarNumber, json.Number("3"))}, []any{"xxx", int64(3)}},
		{"string against an enum and a date against a timestamp", "SELECT count(*) FROM x WHERE m = {{s}} AND ts >= {{d}} AND d = {{d}}",
			map[string]dataexec.VariableValue{"s": v(workspace.VarString, "happy"), "d": v(workspace.VarDate, "2026-01-02")}, []any{int64(1)}},
		{"one variable in two types", "SELECT {{s}} = 'happy'::mood AS is_happy, {{s}} || '!' AS text",
			map[string]dataexec.VariableValue{"s": v(workspace.VarString, "happy")}, []any{true, "happy!"}},
		{"injection attempt is a value", "SELECT count(*) FROM x WHERE m::text = {{s}}",
			map[string]dataexec.VariableValue{"s": v(workspace.VarString, "'; DROP TABLE x; --")}, []any{int64(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.src.Query(t.Context(), dataexec.Query{SQL: tc.sql, Variables: tc.vars, MaxRows: 10, MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([][]any{tc.want}, got.Rows); diff != "" {
				t.Errorf("rows mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("hostile strings come back whole", func(t *testing.T) {
		for _, s := range hostileStrings {
			got, err := f.src.Query(t.Context(), dataexec.Query{SQL: "SELECT {{s}} AS v", MaxRows: 10, MaxBytes: 1 << 20,
				Variables: map[string]dataexec.VariableValue{"s": v(workspace.VarString, s)}})
			if err != nil {
				t.Errorf("Query(%q): %v", s, err)
				continue
			}
			if diff := cmp.Diff([][]any{{s}}, got.Rows); diff != "" {
				t.Errorf("Query(%q) mismatch (-want +got):\n%s", s, diff)
			}
		}
	})
	t.Run("explain", func(t *testing.T) {
		got, err := f.src.Query(t.Context(), dataexec.Query{SQL: "EXPLAIN SELECT * FROM x WHERE m = {{s}} AND d > {{d}}", MaxRows: 10, MaxBytes: 1 << 20,
			Variables: map[string]dataexec.VariableValue{"s": v(workspace.VarString, "sad"), "d": v(workspace.VarDate, "2026-01-01")}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Rows) == 0 || !strings.HasPrefix(got.Rows[0][0].(string), "Seq Scan on x") {
			t.Errorf("EXPLAIN rows = %v, want a Seq Scan plan", got.Rows)
		}
	})
	t.Run("server messages name the variable", func(t *testing.T) {
		_, err := f.src.Query(t.Context(), dataexec.Query{SQL: "SELECT {{s}} IS NULL", MaxRows: 10, MaxBytes: 1 << 20,
			Variables: map[string]dataexec.VariableValue{"s": v(workspace.VarString, "a")}})
		if want := "could not determine data type of parameter {{s}}"; askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != want {
			t.Errorf("Query = %v, want invalid_argument %q", err, want)
		}
	})
	var n int
	if err := f.admin.Get(&n, "SELECT count(*) FROM x"); err != nil || n != 1 {
		t.Errorf("table x: %d rows, %v; want it untouched", n, err)
	}
	f.assertUntouched(t)
	f.assertClean(t)
}

// TestQueryVariablesRejectedFirst checks that hostile references and
// values are refused before anything runs: the source's database does not
// exist, so anything sent would fail as unavailable instead.
func TestQueryVariablesRejectedFirst(t *testing.T) {
	src, err := New(mustOpen(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql string
		vars      map[string]dataexec.VariableValue
		want      string
	}{
		{"reference inside a string literal", "SELECT * FROM t WHERE v = 'a{{country}}'", vars("x"), quotedRef},
		{"reference inside a comment", "SELECT * FROM t /* {{country}} */", vars("x"), quotedRef},
		{"reference inside dollar quotes", "SELECT $q$ {{country}} $q$", vars("x"), quotedRef},
		{"undeclared reference", "SELECT {{region}}", vars("x"), "sql: variable {{region}} is not declared"},
		{"number with a statement", "SELECT {{n}}",
			map[string]dataexec.VariableValue{"n": {Type: workspace.VarNumber, Value: json.Number("1; DROP")}}, "variables: n must be a number"},
		{"impossible date", "SELECT {{d}}",
			map[string]dataexec.VariableValue{"d": {Type: workspace.VarDate, Value: "2026-13-40"}}, "variables: d must be a date (YYYY-MM-DD)"},
		{"hand-written parameter next to a reference", "SELECT {{country}}$1", vars("x"), "query parameters such as $1 are not supported; write the values into the query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := src.Query(t.Context(), dataexec.Query{SQL: tc.sql, Variables: tc.vars, MaxRows: 10, MaxBytes: 1 << 20})
			if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != tc.want {
				t.Errorf("Query = %v, want invalid_argument %q", err, tc.want)
			}
		})
	}
}
