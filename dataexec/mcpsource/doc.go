// Package mcpsource connects a team to remote MCP servers (Streamable
// HTTP, on the go-sdk client) and lets Ask and datasets use the tools an
// admin approved, without trusting anything the server says: its tool
// descriptions, annotations and data are untrusted.
//
//	svc := mcpsource.NewService(mcpsource.NewMemoryStore(), keyring, gate, &mcpsource.Options{Catalog: catalog})
//	conn, err := svc.Create(ctx, admin, mcpsource.Input{Name: "Analytics", URL: "https://mcp.example.com/mcp", Token: token})
//	conn, err = svc.Discover(ctx, admin, conn.ID, nil)     // list the tools, within bounds
//	_, err = svc.SetAccess(ctx, admin, conn.ID, "top_pages", true)
//	exec := dataexec.NewExecutor(catalog, svc.Sources(warehouses), nil) // datasets on approved read-only tools
//
// What it guarantees:
//
//   - Tokens are sealed with the shared keyring (package seal) and never
//     returned: a Connection has HasToken only.
//
//   - Every remote call passes the one outbound request policy
//     (internal/outbound): http(s) only, no user information or
//     credentials in URLs, no link-local, cloud-metadata or private
//     targets after DNS resolution (loopback is allowed on purpose, so an
//     owner can run a server on the same machine; Options.DenyLoopback
//     refuses it), bounded redirects, timeouts, response byte caps. The
//     connection's token (bearer, or the OAuth access token of an MCP
//     request) goes to the origin of its URL only (scheme, host and
//     port): a redirect to another origin is refused, and a URL changed
//     to another origin drops a bearer token, to be entered again (an
//     OAuth connection signs in again after any URL change).
//
//   - Discovery is bounded in time, pages, bytes and count, and a large
//     count alone never fails it: past Options.MaxTools the tools kept
//     are the approved ones and the best matches of the tool focus, and
//     the connection says how many were left out (Discovery.LeftOut;
//     Unread when pages were past the page or byte bound). Up to 250
//     usable tools are all shown; larger lists are matched against the
//     tool focus (the saved question) plus basic schema, documentation and
//     query helpers, and approved tools are never dropped. Tools failing
//     the schema safety checks are excluded and counted apart.
//
//   - One switch per tool enables it for Ask and datasets; new tools start
//     off, destructive ones are blocked, "allow all" skips destructive and
//     unknown ones. Every change runs under the connection's lock
//     (Store.Update). A fingerprint of each approved tool's definition is
//     kept: a description-only change is recorded and shown, a widening
//     change (annotations turning mutating, destructive or unknown; a new
//     input schema) turns the tool off until it is approved again.
//
//   - Ask gets the approved tools per turn (ApprovedTools), named
//     <connection>__<tool>, and each call re-reads the approval (Call).
//     Each call, and each dataset run, checks the tool's definition
//     against a listing no older than Options.ListingMaxAge (60 s),
//     listing again first when it is older or the server sent
//     notifications/tools/list_changed: a tool that widened on the server
//     is turned off and the call blocked ("needs approval again").
//     Changes stop the turns that use them (in this process; see
//     ApprovedTools).
//
//   - Datasets use approved read-only tools (Source): response text alone
//     is InvalidResult, never a one-cell table.
//
//   - OAuth connections (AuthOAuth) sign in through their server's
//     authorization server, on the go-sdk's client auth support
//     (oauthex; the sessions use its OAuthHandler) and every request
//     through the outbound policy: Connect saves the inactive connection
//     and StartOAuth begins the sign-in (discovery, registration, S256
//     PKCE, the resource indicator) with a sealed, expiring state that
//     carries the conversation, user and team; CompleteOAuth checks the
//     state, its browser Binding, single use (FlowStore) and iss, trades
//     the code, runs a discovery with the new token and only then
//     activates the connection. Tokens are sealed, refreshed with
//     rotation under the connection's lock, and a failed refresh marks
//     the connection as needing sign-in (repair open_connection).
//
//     c, start, err := svc.Connect(ctx, admin, mcpsource.Input{Name: "PostHog", URL: url, Provider: "PostHog"}, conversationID)
//     // the browser goes to start.AuthorizationURL, keeping start.Binding (a cookie); the provider redirects back:
//     res, err := svc.CompleteOAuth(ctx, mcpsource.OAuthCallback{State: state, Code: code, Iss: iss, Binding: binding})
package mcpsource
