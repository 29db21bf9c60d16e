// Package mcpsource reads data from remote MCP servers: the go-sdk client
// (Streamable HTTP) under the outbound request policy, and the
// dataexec.Source of datasets on an approved read-only tool. Everything
// the server says (descriptions, annotations, data) is untrusted.
//
// Connections themselves (create, edit, delete, discovery, per-tool
// access) live in package connections, their sign-in in package signin,
// and the calls of their approved tools in package remote, whose Tools
// implements Tools, the small interface a Source reads through:
//
//	exec := dataexec.NewExecutor(catalog, mcpsource.Sources(remote.New(conns, sign, nil), warehouses), nil)
//
// What it guarantees:
//
//   - Every request passes the one outbound request policy
//     (internal/outbound): http(s) only, no user information or
//     credentials in URLs, no link-local, cloud-metadata or private
//     targets after DNS resolution (loopback is allowed unless
//     ClientOptions.DenyLoopback), bounded redirects, timeouts, response
//     byte caps.
//
//   - The connection's credential (a bearer token, or the OAuth access
//     token go-sdk's OAuthHandler sets) goes to the origin of its URL only
//     (scheme, host and port): a redirect to another origin is refused
//     before anything is sent, with a message that says so.
//
//   - Failures are classified from what the transport saw (Probe), never
//     from the remote body: each kind has a safe message of its own.
//
//   - A dataset's answer becomes rows from the structured content (or
//     text that is JSON); response text alone is InvalidResult, never a
//     one-cell table.
package mcpsource
