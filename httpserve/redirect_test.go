package httpserve_test

import (
	"testing"

	"github.com/askbi/askbi/httpserve"
)

// TestLocalPath: a return address is kept only as a path on this server,
// rebuilt from its cleaned path; every way of naming another host that
// a browser would follow is refused, as sent or percent-encoded.
func TestLocalPath(t *testing.T) {
	const base = "http://127.0.0.1:8080"
	for _, tc := range []struct {
		raw, want string // want "" for a refusal
	}{
		{"/", "/"},
		{"/previews/chart_1", "/previews/chart_1"},
		{"/charts/x?a=1&b=%2F%2Fevil#/connections/c", "/charts/x?a=1&b=%2F%2Fevil#/connections/c"},
		{"/account/mcp/", "/account/mcp/"},
		{base + "/oauth/authorize?client_id=c&state=s", "/oauth/authorize?client_id=c&state=s"},
		{"HTTP://127.0.0.1:8080/x", "/x"},
		{"/a/../b/./c", "/b/c"},
		{"/a//b", "/a/b"},
		{"/%2F%2Fevil", "/evil"}, // the decoded path "///evil", cleaned
		{"/..//evil", "/evil"},   // never "//evil"
		{base + "//evil.test", "/evil.test"},
		{"/caf%C3%A9", "/caf%C3%A9"},

		// The issue's: a tab browsers drop, leaving //evil.test/x.
		{"/\t/evil.test/x", ""},
		{"/%09/evil.test/x", ""},
		// Other hosts and schemes.
		{"//evil", ""},
		{"///evil", "/evil"},
		{"https://evil.test/x", ""},
		{"https:evil", ""},
		{"https:/evil", ""},
		{"javascript:alert(1)", ""},
		{"http://127.0.0.1:8080@evil.test/", ""},
		{"http://127.0.0.1:8080.evil.test/", ""},
		{"http://127.0.0.1:8081/x", ""},
		{"https://127.0.0.1:8080/x", ""},
		{"http://user@127.0.0.1:8080/x", ""},
		// Backslashes, which browsers read as slashes.
		{"/\\evil", ""},
		{"\\\\evil", ""},
		{"/%5Cevil", ""},
		{"/%5cevil", ""},
		{"/a/%5C/evil", ""},
		// Control characters, as sent and encoded: CR, LF, NUL, DEL.
		{"/x\r\nSet-Cookie: a=b", ""},
		{"/x%0d%0aSet-Cookie:%20a=b", ""},
		{"/x%00", ""},
		{"/\x00", ""},
		{"/%7F", ""},
		{"/x#%0a", ""},
		// Unicode: line and paragraph separators, NEL, bidi and zero-width
		// format characters, as sent or encoded; invalid UTF-8.
		{"/\u2028/evil", ""},
		{"/%E2%80%A8/evil", ""},
		{"/%E2%80%A9", ""},
		{"/%C2%85", ""},
		{"/%E2%80%AE", ""},
		{"/%E2%80%8B", ""},
		{"/%FF", ""},
		{"/café", ""},
		// Relative, empty, spaces.
		{"", ""},
		{"evil.test/x", ""},
		{"./x", ""},
		{" /x", ""},
		{"/x y", ""},
	} {
		got, ok := httpserve.LocalPath(tc.raw, base)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", tc.raw, got, ok, tc.want)
		}
	}
}
