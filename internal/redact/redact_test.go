package redact

import (
	"strings"
	"testing"
)

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
		{"plain text with a password field mention", "plain text with a password field mention"},
		{"weekly signups rose 6%", "weekly signups rose 6%"},
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
