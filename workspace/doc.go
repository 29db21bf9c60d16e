// Package workspace is the host product's workspace as askbi sees it: its
// dashboards, charts, datasets (each a saved [Request] to a connection)
// and connections, with the [Catalog] interface a host implements over its
// own tables, the optional [CatalogWriter] (previews, placements, saved
// datasets) and [ConnectionWriter] (the remote connections askbi
// manages), and [MemoryCatalog] for tests and demos.
//
// It holds data and their rules, not their execution: the executor in
// package dataexec reads a catalog, checks every right and runs requests
// on sources. A catalog a host writes is proven by the conformance suite
// in workspace/workspacetest; pgstore's catalog and [MemoryCatalog] pass
// it.
//
// Every entity belongs to one team and, but for team-wide connections, to
// one project; its Ref is what access decisions read. A chart on no
// dashboard is a preview, private to its creator until it is placed
// ([Chart.Ref]). A [Filter] keeps rows whose field compares to a value;
// a dataset's [Scope] and saved filters are the conditions that limit it
// ([Dataset.Conditions]).
package workspace
