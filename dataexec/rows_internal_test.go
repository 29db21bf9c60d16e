package dataexec

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRowsJSON: the cache's encoding of rows is AppendRowsJSON's bytes,
// its heads are the JSON of the first rows, and it decodes to the very
// cells it was made from, whatever their kind.
func TestRowsJSON(t *testing.T) {
	rows := [][]any{
		{int64(0), int64(-1 << 63), 2.0, math.Copysign(0, -1), 1e21, 1e-7, 0.1, json.Number("2"), json.Number("-1.50e+3")},
		{nil, true, false, "", "plain", `quote " and \ back`, "<a & b>", "line\nbreak\ttab\u0001", "é 日本 \u2028\u2029 🙂"},
		{},
		{"one"},
		{int64(7), "2026-11-30", json.Number("18446744073709551615")},
	}
	enc, err := encodeRows(rows, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := AppendRowsJSON(nil, rows)
	if err != nil {
		t.Fatal(err)
	}
	if got := enc.appendTo(nil); string(got) != string(want) {
		t.Errorf("encoding = %s, want AppendRowsJSON's %s", got, want)
	}
	for n := 0; n <= len(rows)+1; n++ {
		t.Run(fmt.Sprintf("head %d", n), func(t *testing.T) {
			h := enc.head(n)
			head := rows[:min(n, len(rows))]
			want, _ := AppendRowsJSON(nil, head)
			if got := h.appendTo(nil); string(got) != string(want) {
				t.Errorf("head JSON = %s, want %s", got, want)
			}
			got, err := h.decode()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(head, got); diff != "" {
				t.Errorf("decoded rows mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// -0 keeps its sign, which cmp does not look at.
	got, _ := enc.decode()
	if f := got[0][3].(float64); !math.Signbit(f) {
		t.Errorf("-0 decoded as %v", f)
	}
	// Cells that are not a dataset's scalars are not encoded for the cache.
	for _, cell := range []any{map[string]any{"k": 1}, []any{1}, time.Now(), 3} {
		if _, err := encodeRows([][]any{{cell}}, 0); err == nil {
			t.Errorf("encodeRows(%T) succeeded, want an error", cell)
		}
	}
	if _, err := encodeRows([][]any{{math.NaN()}}, 0); err == nil {
		t.Error("encodeRows(NaN) succeeded, want an error")
	}
}

// TestResultRows: a result from the cache (JSON only) reads as the result
// it was made from: Rows, Head, AppendRowsJSON and its JSON.
func TestResultRows(t *testing.T) {
	rows := [][]any{{"a", int64(1)}, {"b", 2.5}, {"c", nil}}
	built := NewResult([]string{"k", "v"}, rows, Meta{})
	enc, err := encodeRows(rows, 0)
	if err != nil {
		t.Fatal(err)
	}
	cached := &Result{Columns: built.Columns, Meta: built.Meta, rows: &resultRows{json: enc}}
	for _, n := range []int{0, 2, 3, 9} {
		for name, res := range map[string]*Result{"built": built, "cached": cached} {
			h := res.Head(n)
			want := rows[:min(n, 3)]
			if diff := cmp.Diff(want, h.Rows()); diff != "" || h.RowCount != len(want) {
				t.Errorf("%s Head(%d): RowCount %d, rows mismatch (-want +got):\n%s", name, n, h.RowCount, diff)
			}
			js, _ := h.AppendRowsJSON(nil)
			wantJS, _ := json.Marshal(want)
			if string(js) != string(wantJS) {
				t.Errorf("%s Head(%d).AppendRowsJSON = %s, want %s", name, n, js, wantJS)
			}
		}
	}
	a, _ := json.Marshal(built)
	b, _ := json.Marshal(cached)
	if string(a) != string(b) || !json.Valid(a) {
		t.Errorf("json.Marshal: built %s, cached %s; want the same JSON", a, b)
	}
	// The JSON of a cached result (what an MCP answer writes) is copied,
	// never decoded and encoded again.
	if cached.rows.decoded != nil {
		t.Error("Head, AppendRowsJSON or MarshalJSON decoded the cached rows")
	}
	if diff := cmp.Diff(rows, cached.Rows()); diff != "" {
		t.Errorf("cached Rows mismatch (-want +got):\n%s", diff)
	}
	if got := (&Result{}).Rows(); got == nil || len(got) != 0 {
		t.Errorf("the zero Result's Rows = %#v, want empty", got)
	}
}
