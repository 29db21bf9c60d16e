// Package signin signs a team's remote MCP connections in, and is the
// one holder of their secrets: it alone opens the sealed tokens (a
// bearer token, an OAuth grant) and it alone talks to authorization
// servers. Its [Service] gives the connections core and the remote tools
// the credential of a session ([Service.Credential], a
// connections.Credentials), and runs the OAuth sign-in, on the go-sdk's
// client auth support (oauthex; the sessions use its OAuthHandler) and
// every request through the outbound policy:
//
//	sign := signin.New(conns, keyring, &signin.Options{RedirectURL: connhttp.RedirectURL(publicURL, "/ai/connections"),
//		Flows: db.Flows, Leases: db.Leases}) // several instances: one refresh at a time across them
//	c, start, err := sign.Connect(ctx, admin, connections.Input{Name: "PostHog", URL: url, Provider: "PostHog"}, conversationID)
//	// the browser goes to start.AuthorizationURL, keeping start.Binding (a cookie); the provider redirects back:
//	res, err := sign.CompleteOAuth(ctx, signin.OAuthCallback{State: state, Code: code, Iss: iss, Binding: binding})
//
// What it guarantees:
//
//   - Save and connect ([Service.Connect]) saves the inactive connection
//     and [Service.StartOAuth] begins the sign-in (protected resource and
//     authorization server discovery, registration, S256 PKCE, the
//     resource indicator) with a sealed, expiring state that carries the
//     conversation, user and team.
//
//   - [Service.CompleteOAuth] checks the state, its browser Binding,
//     single use ([FlowStore]) and iss, trades the code, lists the
//     server's tools with the new token and only then saves the sealed
//     tokens and activates the connection. A failure that may pass uses
//     nothing up: the same callback can be tried again.
//
//   - Tokens are sealed at rest and refreshed with rotation, one refresh
//     of a connection at a time: a lock in the process and, with
//     Options.Leases, a lease every instance sharing the store takes. The
//     token request runs outside any transaction; only the write of the
//     rotated tokens holds the connection's lock. An instance that finds
//     another refreshing uses its tokens once they are saved, so no
//     refresh token is spent twice (a provider that rotates them revokes
//     the grant on a replay). A refused refresh marks the connection as
//     needing sign-in (repair open_connection); one that may pass keeps
//     the tokens for the next try.
//
//   - A step-up challenge (403 insufficient_scope) records the scopes the
//     server asks for, for the next sign-in: never granted silently.
//
// Package signintest proves a [FlowStore], and that instances sharing a
// connection store and leases refresh once.
package signin
