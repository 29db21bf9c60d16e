// Package redact removes secrets from text before it is logged, saved,
// shown to a client or sent to a model.
//
// String redacts a whole text; a Stream redacts text that arrives in pieces,
// such as a model's reply streamed as deltas, so that a secret split across
// pieces is masked as if the text had arrived at once. New adds a host
// product's own credential patterns to the built-in ones.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every redacted secret.
const Mask = "[redacted]"

// pattern is a secret's regexp and a cheap test that every match needs
// (a literal it contains): text without it skips the regexp, which is
// most text, and most of a turn's redaction cost.
type pattern struct {
	re   *regexp.Regexp
	need func(string) bool
}

func has(lit string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, lit) }
}

// replace masks p's matches in s by repl.
func (p pattern) replace(s, repl string) string {
	if !p.need(s) {
		return s
	}
	return p.re.ReplaceAllString(s, repl)
}

// tokens are the secrets masked whole, in order, before privateKey.
var tokens = []pattern{
	// askbi API keys, and the MCP server's OAuth codes and tokens.
	{regexp.MustCompile(`askbi_[a-z2-7]{12}_[a-z2-7]{20,}`), has("askbi_")},
	{regexp.MustCompile(`askbi_(?:at|rt|ac)_[A-Za-z0-9_\-]{16,}(?:\.[A-Za-z0-9_\-]{16,})?`), has("askbi_")},
	// Provider keys: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), GitHub, Slack, AWS.
	{regexp.MustCompile(`\b(?:sk|rk)-[A-Za-z0-9_\-]{16,}`), has("k-")},
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`), has("gh")},
	{regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9\-]{10,}`), has("xox")},
	{regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), has("AKIA")},
	// Bearer tokens and JWTs. "bearer" has no letter that folds outside
	// ASCII, so an ASCII case-insensitive search finds every match.
	{regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*`), hasFold("bearer")},
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), has("eyJ")},
}

// hasFold is has for a lower-case ASCII literal, in any case.
func hasFold(lit string) func(string) bool {
	return func(s string) bool { return containsFold(s, lit) }
}

func containsFold(s, lit string) bool {
	for i := 0; i+len(lit) <= len(s); i++ {
		if s[i]|0x20 == lit[0] && strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
	}
	return false
}

// namesAssigned is assignment's test: a : or =, and a part of every name
// of secretNames in any case. (?i) also folds two letters of those names
// outside ASCII (ſ for s, the Kelvin sign for k): with either in s, the
// regexp runs.
func namesAssigned(s string) bool {
	if !strings.ContainsAny(s, ":=") {
		return false
	}
	if strings.ContainsAny(s, "\u017f\u212a") {
		return true
	}
	for _, part := range []string{"pwd", "pass", "secret", "api", "token"} {
		if containsFold(s, part) {
			return true
		}
	}
	return false
}

// Names whose value assignment masks; shared with heldTail.
const secretNames = `(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|token)`

var (
	// Private key blocks.
	privateKey = pattern{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), has("-----BEGIN ")}
	// user:password@ in URLs keeps the user and the host.
	urlCreds = pattern{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/?#@\s]+:)[^@/?#\s]+@`), has("://")}
	// password=..., api_key: ..., "token": "..." keep the name.
	assignment = pattern{regexp.MustCompile(`(?i)(` + secretNames + `"?\s*[:=]\s*"?)[^\s"',;&]{4,}`), namesAssigned}
)

// Redactor masks the built-in secrets and those of a host product.
// The zero value and a nil *Redactor mask the built-in secrets only.
type Redactor struct {
	extra []*regexp.Regexp
}

// std is the Redactor behind the package-level String.
var std = New()

// New returns a Redactor that masks the built-in secrets and then every
// match of extra, in order; nil patterns are skipped.
//
// A host pattern must match at least one character and no whitespace
// (space, \t, \n, \f, \r), and must not use ^ or \A: a Stream redacts what
// lies before the last whitespace on its own, which is the same as
// redacting the whole text only for such patterns.
func New(extra ...*regexp.Regexp) *Redactor {
	r := &Redactor{}
	for _, p := range extra {
		if p != nil {
			r.extra = append(r.extra, p)
		}
	}
	return r
}

// String returns s with secrets replaced by Mask, using the built-in
// patterns only.
func String(s string) string { return std.String(s) }

// String returns s with secrets replaced by Mask.
func (r *Redactor) String(s string) string {
	s = maskTokens(s)
	s = privateKey.replace(s, Mask)
	s = urlCreds.replace(s, "${1}"+Mask+"@")
	s = assignment.replace(s, "${1}"+Mask)
	if r != nil {
		for _, p := range r.extra {
			s = p.ReplaceAllString(s, Mask)
		}
	}
	return s
}

// maskTokens applies the patterns that run before privateKey.
func maskTokens(s string) string {
	for _, p := range tokens {
		s = p.replace(s, Mask)
	}
	return s
}
