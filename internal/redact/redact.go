// Package redact removes secrets from text before it is logged, saved,
// shown to a client or sent to a model.
//
// String redacts a whole text; a Stream redacts text that arrives in pieces,
// such as a model's reply streamed as deltas, so that a secret split across
// pieces is masked as if the text had arrived at once. New adds a host
// product's own credential patterns to the built-in ones.
package redact

import "regexp"

// Mask replaces every redacted secret.
const Mask = "[redacted]"

// tokens are the secrets masked whole, in order, before privateKey.
var tokens = []*regexp.Regexp{
	// askbi API keys, and the MCP server's OAuth codes and tokens.
	regexp.MustCompile(`askbi_[a-z2-7]{12}_[a-z2-7]{20,}`),
	regexp.MustCompile(`askbi_(?:at|rt|ac)_[A-Za-z0-9_\-]{16,}(?:\.[A-Za-z0-9_\-]{16,})?`),
	// Provider keys: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), GitHub, Slack, AWS.
	regexp.MustCompile(`\b(?:sk|rk)-[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	// Bearer tokens and JWTs.
	regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
}

// Names whose value assignment masks; shared with heldTail.
const secretNames = `(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|token)`

var (
	// Private key blocks.
	privateKey = regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)
	// user:password@ in URLs keeps the user and the host.
	urlCreds = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/?#@\s]+:)[^@/?#\s]+@`)
	// password=..., api_key: ..., "token": "..." keep the name.
	assignment = regexp.MustCompile(`(?i)(` + secretNames + `"?\s*[:=]\s*"?)[^\s"',;&]{4,}`)
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
	s = privateKey.ReplaceAllString(s, Mask)
	s = urlCreds.ReplaceAllString(s, "${1}"+Mask+"@")
	s = assignment.ReplaceAllString(s, "${1}"+Mask)
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
		s = p.ReplaceAllString(s, Mask)
	}
	return s
}
