package dataexec

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/workspace"
)

func TestMapTable(t *testing.T) {
	nested := &Table{
		Columns: []string{"page", "stats", "raw"},
		Rows: [][]any{
			{"/home", []any{json.Number("120"), map[string]any{"bounce": 0.5}}, `{"visitors": [3, 0]}`},
			{"/pricing", []any{int64(0), map[string]any{"bounce": nil}}, `{"visitors": [7, 1]}`},
		},
	}
	for _, tc := range []struct {
		name     string
		table    *Table
		fields   workspace.Fields
		nested   bool
		wantCols []string
		wantRows [][]any
		wantErr  string // InvalidResult message
	}{
		{
			name:     "column by name and column_N, array index, object key",
			table:    nested,
			fields:   workspace.Fields{{Name: "page", Path: []string{"column_0"}}, {Name: "visitors", Path: []string{"stats", "0"}}, {Name: "bounce", Path: []string{"column_1", "1", "bounce"}}},
			wantCols: []string{"page", "visitors", "bounce"},
			wantRows: [][]any{{"/home", json.Number("120"), 0.5}, {"/pricing", int64(0), nil}},
		},
		{
			name:     "JSON text cell is decoded",
			table:    nested,
			fields:   workspace.Fields{{Name: "v", Path: []string{"raw", "visitors", "1"}}},
			wantCols: []string{"v"},
			wantRows: [][]any{{json.Number("0")}, {json.Number("1")}},
		},
		{
			name:    "missing array index",
			table:   nested,
			fields:  workspace.Fields{{Name: "visitors", Path: []string{"column_1", "5"}}},
			wantErr: "field visitors: path column_1.5 not found in row 1",
		},
		{
			name:    "missing column",
			table:   nested,
			fields:  workspace.Fields{{Name: "visitors", Path: []string{"column_7"}}},
			wantErr: "field visitors: path column_7 not found; the result has no column column_7",
		},
		{
			name:    "missing key in a later row",
			table:   &Table{Columns: []string{"a"}, Rows: [][]any{{map[string]any{"x": int64(1)}}, {map[string]any{"y": int64(2)}}}},
			fields:  workspace.Fields{{Name: "x", Path: []string{"a", "x"}}},
			wantErr: "field x: path a.x not found in row 2",
		},
		{
			name:    "object cell",
			table:   nested,
			fields:  workspace.Fields{{Name: "s", Path: []string{"stats", "1"}}},
			wantErr: "field s: path stats.1 selects an object in row 1; extend the path to a value inside it",
		},
		{
			name:    "array cell",
			table:   nested,
			fields:  workspace.Fields{{Name: "s", Path: []string{"stats"}}},
			wantErr: "field s: path stats selects an array in row 1; extend the path with an index",
		},
		{
			name:    "path into a scalar",
			table:   nested,
			fields:  workspace.Fields{{Name: "p", Path: []string{"page", "0"}}},
			wantErr: "field p: path page.0 not found in row 1",
		},
		{
			name:     "zero, null and false are kept",
			table:    &Table{Columns: []string{"n", "z", "b", "s"}, Rows: [][]any{{nil, int64(0), false, ""}, {nil, 0.0, false, "0"}}},
			wantCols: []string{"n", "z", "b", "s"},
			wantRows: [][]any{{nil, int64(0), false, ""}, {nil, 0.0, false, "0"}},
		},
		{
			name: "normalized cells",
			table: &Table{Columns: []string{"d", "ts", "nan", "inf", "i", "u"}, Rows: [][]any{{
				time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 8, 12, 0, 0, time.FixedZone("x", 3600)),
				math.NaN(), math.Inf(-1), int32(4), uint64(math.MaxUint64),
			}}},
			wantCols: []string{"d", "ts", "nan", "inf", "i", "u"},
			wantRows: [][]any{{"2026-11-30", "2026-11-30T07:12:00Z", "NaN", "-Infinity", int64(4), json.Number("18446744073709551615")}},
		},
		{
			name:    "no fields: object cell rejected",
			table:   nested,
			wantErr: "column stats holds objects or arrays; add output fields that select values inside it",
		},
		{
			name:     "no fields, exploration: object cells pass",
			table:    &Table{Columns: []string{"a"}, Rows: [][]any{{map[string]any{"k": int64(1)}}}},
			nested:   true,
			wantCols: []string{"a"},
			wantRows: [][]any{{map[string]any{"k": int64(1)}}},
		},
		{
			name:    "unsupported type",
			table:   &Table{Columns: []string{"a"}, Rows: [][]any{{struct{}{}}}},
			wantErr: "column a holds a value of an unsupported type",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cols, rows, err := mapTable(tc.table, tc.fields, tc.nested)
			if tc.wantErr != "" {
				if askbi.ErrorCode(err) != askbi.InvalidResult || askbi.ErrorMessage(err) != tc.wantErr {
					t.Fatalf("mapTable error = %v, want invalid_result %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("mapTable: %v", err)
			}
			if diff := cmp.Diff(tc.wantCols, cols); diff != "" {
				t.Errorf("columns mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRows, rows); diff != "" {
				t.Errorf("rows mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateFields(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields workspace.Fields
		want   string
	}{
		{"ok", workspace.Fields{{Name: "a", Path: []string{"column_0"}}, {Name: "b", Path: []string{"x", "0"}}}, ""},
		{"empty name", workspace.Fields{{Name: "", Path: []string{"a"}}}, "fields: a field name must be 1 to 128 printable characters"},
		{"control character", workspace.Fields{{Name: "a\nb", Path: []string{"a"}}}, "fields: a field name must be 1 to 128 printable characters"},
		{"duplicate", workspace.Fields{{Name: "a", Path: []string{"x"}}, {Name: "a", Path: []string{"y"}}}, "fields: field a appears twice"},
		{"empty path", workspace.Fields{{Name: "a", Path: nil}}, "fields: field a: the path must have 1 to 16 elements"},
		{"empty element", workspace.Fields{{Name: "a", Path: []string{"x", ""}}}, "fields: field a: each path element must be 1 to 128 printable characters"},
		{"too deep", workspace.Fields{{Name: "a", Path: strings.Split(strings.Repeat("x.", 17), ".")[:17]}}, "fields: field a: the path must have 1 to 16 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateFields(tc.fields)
			if got := askbi.ErrorMessage(err); got != tc.want || (err != nil && askbi.ErrorCode(err) != askbi.InvalidArgument) {
				t.Errorf("validateFields = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFieldsJSON(t *testing.T) {
	in := `{"visitors": ["column_1", 0], "page": ["column_0"], "a": ["x", "y"]}`
	var fs workspace.Fields
	if err := json.Unmarshal([]byte(in), &fs); err != nil {
		t.Fatal(err)
	}
	want := workspace.Fields{{Name: "visitors", Path: []string{"column_1", "0"}}, {Name: "page", Path: []string{"column_0"}}, {Name: "a", Path: []string{"x", "y"}}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("Unmarshal mismatch (-want +got):\n%s", diff)
	}
	out, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"visitors":["column_1","0"],"page":["column_0"],"a":["x","y"]}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	var null workspace.Fields
	if err := json.Unmarshal([]byte(`null`), &null); err != nil || null != nil {
		t.Errorf("Unmarshal(null) = %v, %v; want nil, nil", null, err)
	}
	for _, bad := range []string{`[]`, `{"a": "x"}`, `{"a": [1.5]}`, `{"a": [true]}`, `{"a": ["x"], "a": ["y"]}`} {
		if err := json.Unmarshal([]byte(bad), &fs); err == nil {
			t.Errorf("Unmarshal(%s) succeeded, want an error", bad)
		}
	}
}

func TestStringSize(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te`, "back\\slash", "new\nline", "<b>&</b>", "\x01ctl", "ünï"} {
		b, _ := json.Marshal(s)
		if got := stringSize(s); got != int64(len(b)) {
			t.Errorf("stringSize(%q) = %d, want %d", s, got, len(b))
		}
	}
}
