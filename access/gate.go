package access

import (
	"context"

	"github.com/askbi/askbi"
)

// Gate is the one check every request passes once: live membership, then
// the per-principal rate limit. Adapters (the chat API, the MCP server)
// call Begin at the start of each request and pass the live principal
// down; everything below them (the data executor, the assistant's tools,
// memory) decides with Allow on that principal and never charges the
// limit again. It is safe for concurrent use.
type Gate struct {
	checker *Checker
	limiter RateLimiter
}

// NewGate returns a gate reading membership through checker and spending
// budgets of limiter. A nil limiter means NewMemoryRateLimiter(nil):
// [DefaultBurst] (120) requests at once, then [DefaultRate] (10) per second,
// per principal.
func NewGate(checker *Checker, limiter RateLimiter) *Gate {
	if limiter == nil {
		limiter = NewMemoryRateLimiter(nil)
	}
	return &Gate{checker: checker, limiter: limiter}
}

// Begin starts one request for p and returns its live principal (see
// [Checker.Live]), after spending one unit of p's rate budget ([RateKey]). A
// principal that is already live passes through unchanged and uncharged,
// so a nested call inside a request costs nothing; a live principal is
// meant for the request it was made for, and must not be kept longer.
//
// Errors: Unauthenticated, Forbidden (not a member), RateLimited, and the
// limiter's and Directory's own (Unavailable, Internal).
func (g *Gate) Begin(ctx context.Context, p Principal) (_ Principal, err error) {
	defer askbi.Wrap(&err, "access.Gate.Begin")
	if p.live {
		return p, nil
	}
	live, err := g.checker.Live(ctx, p)
	if err != nil {
		return Principal{}, err
	}
	if err := g.limiter.Allow(ctx, RateKey(live)); err != nil {
		return Principal{}, err
	}
	return live, nil
}

// RateKey names a principal's rate budget: its credential for tokens (an
// API key or OAuth grant), its user in its team for sessions.
func RateKey(p Principal) string {
	if p.CredentialID != "" {
		return string(p.Auth) + ":" + p.CredentialID
	}
	return "session:" + p.TeamID + "/" + p.UserID
}

// Team returns the entity standing for team teamID as a whole, for
// team-wide rights ([RightManageConnections], [RightUseAssistant], ...).
func Team(teamID string) Entity {
	return Entity{Type: TypeTeam, ID: teamID, TeamID: teamID}
}
