package sqlcell

import (
	"encoding/json"
	"testing"
	"time"
)

// TestStringSize: the estimate is the length encoding/json writes.
func TestStringSize(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r", "<a & b>", "\x01\x1f",
		"Grüße", "\u2028\u2029", "bad \xff byte", "emoji 🙂"} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := StringSize(s); got != int64(len(b)) {
			t.Errorf("StringSize(%q) = %d, want %d", s, got, len(b))
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Duration(15 * time.Second), "15s"},
		{Duration(1500 * time.Millisecond), "1.5s"},
		{Bytes(1 << 20), "1 MiB"},
		{Bytes(512 << 10), "512 KiB"},
		{Bytes(300), "300 bytes"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestQuotedEnd: a doubled quote stays inside, a backslash escapes only
// with escapes, and an unclosed region runs to the end.
func TestQuotedEnd(t *testing.T) {
	for _, tc := range []struct {
		s       string
		escapes bool
		want    int
	}{
		{`'a' x`, false, 3},
		{`'it''s' x`, false, 7},
		{`'a\' x`, false, 4},
		{`'a\' x'`, true, 7},
		{`"a""b" x`, false, 6},
		{"`a` x", false, 3},
		{`'never`, false, 6},
		{`'ends\`, true, 6},
	} {
		if got := QuotedEnd(tc.s, 0, tc.escapes); got != tc.want {
			t.Errorf("QuotedEnd(%q, escapes %v) = %d, want %d", tc.s, tc.escapes, got, tc.want)
		}
	}
	for s, want := range map[string]int{"-- a\nSELECT": 5, "-- a": 4} {
		if got := LineEnd(s, 0); got != want {
			t.Errorf("LineEnd(%q) = %d, want %d", s, got, want)
		}
	}
}
