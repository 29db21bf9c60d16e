// Package access decides who may do what in askbi, for the chat assistant
// and the MCP server alike.
//
// A Principal is a user in one team, authenticated by a product session,
// an API key or an OAuth token; token principals carry the credential's
// scopes and project set. Every request passes one Gate once: Begin reads
// the member's live role and project grants from the host's Directory (so
// a removed or downgraded member loses access at once) and spends one unit
// of the principal's rate budget, and returns the live principal that
// every decision of the request uses. Decisions are one function, Allow,
// over a table of rights (read, refresh, preview a chart, explore, save a
// dataset, edit a dashboard, manage connections, approve tools, use the
// assistant, manage memory): reach first (an entity out of reach is
// NotFound, so existence is never revealed), then scope, then role. A host
// may withdraw a right from a role (CheckerOptions.Withdraw).
//
// The package also holds API keys (Keys, stored as a SHA-256 with a public
// prefix; [KeyStore] proven by accesstest), and the one audit vocabulary and
// recorder ([AuditEntry], [AuditSink], Auditor) every package writes through.
//
// # Quick start
//
//	dir := access.NewMemoryDirectory() // or the host's own Directory
//	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
//	gate := access.NewGate(access.NewChecker(dir, nil), nil)
//	live, err := gate.Begin(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
//	err = access.Allow(live, access.RightRead, dashboard.Ref())
package access
