// Package redact removes secrets from text before it is logged, saved,
// shown to a client or sent to a model.
package redact

import "regexp"

// Mask replaces every redacted secret.
const Mask = "[redacted]"

var patterns = []*regexp.Regexp{
	// askbi API keys.
	regexp.MustCompile(`askbi_[a-z2-7]{12}_[a-z2-7]{20,}`),
	// Provider keys: OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), GitHub, Slack, AWS.
	regexp.MustCompile(`\b(?:sk|rk)-[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	// Bearer tokens and JWTs.
	regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{8,}=*`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
	// Private key blocks.
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`),
}

var (
	// user:password@ in URLs keeps the user and the host.
	urlCreds = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/?#@\s]+:)[^@/?#\s]+@`)
	// password=..., api_key: ..., "token": "..." keep the name.
	assignment = regexp.MustCompile(`(?i)((?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|token)"?\s*[:=]\s*"?)[^\s"',;&]{4,}`)
)

// String returns s with secrets replaced by Mask.
func String(s string) string {
	for _, p := range patterns {
		s = p.ReplaceAllString(s, Mask)
	}
	s = urlCreds.ReplaceAllString(s, "${1}"+Mask+"@")
	return assignment.ReplaceAllString(s, "${1}"+Mask)
}
