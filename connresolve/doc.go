// Package connresolve is the deterministic connection resolver: it
// finds the shortest safe path to the data a question needs
// ([Resolver.Resolve], and [Resolver.Setup], the setup card Ask's
// list_connections tool and connhttp's setup route answer), over the
// host's connections ([Connections]), the native source types it has
// installed ([NativeSource]) and the verified MCP provider catalog
// ([Verified], one static Go file). The connections themselves, their
// sign-in and their tools are package connections' and its
// subpackages'; [CatalogConnections] joins a host's catalog and its
// usable remote connections ([Usable]: remote.Tools) into the
// Connections the resolver reads.
//
//	r := connresolve.NewResolver(connresolve.CatalogConnections{Catalog: catalog, Remote: tools, Natives: natives}, natives, nil)
//	card, err := r.Setup(ctx, live, "PostHog", connresolve.ProductAnalytics)
//
// It answers a connection the team already has, or else the setup that
// gets one, in a fixed order (SPEC "Connection resolution"):
//
//  1. connected: a connected, ready source the principal may read;
//  2. native_setup: a source type the host has installed that serves the
//     provider or capability, when the principal may configure it;
//  3. mcp_oauth_setup: a verified MCP provider ([Verified]) with a remote
//     HTTPS endpoint and OAuth sign-in;
//  4. manual_mcp_setup: a remote MCP server the principal sets up by hand,
//     for a provider the catalog does not know;
//  5. unsupported: nothing serves the request.
//
// A principal who may not configure connections
// (access.RightManageConnections) gets admin_required instead of a setup
// option. The first step that yields options wins, at most [MaxOptions]
// of them; an option holds names, states and public setup facts only,
// never credentials or schemas, and a "Connect" action takes a verified
// endpoint from [Resolver.OAuthProvider], never from the client.
package connresolve
