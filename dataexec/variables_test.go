package dataexec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
)

var testDecl = []Variable{
	{Name: "country", Type: VarString, Default: "US"},
	{Name: "n", Type: VarNumber, Default: json.Number("10")},
	{Name: "since", Type: VarDate, Default: "2026-01-01"},
	{Name: "paid", Type: VarBoolean, Default: false},
}

func TestResolveVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decl    []Variable
		given   map[string]any
		want    map[string]any
		wantErr string
	}{
		{"defaults", testDecl, nil,
			map[string]any{"country": "US", "n": json.Number("10"), "since": "2026-01-01", "paid": false}, ""},
		{"given values", testDecl,
			map[string]any{"country": "DE", "n": 2.5, "since": "2026-02-28", "paid": "true"},
			map[string]any{"country": "DE", "n": json.Number("2.5"), "since": "2026-02-28", "paid": true}, ""},
		{"null takes the default", testDecl, map[string]any{"country": nil},
			map[string]any{"country": "US", "n": json.Number("10"), "since": "2026-01-01", "paid": false}, ""},
		{"numeric string and negative", testDecl, map[string]any{"n": " -3e2 "},
			map[string]any{"country": "US", "n": json.Number("-3e2"), "since": "2026-01-01", "paid": false}, ""},
		{"unknown name", testDecl, map[string]any{"region": "EU"}, nil, "variables: \"region\" is not declared by this dataset"},
		{"string for number", testDecl, map[string]any{"n": "ten"}, nil, "variables: n must be a number"},
		{"number expression", testDecl, map[string]any{"n": "1); DROP TABLE x; --"}, nil, "variables: n must be a number"},
		{"hex number", testDecl, map[string]any{"n": "0x10"}, nil, "variables: n must be a number"},
		{"infinite number", testDecl, map[string]any{"n": json.Number("1e400")}, nil, "variables: n must be a finite number"},
		{"bool for number", testDecl, map[string]any{"n": true}, nil, "variables: n must be a number"},
		{"number for string", testDecl, map[string]any{"country": 5.0}, nil, "variables: country must be a string"},
		{"backslash", testDecl, map[string]any{"country": `\'`}, nil, "variables: country must be valid text without backslashes"},
		{"NUL", testDecl, map[string]any{"country": "a\x00b"}, nil, "variables: country must be valid text without backslashes"},
		{"long string", testDecl, map[string]any{"country": strings.Repeat("x", 1001)}, nil, "variables: country must be at most 1000 characters"},
		{"bad date", testDecl, map[string]any{"since": "2026-02-30"}, nil, "variables: since must be a date (YYYY-MM-DD)"},
		{"date with time", testDecl, map[string]any{"since": "2026-02-01T00:00:00Z"}, nil, "variables: since must be a date (YYYY-MM-DD)"},
		{"bad boolean", testDecl, map[string]any{"paid": "yes"}, nil, "variables: paid must be true or false"},
		{"required", []Variable{{Name: "x", Type: VarString}}, nil, nil, "variables: x is required; it has no default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveVariables(tc.decl, tc.given)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("resolveVariables error = %v, want invalid_argument %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resolveVariables mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name string
		decl []Variable
		want string
	}{
		{"ok", testDecl, ""},
		{"bad name", []Variable{{Name: "a-b", Type: VarString}}, "variables: a name must be a letter or underscore and up to 63 letters, digits or underscores"},
		{"duplicate", []Variable{{Name: "a", Type: VarString}, {Name: "a", Type: VarNumber}}, "variables: a appears twice"},
		{"bad type", []Variable{{Name: "a", Type: "json"}}, "variables: a: type must be number, string, date or boolean"},
		{"bad default", []Variable{{Name: "a", Type: VarDate, Default: "tomorrow"}}, "variables: a: default must be a date (YYYY-MM-DD)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := askbi.ErrorMessage(validateDeclarations(tc.decl)); got != tc.want {
				t.Errorf("validateDeclarations = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRenderSQL(t *testing.T) {
	vals := func(country any) map[string]any {
		return map[string]any{"country": country, "n": json.Number("-5"), "since": "2026-01-01", "paid": true}
	}
	for _, tc := range []struct {
		name    string
		sql     string
		vals    map[string]any
		want    string
		wantErr string
	}{
		{"all types", "SELECT * FROM t WHERE c = {{country}} AND d >= {{ since }} AND p = {{paid}} LIMIT 1-{{n}}", vals("US"),
			"SELECT * FROM t WHERE c =  'US'  AND d >=  '2026-01-01'  AND p =  TRUE  LIMIT 1- (-5) ", ""},
		{"quote is doubled", "SELECT {{country}}", vals("x' OR '1'='1"), "SELECT  'x'' OR ''1''=''1' ", ""},
		{"comment and semicolon stay inside", "SELECT {{country}}", vals("'; DROP TABLE users; --"), "SELECT  '''; DROP TABLE users; --' ", ""},
		{"dollar quote inside literal", "SELECT {{country}}", vals("$$ || pg_sleep(10) || $$"), "SELECT  '$$ || pg_sleep(10) || $$' ", ""},
		{"E prefix cannot fuse", "SELECT E{{country}}", vals("x"), "SELECT E 'x' ", ""},
		{"no references", "SELECT '{{' || 1", nil, "SELECT '{{' || 1", ""},
		{"positional parameter is not a dollar quote", "SELECT $1, {{country}}", vals("x"), "SELECT $1,  'x' ", ""},
		{"identifier with dollar", "SELECT a$b$ FROM t WHERE c = {{country}}", vals("x"), "SELECT a$b$ FROM t WHERE c =  'x' ", ""},
		{"escape string with escaped quote", `SELECT E'it\'s', {{country}}`, vals("x"), `SELECT E'it\'s',  'x' `, ""},
		{"inside quotes", "SELECT * FROM t WHERE c = '{{country}}'", vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"inside E string after escaped quote", `SELECT E'\' {{country}}'`, vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"inside quoted identifier", `SELECT "{{country}}"`, vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"inside dollar quote", "SELECT $tag$ {{country}} $tag$", vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"inside line comment", "SELECT 1 -- {{country}}\n", vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"inside nested block comment", "SELECT /* a /* b */ {{country}} */ 1", vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"unterminated string", "SELECT 'abc {{country}}", vals("x"), "",
			"sql: variable {{country}} must not be inside quotes or a comment; write it bare, the value is quoted for you"},
		{"backslash in plain string with variables", `SELECT '\', {{country}} -- '`, vals("x"), "",
			"sql: a query with variables must not have backslashes in its string literals"},
		{"undeclared", "SELECT {{region}}", vals("x"), "", "sql: variable {{region}} is not declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderSQL(tc.sql, tc.vals)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidArgument || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("renderSQL error = %v, want invalid_argument %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("renderSQL = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRenderSQLHostileValues checks that no string value, however hostile,
// ends its literal early: re-scanning the rendered SQL must find exactly
// the literal where the reference was, with the value inside it.
func TestRenderSQLHostileValues(t *testing.T) {
	hostile := []string{
		"'", "''", "'''", "x'--", "x'/*", "*/'", "$$'$$", "$a$", "{{country}}", "E'", "\"", "';SELECT 1;'",
		"\n'\n", "‘unicode quotes’", "U&'\\0041'",
	}
	for _, v := range hostile {
		if _, msg := coerceVariable(VarString, v); msg != "" {
			continue // rejected values cannot be rendered at all
		}
		sql, err := renderSQL("SELECT {{country}} AS v", map[string]any{"country": v})
		if err != nil {
			t.Errorf("renderSQL(%q): %v", v, err)
			continue
		}
		// Everything between "SELECT " and " AS v" must be one string
		// literal whose content, with '' undoubled, is v.
		lit := strings.TrimSuffix(strings.TrimPrefix(sql, "SELECT "), " AS v")
		lit = strings.TrimSpace(lit)
		if end := quotedEnd(lit, 0, '\'', false); lit[0] != '\'' || end != len(lit) {
			t.Errorf("value %q escaped its literal: %s", v, sql)
			continue
		}
		if got := strings.ReplaceAll(lit[1:len(lit)-1], "''", "'"); got != v {
			t.Errorf("value %q rendered as %q", v, got)
		}
	}
}

func TestRenderArguments(t *testing.T) {
	vals := map[string]any{"days": json.Number("30"), "status": "open\" ,\"x\":\"y", "paid": true}
	for _, tc := range []struct {
		name, args, want, wantErr string
	}{
		{"typed and embedded", `{"days": "{{days}}", "q": "status is {{status}}", "nested": [{"p": "{{ paid }}"}]}`,
			`{"days":30,"nested":[{"p":true}],"q":"status is open\" ,\"x\":\"y"}`, ""},
		{"empty", ``, ``, ""},
		{"not an object", `[1]`, "", "arguments: must be a JSON object"},
		{"invalid JSON", `{"a":`, "", "arguments: must be a JSON object"},
		{"undeclared", `{"a": "{{nope}}"}`, "", "arguments: variable {{nope}} is not declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderArguments(json.RawMessage(tc.args), vals)
			if tc.wantErr != "" {
				if askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("renderArguments error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("renderArguments = %s, want %s", got, tc.want)
			}
		})
	}
}
