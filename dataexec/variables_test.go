package dataexec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

var testDecl = []workspace.Variable{
	{Name: "country", Type: workspace.VarString, Default: "US"},
	{Name: "n", Type: workspace.VarNumber, Default: json.Number("10")},
	{Name: "since", Type: workspace.VarDate, Default: "2026-01-01"},
	{Name: "paid", Type: workspace.VarBoolean, Default: false},
}

func TestResolveVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decl    []workspace.Variable
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
		{"number then statement", testDecl, map[string]any{"n": "1; DROP"}, nil, "variables: n must be a number"},
		{"hex number", testDecl, map[string]any{"n": "0x10"}, nil, "variables: n must be a number"},
		{"infinite number", testDecl, map[string]any{"n": json.Number("1e400")}, nil, "variables: n must be a finite number"},
		{"bool for number", testDecl, map[string]any{"n": true}, nil, "variables: n must be a number"},
		{"number for string", testDecl, map[string]any{"country": 5.0}, nil, "variables: country must be a string"},
		{"backslash", testDecl, map[string]any{"country": `\'`}, nil, "variables: country must be valid text without backslashes"},
		{"NUL", testDecl, map[string]any{"country": "a\x00b"}, nil, "variables: country must be valid text without backslashes"},
		{"long string", testDecl, map[string]any{"country": strings.Repeat("x", 1001)}, nil, "variables: country must be at most 1000 characters"},
		{"bad date", testDecl, map[string]any{"since": "2026-02-30"}, nil, "variables: since must be a date (YYYY-MM-DD)"},
		{"month and day out of range", testDecl, map[string]any{"since": "2026-13-40"}, nil, "variables: since must be a date (YYYY-MM-DD)"},
		{"date with time", testDecl, map[string]any{"since": "2026-02-01T00:00:00Z"}, nil, "variables: since must be a date (YYYY-MM-DD)"},
		{"bad boolean", testDecl, map[string]any{"paid": "yes"}, nil, "variables: paid must be true or false"},
		{"required", []workspace.Variable{{Name: "x", Type: workspace.VarString}}, nil, nil, "variables: x is required; it has no default"},
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
		decl []workspace.Variable
		want string
	}{
		{"ok", testDecl, ""},
		{"bad name", []workspace.Variable{{Name: "a-b", Type: workspace.VarString}}, "variables: a name must be a letter or underscore and up to 63 letters, digits or underscores"},
		{"duplicate", []workspace.Variable{{Name: "a", Type: workspace.VarString}, {Name: "a", Type: workspace.VarNumber}}, "variables: a appears twice"},
		{"bad type", []workspace.Variable{{Name: "a", Type: "json"}}, "variables: a: type must be number, string, date or boolean"},
		{"bad default", []workspace.Variable{{Name: "a", Type: workspace.VarDate, Default: "tomorrow"}}, "variables: a: default must be a date (YYYY-MM-DD)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := askbi.ErrorMessage(validateDeclarations(tc.decl)); got != tc.want {
				t.Errorf("validateDeclarations = %q, want %q", got, tc.want)
			}
		})
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
