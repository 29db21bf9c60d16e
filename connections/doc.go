// Package connections is the home of a team's remote MCP connections:
// creating, changing and deleting them, discovering their tools within
// bounds, and the one switch per tool that decides what Ask and datasets
// may use ([Service]); the connections as stored and what the packages
// built on them share ([Records]: the [Store], the outbound client, the
// listing of a server's tools, the catalog and the change feed); and
// the store in memory ([MemoryStore]; package connectionstest proves a
// store).
//
// Three packages share the connections, each with one job:
//
//   - connections, this one: the connections and their tools, for the
//     people who manage them. It opens no secret: it seals a bearer
//     token as it is saved, and asks [Credentials] how to reach a server.
//   - connections/signin: the sign-in, the one holder of the secrets. It
//     opens the sealed tokens, talks to authorization servers (save and
//     connect, the OAuth sign-in, refresh with rotation) and is the
//     Credentials a host gives [Service.Discover] and the remote tools.
//   - connections/remote: the approved tools as Ask and datasets call
//     them, each call checked again.
//
// Which connection or setup answers a question is package connresolve's
// (the resolver and the verified provider catalog); the HTTP routes are
// package connhttp's, one handler a host mounts with or without Ask.
//
//	conns := connections.NewService(connections.NewMemoryStore(), keyring, gate, &connections.Options{Catalog: catalog})
//	sign := signin.New(conns, keyring, &signin.Options{RedirectURL: redirectURL})
//	tools := remote.New(conns, sign, nil)
//	c, err := conns.Create(ctx, admin, connections.Input{Name: "Analytics", URL: "https://mcp.example.com/mcp", Token: token})
//	c, err = conns.Discover(ctx, admin, c.ID, nil, sign) // list the tools, within bounds
//	_, err = conns.SetAccess(ctx, admin, c.ID, "top_pages", true)
//	exec := dataexec.NewExecutor(catalog, mcpsource.Sources(tools, warehouses), nil) // datasets on approved read-only tools
//	assistant := ask.New(model, gate, exec, stores, registry, &ask.Options{Tools: ask.RemoteTools(tools)})
//
// What it guarantees:
//
//   - Tokens are sealed with the shared keyring (package seal) and never
//     returned: a [Connection] has HasToken only. This package seals a
//     bearer token ([TokenContext]) and never opens one.
//
//   - Every URL passes the one outbound request policy when it is saved,
//     and every request to a server where it is dialled ([Records.Client]):
//     http(s) only, no user information or credentials in URLs, no
//     link-local, cloud-metadata or private targets after DNS resolution
//     (loopback is allowed on purpose, so an owner can run a server on the
//     same machine; Options.DenyLoopback refuses it), bounded redirects,
//     timeouts, response byte caps. The connection's token goes to the
//     origin of its URL only (scheme, host and port): a redirect to
//     another origin is refused, and a URL changed to another origin drops
//     a bearer token, to be entered again (an OAuth connection signs in
//     again after any URL change).
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
//     ([Store].Update), which is held for the write alone: listings and
//     token requests happen before it. A fingerprint of each approved
//     tool's definition is kept ([Tool.Fingerprint]): a description-only
//     change is recorded and shown, a widening change (annotations turning
//     mutating, destructive or unknown; a new input schema) turns the tool
//     off until it is approved again.
//
//   - A change of a team's connections or approvals closes its
//     [Records.Changes] channel, which stops the Ask turns that use the
//     team's remote tools, on this instance and, with Options.Publish, on
//     every other instance sharing the store.
package connections
