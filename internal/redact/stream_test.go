package redact

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	askbiKey = "askbi_abcdefghijkl_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrstuvwxyz"
	pemBlock = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nb3BlbnNzaC1rZXk\n-----END RSA PRIVATE KEY-----"
)

// streamCases are secrets in sentences; secret is the part that must never
// be emitted ("" when nothing is masked).
var streamCases = []struct{ name, in, secret string }{
	{"openai", "export OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUv and run", "AbCdEfGhIjKlMnOpQrStUv"},
	{"anthropic", "use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv here", "api03-AbCdEfGhIjKlMnOpQrStUv"},
	{"postgres", "connect to postgres://reader:s3cr3t@db:5432/wh now", "s3cr3t"},
	{"bearer", "send Authorization: Bearer abc.def-ghi_jkl with it", "abc.def-ghi_jkl"},
	{"json password", `body {"password": "hunter22", "user": "bob"} sent`, "hunter22"},
	{"query token", "open /cb?token=abcd1234&x=1 now", "abcd1234"},
	{"askbi key", "key " + askbiKey + " ok", askbiKey[19:]},
	{"private key", "here:\n" + pemBlock + "\ndone", "MIIEpAIBAAKCAQEA"},
	{"aws", "aws AKIAABCDEFGHIJKLMNOP key", "AKIAABCDEFGHIJKLMNOP"},
	{"host session", "cookie askbi_session_abcdefghijklmnopqrstuvwxyz done", "abcdefghijklmnopqrstuvwxyz"},
	// Secrets that span whitespace, and edges of the patterns.
	{"secret last", "key sk-proj-AbCdEfGhIjKlMnOpQrStUv", "AbCdEfGhIjKlMnOpQrStUv"},
	{"password spaced", "the password : hunter22 ok", "hunter22"},
	{"api_key newline", "api_key =\n  abcd1234 ok", "abcd1234"},
	{"bearer newline", "x bearer\n\tabcdefghijkl ok", "abcdefghijkl"},
	{"bearer in assignment", "token: Bearer abcdefghijkl ok", "abcdefghijkl"},
	{"short bearer", "Bearer abc def", ""},
	{"short password", "password: abc def", ""},
	{"jwt", "jwt eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK ok", "SflKxwRJSMeK"},
	{"certificate then key", "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n" + pemBlock + " x", "MIIEpAIBAAKCAQEA"},
	{"two keys", pemBlock + "\nmid\n" + pemBlock + "\nend", "MIIEpAIBAAKCAQEA"},
	// A token swallows the first END line, so the block runs to the second.
	{"swallowed end", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nsk-AAAAAAAAAAAAAAAA-----END RSA PRIVATE KEY----- more\n-----END RSA PRIVATE KEY-----\nok", "MIIEpAIBAAKCAQEA"},
	{"names in a row", "token token: password: password: secret=" + strings.Repeat("password: ", 12) + "end", ""},
	{"bearers in a row", strings.Repeat("Bearer ", 12) + "abcdefghijkl", ""},
	{"begin, not a key", "-----BEGIN RSA \nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY----- x", ""},
	{"plain", "weekly signups rose 6% in May,\nsee the dashboard.", ""},
}

// splits returns the ways the tests cut in into chunks: at every offset in
// two, and into chunks of 1, 2 and 3 bytes.
func splits(in string) map[string][]string {
	m := map[string][]string{}
	for i := range len(in) + 1 {
		m[fmt.Sprintf("at %d", i)] = []string{in[:i], in[i:]}
	}
	for n := 1; n <= 3; n++ {
		var chunks []string
		for i := 0; i < len(in); i += n {
			chunks = append(chunks, in[i:min(i+n, len(in))])
		}
		m[fmt.Sprintf("by %d", n)] = chunks
	}
	return m
}

// stream writes chunks to a Stream of r and returns what it emitted in all.
// It fails t if, after a Write, the text emitted so far is not a prefix of
// r.String of the whole input.
func stream(t *testing.T, r *Redactor, chunks []string) string {
	t.Helper()
	want := r.String(strings.Join(chunks, ""))
	var out strings.Builder
	s := r.Stream(func(p string) { out.WriteString(p) })
	for i, c := range chunks {
		s.Write(c)
		if !strings.HasPrefix(want, out.String()) {
			t.Fatalf("after chunk %d of %q: emitted %q, not a prefix of %q", i, chunks, out.String(), want)
		}
	}
	s.Flush()
	return out.String()
}

func TestStream(t *testing.T) {
	r := New(session)
	for _, tt := range streamCases {
		t.Run(tt.name, func(t *testing.T) {
			want := r.String(tt.in)
			if tt.secret != "" && (!strings.Contains(tt.in, tt.secret) || strings.Contains(want, tt.secret)) {
				t.Fatalf("bad case: String(%q) = %q, secret %q", tt.in, want, tt.secret)
			}
			for how, chunks := range splits(tt.in) {
				got := stream(t, r, chunks)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: stream mismatch (-String +Stream):\n%s", how, diff)
				}
				if tt.secret != "" && strings.Contains(got, tt.secret) {
					t.Errorf("%s: secret emitted: %q", how, got)
				}
			}
		})
	}
}

func TestStreamPlain(t *testing.T) {
	const in = "Weekly signups rose 6% to 1,204 in May;\nthe password field is empty,\tthe token table too. "
	for how, chunks := range splits(in) {
		if got := stream(t, New(session), chunks); got != in {
			t.Errorf("%s: Stream changed plain text to %q", how, got)
		}
	}
}

