package canonjson_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/internal/canonjson"
)

// TestAppendString: the one string writer in both modes. JCS keeps what
// JSON.stringify keeps (< > & U+2028 as is); the json.Marshal mode writes
// exactly encoding/json's bytes, HTML escapes and \ufffd included.
func TestAppendString(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", `" \ / `, "\b\f\n\r\t\x00\x01\x1f\x7f",
		"<a href=x>&amp;</a>", "grüße 😀", "line\u2028sep\u2029end",
		"bad \xff byte", "cut \xe2\x82", "\xed\xa0\x80 surrogate", "mixed <\xff>\u2028é\n",
	} {
		t.Run(s, func(t *testing.T) {
			want, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(canonjson.AppendMarshaledString([]byte("x"), s)[1:])); diff != "" {
				t.Errorf("AppendMarshaledString(%q) mismatch (-json.Marshal +got):\n%s", s, diff)
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"<a>&</a>", `"<a>&</a>"`},
		{"line\u2028sep\u2029", "\"line\u2028sep\u2029\""},
		{"\b\f\n\r\t\x00\x1f\x7f\"\\", `"\b\f\n\r\t\u0000\u001f` + "\x7f" + `\"\\"`},
		{"grüße 😀", `"grüße 😀"`},
	} {
		if diff := cmp.Diff(tc.want, string(canonjson.AppendString(nil, tc.in))); diff != "" {
			t.Errorf("AppendString(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}
