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
