package dataexec_test

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/dataexec"
)

// checkRowsJSON requires AppendRowsJSON to write what json.Marshal writes,
// or fail as it fails, leaving dst's existing bytes as they were. It
// returns AppendRowsJSON's error.
func checkRowsJSON(t testing.TB, rows [][]any) error {
	t.Helper()
	want, wantErr := json.Marshal(rows)
	const prefix = "prefix:"
	got, err := dataexec.AppendRowsJSON([]byte(prefix), rows)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendRowsJSON(%#v) error %v, json.Marshal error %v", rows, err, wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("AppendRowsJSON(%#v) error %q, json.Marshal error %q", rows, err, wantErr)
		}
		want = nil
	}
	if diff := cmp.Diff(prefix+string(want), string(got)); diff != "" {
		t.Fatalf("AppendRowsJSON(%#v) mismatch with json.Marshal (-want +got):\n%s", rows, diff)
	}
	return err
}

func TestAppendRowsJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wantErr bool
		rows    [][]any
	}{
		{"nil rows", false, nil},
		{"no rows", false, [][]any{}},
		{"nil row", false, [][]any{nil, {}, {nil}}},
		{"ragged rows", false, [][]any{{int64(1)}, {int64(2), "b", true}, {}, {false, nil}}},
		{"short escapes", false, [][]any{{`"quote" \back\ ` + "\n\r\t\b\f"}}},
		{"control bytes", false, [][]any{{"\x00\x01\x07\x0b\x0e\x1f\x7f"}}},
		{"html", false, [][]any{{"<script>a && b</script>", "'single' `tick` /slash"}}},
		{"invalid utf-8", false, [][]any{{"a\xffb", "\xc3", "\xc3\x28", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80"}}},
		{"line and paragraph separators", false, [][]any{{"a\u2028b\u2029c", "\u2027\u202a"}}},
		{"emoji and other runes", false, [][]any{{"😀 naïve 中文 \u00a0 \ufffd \U0010ffff"}}},
		{"empty string", false, [][]any{{""}}},
		{"floats", false, [][]any{{
			0.0, math.Copysign(0, -1), 1e-7, 1e-6, 9.999999e-7, 1e20, 1e21, -1e21, 123456789.125,
			1.5e300, 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64, 0.1, 1e-10, 3.0,
		}}},
		{"NaN", true, [][]any{{"a", math.NaN()}}},
		{"+Inf", true, [][]any{{math.Inf(1)}}},
		{"-Inf", true, [][]any{{int64(1)}, {math.Inf(-1)}}},
		{"ints", false, [][]any{{int64(0), int64(-1), int64(math.MinInt64), int64(math.MaxInt64)}}},
		{"bools", false, [][]any{{true, false}}},
		{"numbers", false, [][]any{{
			json.Number(""), json.Number("0"), json.Number("-0"), json.Number("184.5"), json.Number("-12.5e+10"),
			json.Number("1E-3"), json.Number("1e5"), json.Number("18446744073709551615"), json.Number("0.000"),
		}}},
		{"number with a leading zero", true, [][]any{{json.Number("01")}}},
		{"number with a plus", true, [][]any{{json.Number("+1")}}},
		{"number with a dot and no digit", true, [][]any{{json.Number("1.")}}},
		{"number starting with a dot", true, [][]any{{json.Number(".5")}}},
		{"number with an empty exponent", true, [][]any{{json.Number("1e")}}},
		{"number with a signed empty exponent", true, [][]any{{json.Number("1e+")}}},
		{"number with a letter exponent", true, [][]any{{json.Number("1ex")}}},
		{"a lone minus", true, [][]any{{json.Number("-")}}},
		{"number with spaces", true, [][]any{{json.Number(" 1")}}},
		{"word as number", true, [][]any{{json.Number("NaN")}}},
		{"nested", false, [][]any{{
			map[string]any{"z": 1.0, "a": []any{"<b>", nil, 1e21}, "&": map[string]any{}},
			[]any{int64(1), "x\u2028", json.Number("2")},
			[]any(nil),
			map[string]any(nil),
		}}},
		{"nested NaN", true, [][]any{{[]any{math.NaN()}}}},
		{"other types", false, [][]any{{int(7), float32(0.1), uint64(math.MaxUint64), []byte("hi"), struct{ A string }{"<"}}}},
		{"unsupported type", true, [][]any{{make(chan int)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkRowsJSON(t, tc.rows); (err != nil) != tc.wantErr {
				t.Fatalf("AppendRowsJSON error %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}

func TestAppendRowsJSONErrors(t *testing.T) {
	_, err := dataexec.AppendRowsJSON(nil, [][]any{{math.Inf(1)}})
	var uerr *json.UnsupportedValueError
	if !errors.As(err, &uerr) || uerr.Str != "+Inf" {
		t.Fatalf("AppendRowsJSON(+Inf) error %#v, want a *json.UnsupportedValueError for +Inf", err)
	}
	if _, err := dataexec.AppendRowsJSON(nil, [][]any{{json.Number("1.")}}); err == nil {
		t.Fatal(`AppendRowsJSON(json.Number("1.")) succeeded, want an error`)
	}
}

// FuzzAppendRowsJSON is a differential test: for strings, floats and
// numbers from the fuzzer, AppendRowsJSON must write json.Marshal's bytes
// and fail where it fails.
//
//	go test -run '^$' -fuzz FuzzAppendRowsJSON -fuzztime 60s ./dataexec
func FuzzAppendRowsJSON(f *testing.F) {
	f.Add("name 123", []byte("DE"), 184.5, int64(42), "184.5", true)
	f.Add("<a href=\"x\">&amp;</a>\n", []byte("\xff\xfe\u2028"), 1e21, int64(math.MinInt64), "", false)
	f.Add("\x00\x1f\\\u2029😀", []byte{0xed, 0xa0, 0x80}, 1e-7, int64(-1), "-0.5E+3", true)
	f.Add("", []byte(nil), math.Copysign(0, -1), int64(0), "01", false)
	f.Add("\t\b\f\r", []byte("é"), 123456789.125, int64(math.MaxInt64), "1e", true)
	f.Add("\u2028", []byte("\x7f"), 1e300, int64(1)<<62, "2E-", false)
	f.Fuzz(func(t *testing.T, s string, raw []byte, fl float64, i int64, num string, b bool) {
		// The int's bits as a float reach every exponent, NaNs and infinities.
		bits := math.Float64frombits(uint64(i))
		// Each cell alone first, so that one failing cell does not hide
		// another's bytes, then all in ragged rows.
		for _, cell := range []any{s, string(raw), fl, bits, i, json.Number(num), json.Number(strconv.FormatInt(i, 10) + num)} {
			_ = checkRowsJSON(t, [][]any{{cell}})
		}
		_ = checkRowsJSON(t, [][]any{{s, string(raw), fl, i, json.Number(num), b, nil}, {bits}, nil, {}})
	})
}

// BenchmarkAppendRowsJSON encodes a run_dataset result's 1,000 rows of
// six cells with json.Marshal (the baseline) and with AppendRowsJSON; the
// append case reports its time as a multiple of the baseline's (x-json).
//
//	go test -run '^$' -bench AppendRowsJSON -benchmem -count 3 ./dataexec
func BenchmarkAppendRowsJSON(b *testing.B) {
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{int64(i), "name " + strconv.Itoa(i), "DE", json.Number("184.5"), "2026-01-01T01:00:00Z", i%2 == 0}
	}
	var base float64 // json.Marshal's ns/op in this run
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(rows); err != nil {
				b.Fatal(err)
			}
		}
		base = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dataexec.AppendRowsJSON(nil, rows); err != nil {
				b.Fatal(err)
			}
		}
		if base > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/base, "x-json")
		}
	})
}
