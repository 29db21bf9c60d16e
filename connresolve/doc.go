// Package connresolve is the home of a team's data connections: the
// remote MCP connections themselves (Service: create, edit, delete,
// bounded tool discovery, per-tool access, OAuth sign-in and refresh),
// their stores (Store, FlowStore; connresolvetest is their conformance
// suite), and the resolution of what a question needs into a connection
// or its shortest setup (Resolver), with the verified provider catalog
// (Verified). Its HTTP routes are package connhttp's handler, which a
// host mounts with or without Ask. Remote servers are reached through
// dataexec/mcpsource's client; the remote server's descriptions,
// annotations and data are untrusted.
//
//	svc := connresolve.NewService(connresolve.NewMemoryStore(), keyring, gate, &connresolve.Options{Catalog: catalog})
//	conn, err := svc.Create(ctx, admin, connresolve.Input{Name: "Analytics", URL: "https://mcp.example.com/mcp", Token: token})
//	conn, err = svc.Discover(ctx, admin, conn.ID, nil)     // list the tools, within bounds
//	_, err = svc.SetAccess(ctx, admin, conn.ID, "top_pages", true)
//	exec := dataexec.NewExecutor(catalog, mcpsource.Sources(svc, warehouses), nil) // datasets on approved read-only tools
//	ask.RemoteTools(svc)                                                            // Ask's view: approved tools and a call
//
// Resolution finds the shortest safe path to the data a question needs: a connection the team already has, or else the setup that gets
// one, in a fixed order (SPEC "Connection resolution"):
//
//  1. connected: a connected, ready source the principal may read;
//  2. native_setup: a source type the host has installed that serves the
//     provider or capability, when the principal may configure it;
//  3. mcp_oauth_setup: a verified MCP provider (Verified) with a remote
//     HTTPS endpoint and OAuth sign-in;
//  4. manual_mcp_setup: a remote MCP server the principal sets up by hand,
//     for a provider the catalog does not know;
//  5. unsupported: nothing serves the request.
//
// A principal who may not configure connections (access.RightManageConnections)
// gets admin_required instead of a setup option. The first step that
// yields options wins, at most five of them; an option holds names, states
// and public setup facts only, never credentials or schemas.
//
// The host supplies its connections (Connections) and the native source
// types it has installed (NativeSource); the verified catalog is this
// package's own.
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
//   - Datasets use approved read-only tools (RunReadOnly, under
//     mcpsource.Source): response text alone is InvalidResult, never a
//     one-cell table.
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
//     activates the connection. Tokens are sealed and refreshed with
//     rotation, one refresh of a connection at a time (a lock in the
//     process, OAuthOptions.Leases across instances), the token request
//     outside any transaction; a failed refresh marks the connection as
//     needing sign-in (repair open_connection).
//
// A sign-in, from Connect to the provider's redirect:
//
//	c, start, err := svc.Connect(ctx, admin, connresolve.Input{Name: "PostHog", URL: url, Provider: "PostHog"}, conversationID)
//	// the browser goes to start.AuthorizationURL, keeping start.Binding (a cookie); the provider redirects back:
//	res, err := svc.CompleteOAuth(ctx, connresolve.OAuthCallback{State: state, Code: code, Iss: iss, Binding: binding})
package connresolve
