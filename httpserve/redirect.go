package httpserve

import (
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LocalPath returns the path on this server that raw names, for a
// redirect after a sign-in to the page that sent the browser there (a
// return address from a query or a form), and true; or "", false when
// raw names anything else, and the caller sends the browser somewhere
// fixed instead. publicURL is the server's public base URL (scheme and
// host): raw may be an absolute URL on it, or a path with one leading
// slash. The answer is built anew from raw's parsed and cleaned path
// (dot segments and repeated slashes removed) with its query and
// fragment, so it always starts with exactly one slash and never leaves
// the server. Refused: other hosts and schemes ("//evil", "https:evil",
// "http://host@evil"), relative paths, backslashes ("/\evil") and
// control characters ("/\t/evil", which browsers read as "//evil"), as
// sent or percent-encoded ("/%5Cevil", "/%09/evil", "/%0d%0a"), Unicode
// format characters and line separators, and anything outside printable
// ASCII as sent (a browser percent-encodes a URL it sends).
//
// The MCP authorization server sends browsers to the host's sign-in
// with such a return address (mcpserver/oauth's Users.SignInURL): a
// host's sign-in page checks it with LocalPath before redirecting.
func LocalPath(raw, publicURL string) (string, bool) {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "", false
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	if u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		base, err := url.Parse(publicURL)
		if err != nil || u.Scheme != base.Scheme || !strings.EqualFold(u.Host, base.Host) || u.User != nil || u.Opaque != "" {
			return "", false
		}
	}
	if !strings.HasPrefix(u.Path, "/") || !safe(u.Path) || !safe(u.Fragment) {
		return "", false
	}
	clean := path.Clean(u.Path)
	if strings.HasSuffix(u.Path, "/") && clean != "/" {
		clean += "/"
	}
	out := (&url.URL{Path: clean, RawQuery: u.RawQuery, Fragment: u.Fragment}).String()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return "", false
	}
	return out, true
}

// safe reports whether s, decoded, holds no backslash, control or format
// character, line or paragraph separator, or invalid UTF-8.
func safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\\' || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			return false
		}
	}
	return true
}
