package redact

import (
	"regexp"
	"strings"
	"testing"
)

// session is a host's own credential, as a host product would register it.
var session = regexp.MustCompile(`askbi_session_[a-z2-7]{26}`)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"key askbi_abcdefghijkl_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstu ok", "key [redacted] ok"},
		{"export OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUv", "export OPENAI_API_KEY=[redacted]"},
		{"use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv here", "use [redacted] here"},
		{"Authorization: Bearer abc.def-ghi_jkl", "Authorization: [redacted]"},
		{"postgres://reader:s3cr3t@db:5432/wh", "postgres://reader:[redacted]@db:5432/wh"},
		{`{"password": "hunter22", "user": "bob"}`, `{"password": "[redacted]", "user": "bob"}`},
		{"token=abcd1234&x=1", "token=[redacted]&x=1"},
		{"AKIAABCDEFGHIJKLMNOP", "[redacted]"},
		{"token askbi_at_Qm9vbXNoYWthbGFrYWJvb20.c2lnbmF0dXJlc2lnbmF0dXJl ok", "token [redacted] ok"},
		{"askbi_rt_Qm9vbXNoYWthbGFrYWJvb20.c2lnbmF0dXJlc2lnbmF0dXJl", "[redacted]"},
		{"plain text with a password field mention", "plain text with a password field mention"},
		{"weekly signups rose 6%", "weekly signups rose 6%"},
		// Host patterns are the Redactor's, not the package's.
		{"cookie askbi_session_abcdefghijklmnopqrstuvwxyz", "cookie askbi_session_abcdefghijklmnopqrstuvwxyz"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
	if got := String("k: " + pem); strings.Contains(got, "MIIE") {
		t.Errorf("private key kept: %q", got)
	}
}

func TestRedactorString(t *testing.T) {
	const in = "cookie askbi_session_abcdefghijklmnopqrstuvwxyz and sk-proj-AbCdEfGhIjKlMnOpQrStUv"
	tests := []struct {
		name string
		r    *Redactor
		want string
	}{
		{"host pattern", New(nil, session), "cookie [redacted] and [redacted]"},
		{"no host pattern", New(), "cookie askbi_session_abcdefghijklmnopqrstuvwxyz and [redacted]"},
		{"nil", nil, "cookie askbi_session_abcdefghijklmnopqrstuvwxyz and [redacted]"},
		{"zero", &Redactor{}, "cookie askbi_session_abcdefghijklmnopqrstuvwxyz and [redacted]"},
		// Host patterns see the built-in masks, not the secrets under them.
		{"after built-ins", New(regexp.MustCompile(`sk-proj-\w+`)), "cookie askbi_session_abcdefghijklmnopqrstuvwxyz and [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.String(in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", in, got, tt.want)
			}
		})
	}
}

// FuzzNeed: a pattern's cheap test never skips a text its regexp
// matches, so skipping the regexp changes nothing.
func FuzzNeed(f *testing.F) {
	for _, s := range []string{
		"Authorization: BEARER abcdefgh12", "bEaReR\tabcdefghij", "sk-proj-AbCdEfGhIjKlMnOpQrStUv", "rk-AbCdEfGhIjKlMnOpQr",
		"ghp_abcdefghijklmnopqrstuvwxyz", "xoxb-1234567890ab", "AKIAABCDEFGHIJKLMNOP", "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
		"postgres://reader:s3cr3t@db", `"TOKEN" : "abcd1234"`, "Pa\u017F\u017Fword=hunter22", "api_\u212Aey=abcd1234",
		"-----BEGIN EC PRIVATE KEY-----\nx\n-----END EC PRIVATE KEY-----", "askbi_at_Qm9vbXNoYWthbGFrYWJvb20", "weekly signups",
	} {
		f.Add(s)
	}
	all := append([]pattern{privateKey, urlCreds, assignment}, tokens...)
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range all {
			if p.re.MatchString(s) && !p.need(s) {
				t.Errorf("%v matches %q, but its test skips it", p.re, s)
			}
		}
	})
}
