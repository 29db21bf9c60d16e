// Package remote calls the approved tools of a team's remote MCP
// connections: the one way Ask and datasets reach a remote tool. Its
// [Tools] are what each consumer's small interface asks for: Ask's
// ask.Remote ([Tools.ApprovedTools], [Tools.Call]) and the datasets'
// mcpsource.Tools ([Tools.RunReadOnly], [Tools.ReadOnlyTools]); and the
// connections Ask can use now for the resolver ([Tools.Usable]). It is
// built on the connections core and a credential (package signin):
//
//	tools := remote.New(conns, sign, nil)
//	exec := dataexec.NewExecutor(catalog, mcpsource.Sources(tools, warehouses), nil)
//	assistant := ask.New(model, gate, exec, stores, registry, &ask.Options{Tools: ask.RemoteTools(tools)})
//
// What it guarantees:
//
//   - Ask gets the approved tools per turn, named <connection>__<tool>
//     (sanitized to ^[a-zA-Z0-9_-]{1,64}$, deterministic and unique), with
//     a channel that closes when the team's connections change, and each
//     call re-reads the approval and the tool's fingerprint: a tool turned
//     off, removed or changed since is Unavailable, and nothing is sent.
//
//   - Each call, and each dataset run, checks the tool's definition
//     against a listing no older than Options.ListingMaxAge (60 s),
//     listing again first when it is older or the server sent
//     notifications/tools/list_changed: a tool that widened on the server
//     is turned off and the call blocked ("needs approval again").
//
//   - A call carries the connection's own credential only, never the
//     caller's, and is bounded in time and size; a tool's error text is
//     never shown.
//
//   - Datasets use approved read-only tools, their arguments checked
//     against the input schema: response text alone is InvalidResult
//     (mcpsource.Source), never a one-cell table.
package remote