// TestStreamHeld checks what a Stream holds back until more text or Flush.
func TestStreamHeld(t *testing.T) {
	tests := []struct{ in, emitted string }{
		{"hello wor", "hello "},
		{"hello world ", "hello world "},
		{"no whitespace yet", "no whitespace "},
		{"Authorization: Bearer ", "Authorization: "},
		{"Authorization: Bearer abc", "Authorization: "},
		{"Bearer of news", "Bearer of "},
		{"the password hint", "the password "},
		{"x password: ", "x "},
		{`{"password": `, ""},
		{"the api_key\n", "the "},
		{"postgres://reader:", ""},
		{"key -----BEGIN RSA PRIVATE KEY-----\nMIIE\n", "key "},
		{"key -----BEGIN RSA ", "key "},
		{"key -----BEGIN RSA \nMIIE\n", "key -----BEGIN RSA \nMIIE\n"},
		{pemBlock + "\nnext ", "[redacted]\nnext "},
		{pemBlock + "\n" + pemBlock + "\nnext ", "[redacted]\n[redacted]\nnext "},
		{"-----BEGIN CERTIFICATE-----\nMIIC\n", "-----BEGIN CERTIFICATE-----\nMIIC\n"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			for how, chunks := range splits(tt.in) {
				var out []string
				var r *Redactor // the default
				s := r.Stream(func(p string) { out = append(out, p) })
				for _, c := range chunks {
					s.Write(c)
				}
				if got := strings.Join(out, ""); got != tt.emitted {
					t.Errorf("%s: emitted %q before Flush, want %q", how, got, tt.emitted)
				}
				s.Flush()
				if got, want := strings.Join(out, ""), String(tt.in); got != want {
					t.Errorf("%s: emitted %q after Flush, want %q", how, got, want)
				}
				if slices.Contains(out, "") {
					t.Errorf("%s: emitted an empty string: %q", how, out)
				}
			}
		})
	}
}

func TestStreamFlush(t *testing.T) {
	var out strings.Builder
	s := New().Stream(func(p string) { out.WriteString(p) })
	s.Write("Authorization: Bearer")
	s.Flush()
	if got, want := out.String(), "Authorization: Bearer"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
	// Flush ends the text: the token is a new text, not the Bearer's.
	s.Write(" abcdefghijkl ok")
	s.Flush()
	if got, want := out.String(), "Authorization: Bearer abcdefghijkl ok"; got != want {
		t.Errorf("after second Flush: %q, want %q", got, want)
	}
	s.Flush()
	if got, want := out.String(), "Authorization: Bearer abcdefghijkl ok"; got != want {
		t.Errorf("after empty Flush: %q, want %q", got, want)
	}
}

// words are pieces of the secrets and of what surrounds them.
var words = []string{
	" ", "  ", "\n", "\t", "\r\n", "x", "ok", ",", "&", "'", `"`, ":", "=", ": ", "=\n", "{", "}", "-",
	"Bearer", "bearer", "BEARER ", "password", "paſſword", "api_key", "Token", "secret",
	"abcdefghijkl", "abc", "hunter22", "abc.def-ghi_jkl", "s3cr3t",
	"sk-proj-AbCdEfGhIjKlMnOpQrStUv", "sk-AAAAAAAAAAAAAAAA", "AKIAABCDEFGHIJKLMNOP", "AKIA",
	"postgres://reader:s3cr3t@db:5432/wh", "https://", "u:p@h", "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK",
	askbiKey, "askbi_session_abcdefghijklmnopqrstuvwxyz", "askbi_",
	"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "-----BEGIN ", "-----END ",
	"RSA ", "PRIVATE KEY-----", "-----BEGIN CERTIFICATE-----", "MIIEpAIBAAKCAQEA", "[redacted]",
}

func TestStreamRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	r := New(session)
	n := 2000
	if testing.Short() {
		n = 300
	}
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(30) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		in := b.String()
		var chunks []string
		for i := 0; i < len(in); {
			k := min(i+1+rng.IntN(8), len(in))
			chunks = append(chunks, in[i:k])
			i = k
		}
		if got, want := stream(t, r, chunks), r.String(in); got != want {
			t.Fatalf("Stream of %q = %q, want %q", chunks, got, want)
		}
	}
}

func FuzzStream(f *testing.F) {
	for _, tt := range streamCases {
		f.Add(tt.in, []byte{1, 2, 3, 7})
	}
	r := New(session)
	f.Fuzz(func(t *testing.T, in string, sizes []byte) {
		var chunks []string
		for i, k := 0, 0; i < len(in); k++ {
			n := 1
			if len(sizes) > 0 {
				n = int(sizes[k%len(sizes)])%16 + 1
			}
			chunks = append(chunks, in[i:min(i+n, len(in))])
			i += n
		}
		if got, want := stream(t, r, chunks), r.String(in); got != want {
			t.Errorf("Stream of %q = %q, want %q", chunks, got, want)
		}
	})
}

// reply is about 4,000 characters of model text with a few secrets.
var reply = strings.Repeat("Weekly signups rose 6% to 1,204 in May; the orders table "+
	"(warehouse.public.orders) joins customers on customer_id.\n"+
	"Use `SELECT count(*) FROM orders WHERE created_at > now() - interval '7 days'` to check. ", 19) +
	"Connect with postgres://reader:s3cr3t@db:5432/wh and token: Bearer abc.def-ghi_jkl.\n" +
	"key sk-proj-AbCdEfGhIjKlMnOpQrStUv\n"

func BenchmarkStream(b *testing.B) {
	r := New(session)
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		s := r.Stream(func(string) {})
		for i := 0; i < len(reply); i += 3 {
			s.Write(reply[i:min(i+3, len(reply))])
		}
		s.Flush()
	}
}

func BenchmarkString(b *testing.B) {
	r := New(session)
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		r.String(reply)
	}
}
