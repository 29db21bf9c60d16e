package connections

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/workspace"
)

// Records are the stored connections and what every package built on
// them shares: the [Store], the one outbound client that reaches their
// servers, the listing of a server's tools within the discovery bounds,
// the catalog they are published to, and the change feed that stops the
// Ask turns using a changed connection. [Service] is the people's API on
// them (access, audit, validation); package signin keeps its sign-in in
// them and package remote its calls' listings. They hold no secret they
// can read. It is safe for concurrent use.
type Records struct {
	store  Store
	client *mcpsource.Client
	o      *Options // the service's, defaults applied

	mu      sync.Mutex
	changed map[string]chan struct{} // per team; closed on a change
}

func newRecords(store Store, o *Options) *Records {
	return &Records{store: store, o: o, changed: map[string]chan struct{}{},
		client: mcpsource.NewClient(&mcpsource.ClientOptions{DenyLoopback: o.DenyLoopback, AllowPrivateNetworks: o.AllowPrivateNetworks,
			Timeout: o.DiscoveryTimeout, Resolver: o.Resolver})}
}

// Store is where the connections are kept. A change goes through
// Store.Update, under the connection's lock, with no network I/O in it.
func (r *Records) Store() Store { return r.store }

// Client is the client of remote MCP servers under the outbound policy
// of the service's [Options] (DenyLoopback, AllowPrivateNetworks,
// Resolver), each HTTP exchange bounded by Options.DiscoveryTimeout
// ([mcpsource.Client.Bounded] gives another bound on the same
// connections).
func (r *Records) Client() *mcpsource.Client { return r.client }

// Found is what one listing of a server's tools kept ([Records.ListTools]):
// the tools in the server's order, with the counts of those left out.
type Found struct {
	l         listing
	usable    int
	fullLimit int
}

// Merge folds f into st, a connection under its lock: approvals are
// kept, new tools start off, a widening change turns an approved tool off
// until it is approved again, a description change is recorded, tools no
// longer listed are kept as removed; the counts are set, the connection
// is active, with a new version, as of now. It reports whether anything
// Ask or datasets may use changed (the change feed's concern).
func (f Found) Merge(st *State, now time.Time) (changed bool) {
	changed = merge(st, f.l.found, st.ToolFocus, f.fullLimit)
	st.Discovery.At, st.Discovery.Error = now, nil
	st.Discovery.Tools, st.Discovery.Excluded = f.usable, f.l.invalid+len(f.l.found)-f.usable
	st.Discovery.LeftOut, st.Discovery.Unread, st.Discovery.Stale = f.l.leftOut, f.l.unread, f.l.listChanged
	st.Active = true
	st.Version++
	st.UpdatedAt = now
	return changed
}

// ListTools lists and inspects the tools of st's server, authenticated
// with cred, within the bounds of the service's [Options]
// (DiscoveryTimeout, MaxPages, MaxListBytes, the schema safety checks),
// keeping at most MaxTools of them: those approved before, then the best
// matches of focus. It changes nothing stored: [Found.Merge] does, under
// the connection's lock. Errors: the client's (an unreachable server, a
// bad token, TooLarge for a response over the cap, Timeout), and
// InvalidResult when no listed tool is usable.
func (r *Records) ListTools(ctx context.Context, st State, focus string, cred mcpsource.Credential) (Found, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.DiscoveryTimeout)
	defer cancel()
	se, err := r.client.Open(ctx, st.URL, cred, r.o.MaxListBytes)
	if err != nil {
		return Found{}, err
	}
	approved := map[string]bool{}
	for _, t := range st.Tools {
		if t.Access.ApprovedSchemaHash != "" {
			approved[t.Name] = true
		}
	}
	k := newKeeper(r.o.MaxTools, focus, approved)
	unread, err := se.ListTools(ctx, r.o.MaxPages, r.o.MaxListBytes, func(page []*mcp.Tool) { k.add(page, r.o) })
	se.Close()
	if err != nil {
		return Found{}, err
	}
	f := Found{l: k.result(unread), fullLimit: r.o.FullListLimit}
	f.l.listChanged = se.ListChanged()
	f.usable, err = usableOf(f.l)
	return f, err
}

