// Package pgstore keeps the state askbi owns in PostgreSQL, for a host to
// import as the reference server does: API keys, conversations with their
// turns, context, tool runs, approvals and receipts, memory, remote MCP
// connections and their sign-ins, the MCP server's OAuth grants; and the
// limits every instance on one database shares (a rate limiter,
// concurrency leases) with the change feed between them (LISTEN/NOTIFY).
//
// [Open] connects, applies the embedded migrations ([Migrate]) and
// returns a [DB] whose fields are the stores, each an implementation of
// an SDK interface on sqlx and lib/pq:
//
//	db, err := pgstore.Open(ctx, "postgres://askbi@localhost/askbi", nil)
//	if err != nil { ... }
//	defer db.Close()
//	assistant := ask.New(model, gate, exec, db.Ask, tools, nil)
//	keys := access.NewKeys(db.Keys, dir, nil)
//	db.Listen(ctx, logger, keys, conns.Records()) // revocations and changes from other instances
//
// Each store passes the exported conformance suite its in-memory
// counterpart passes (accesstest.RunKeyStore, asktest.RunTurnStore,
// memorytest.Run, connectionstest.Run, signintest.Run, oauthtest.Run,
// workspacetest.Run), run here against a throwaway PostgreSQL; and two
// instances refresh a connection's OAuth tokens once
// (signintest.RunRefresh, on the connection store and the leases).
package pgstore
