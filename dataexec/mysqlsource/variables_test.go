package mysqlsource

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

func TestReferences(t *testing.T) {
	src := &Source{} // References runs nothing
	tests := []struct {
		sql  string
		want []string
		err  string // a fragment of the message; "" when accepted
	}{
		{"SELECT {{a}}, {{ b }}, {{a}} FROM t", []string{"a", "b", "a"}, ""},
		{"SELECT * FROM t WHERE d >= {{from}} AND v <> '{' -- }}", []string{"from"}, ""},
		{"SELECT 1 --{{a}}", []string{"a"}, ""}, // "--" without a space is minus minus
		{"SELECT '{{a}}'", nil, "must not be inside quotes or a comment"},
		{`SELECT "{{a}}"`, nil, "must not be inside quotes or a comment"},
		{"SELECT `{{a}}`", nil, "must not be inside quotes or a comment"},
		{"SELECT 1 -- {{a}}", nil, "must not be inside quotes or a comment"},
		{"SELECT 1 # {{a}}", nil, "must not be inside quotes or a comment"},
		{"SELECT 1 /* {{a}} */", nil, "must not be inside quotes or a comment"},
		// The backslash escapes the quote: the string runs on.
		{`SELECT 'x\' , {{a}} -- '`, nil, "must not be inside quotes or a comment"},
		{"SELECT {{a}} WHERE id = ?", nil, "parameters such as ? are not supported"},
		{"SELECT '?', `?`, {{a}} -- ?", []string{"a"}, ""},
	}
	for _, tc := range tests {
		got, err := src.References(tc.sql)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("References(%q) = %v", tc.sql, err)
		case tc.err != "" && (askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), tc.err)):
			t.Errorf("References(%q) = %v, want invalid_argument with %q", tc.sql, err, tc.err)
		case tc.err == "":
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("References(%q) mismatch (-want +got):\n%s", tc.sql, diff)
			}
		}
	}
}

// TestLexUnderSQLMode: references are found where the server's lexer,
// under the session's sql_mode, reads code.
func TestLexUnderSQLMode(t *testing.T) {
	tests := []struct {
		mode, sql string
		refs      int
		err       bool
	}{
		{"", `SELECT 'a\' , {{x}} -- '`, 0, true},
		{"NO_BACKSLASH_ESCAPES", `SELECT 'a\' , {{x}} -- '`, 1, false},
		{"", `SELECT "a\" , {{x}} -- "`, 0, true},
		{"ANSI_QUOTES", `SELECT "a\" , {{x}} -- "`, 1, false},
		{"ANSI_QUOTES", `SELECT 'a\' , {{x}} -- '`, 0, true},
	}
	for _, tc := range tests {
		refs, _, err := lex(tc.sql, mustMode(t, tc.mode))
		if len(refs) != tc.refs || (err != nil) != tc.err {
			t.Errorf("lex(%q) under %q = %d refs, %v; want %d, error %v", tc.sql, tc.mode, len(refs), err, tc.refs, tc.err)
		}
	}
}

func TestBind(t *testing.T) {
	num := func(n string) dataexec.VariableValue {
		return dataexec.VariableValue{Type: workspace.VarNumber, Value: json.Number(n)}
	}
	vars := map[string]dataexec.VariableValue{
		"i": num("42"), "neg": num("-7"), "dec": num("-2.50"), "big": num("123456789012345678901234567890"),
		"exp": num("1e3"), "s": {Type: workspace.VarString, Value: "it's"}, "d": {Type: workspace.VarDate, Value: "2026-02-28"},
		"b": {Type: workspace.VarBoolean, Value: true},
	}
	got, err := bind("SELECT {{i}},{{neg}}, {{dec}}, {{big}}, {{exp}}, {{s}}, {{d}}, {{b}}", vars, defaultMode)
	if err != nil {
		t.Fatal(err)
	}
	want := bound{
		sql:  "SELECT  ? , ? ,  CAST(? AS DECIMAL(3, 2)) ,  CAST(? AS DECIMAL(30, 0)) ,  ? ,  ? ,  CAST(? AS DATE) ,  ? ",
		args: []any{int64(42), int64(-7), "-2.50", "123456789012345678901234567890", 1000.0, "it's", "2026-02-28", true},
	}
	for i, c := range want.sql {
		if c == '?' {
			want.offsets = append(want.offsets, i)
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(bound{})); diff != "" {
		t.Errorf("bind mismatch (-want +got):\n%s", diff)
	}
	// The placeholders are where check expects them.
	if _, err := check(got.sql, defaultMode, got.offsets, got.args, testMaxSQL, testRows); err != nil {
		t.Errorf("check(bound) = %v", err)
	}
}

func TestBindRefuses(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		vars map[string]dataexec.VariableValue
	}{
		{"undeclared", "SELECT {{nope}}", nil},
		{"number with a statement", "SELECT {{n}}", map[string]dataexec.VariableValue{"n": {Type: workspace.VarNumber, Value: json.Number("1; DROP TABLE t")}}},
		{"number as text", "SELECT {{n}}", map[string]dataexec.VariableValue{"n": {Type: workspace.VarNumber, Value: "1"}}},
		{"impossible date", "SELECT {{d}}", map[string]dataexec.VariableValue{"d": {Type: workspace.VarDate, Value: "2026-13-40"}}},
		{"boolean as text", "SELECT {{b}}", map[string]dataexec.VariableValue{"b": {Type: workspace.VarBoolean, Value: "true"}}},
		{"NUL in text", "SELECT {{s}}", map[string]dataexec.VariableValue{"s": {Type: workspace.VarString, Value: "a\x00"}}},
		{"unknown type", "SELECT {{x}}", map[string]dataexec.VariableValue{"x": {Type: "money", Value: "1"}}},
	}
	for _, tc := range tests {
		if _, err := bind(tc.sql, tc.vars, defaultMode); askbi.ErrorCode(err) != askbi.InvalidArgument {
			t.Errorf("bind(%s) = %v, want invalid_argument", tc.name, err)
		}
	}
}

// TestCheckPlaceholders: the statement's ? placeholders must be exactly
// those bind put in, so a lexer that disagrees with the parser about
// where a string ends fails closed.
func TestCheckPlaceholders(t *testing.T) {
	tests := []struct {
		name   string
		sql    string
		params []int
		want   string
	}{
		{"placeholder swallowed by a string", "SELECT ' ? '", []int{9}, "could not be bound where it stands"},
		{"placeholder moved", "SELECT  ? , '?'", []int{13}, "could not be bound where it stands"},
		{"one more placeholder", "SELECT  ? , ?", []int{8}, "could not be bound where it stands"},
		{"placeholder written by hand", "SELECT ?", nil, "parameters such as ? are not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := make([]any, len(tc.params))
			_, err := check(tc.sql, defaultMode, tc.params, args, testMaxSQL, testRows)
			if askbi.ErrorCode(err) != askbi.InvalidArgument || !strings.Contains(askbi.ErrorMessage(err), tc.want) {
				t.Errorf("check(%q, %v) = %v, want invalid_argument with %q", tc.sql, tc.params, err, tc.want)
			}
		})
	}
	// The row cap's placeholder comes after the variables'.
	got, err := check("SELECT  ? ", defaultMode, []int{8}, []any{"x"}, testMaxSQL, testRows)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(statement{sql: "SELECT  ? \nLIMIT ?", args: []any{"x", int64(testRows + 1)}}, got, cmp.AllowUnexported(statement{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