// usableOf counts the usable tools of a listing; none is an
// InvalidResult that says whether the server listed no tools or none
// that passed the schema safety checks.
func usableOf(l listing) (int, error) {
	usable := 0
	for _, t := range l.found {
		if t.Excluded == "" {
			usable++
		}
	}
	switch {
	case usable > 0:
		return usable, nil
	case len(l.found) == 0 && l.invalid == 0:
		return 0, askbi.Errorf(askbi.InvalidResult, "the MCP server lists no tools")
	}
	return 0, askbi.Errorf(askbi.InvalidResult, "none of the server's %d tools passed the schema safety checks, so none can be used", len(l.found)+l.invalid)
}

// SaveCatalog writes c to the host's catalog (Options.Catalog), as a
// team-wide connection, so that search, the context picker and the data
// executor know it. A failure is logged: SyncCatalog mends it.
func (r *Records) SaveCatalog(ctx context.Context, c Connection) {
	if r.o.Catalog == nil {
		return
	}
	dc := workspace.Connection{ID: c.ID, TeamID: c.TeamID, Name: c.Name, Type: mcpsource.TypeMCP, Active: c.Active,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
	if err := r.o.Catalog.SaveConnection(context.WithoutCancel(ctx), dc); err != nil {
		r.o.Logger.Error("connections: catalog save", "connection", c.ID, "err", err)
	}
}

// unpublish removes connection id from the host's catalog.
func (r *Records) unpublish(ctx context.Context, id string) {
	if r.o.Catalog == nil {
		return
	}
	if err := r.o.Catalog.DeleteConnection(context.WithoutCancel(ctx), id); err != nil {
		r.o.Logger.Error("connections: catalog delete", "connection", id, "err", err)
	}
}

// SyncCatalog writes every stored connection to the catalog, for a
// host whose catalog does not keep them itself (such as the reference
// server's in-memory catalog, seeded at each start) or may have missed a
// change (a catalog write that failed after the connection was saved).
func (r *Records) SyncCatalog(ctx context.Context) error {
	if r.o.Catalog == nil {
		return nil
	}
	sts, err := r.store.List(ctx, "")
	if err != nil {
		return err
	}
	for _, st := range sts {
		r.SaveCatalog(ctx, st.Connection)
	}
	return nil
}

// Changes returns a channel that is closed at the next change of a
// connection of team teamID, or of its tools' approvals: told by Notify
// in this process, or by Changed from another sharing the store (see
// Options.Publish).
func (r *Records) Changes(teamID string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.changed[teamID]
	if !ok {
		ch = make(chan struct{})
		r.changed[teamID] = ch
	}
	return ch
}

// Notify tells the change feed that a connection of team teamID, or its
// tools' approvals, changed and the change is stored: it closes the
// team's Changes channel here and publishes the change to the other
// instances (Options.Publish).
func (r *Records) Notify(ctx context.Context, teamID string) {
	r.Changed(teamID)
	if r.o.Publish == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.o.Publish(ctx, teamID); err != nil {
		r.o.Logger.Warn("connections: the change could not be published to the other instances; their turns run on, each call checked against the stored approval",
			"team", teamID, "err", err)
	}
}

// Changed closes the Changes channel of team teamID, so the Ask turns
// that use its remote tools stop: call it when another instance sharing
// the store published a change (Options.Publish). An empty teamID means
// every team, for changes that may have been missed.
func (r *Records) Changed(teamID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for team, ch := range r.changed {
		if teamID == "" || team == teamID {
			close(ch)
			delete(r.changed, team)
		}
	}
}
