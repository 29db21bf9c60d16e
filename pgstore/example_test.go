package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/provider/mock"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/remote"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/pgtest"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/pgstore"
	"github.com/askbi/askbi/seal"
	"github.com/askbi/askbi/workspace"
)

// host is the README's minimal host with its state in PostgreSQL: every
// store from one pgstore.DB, the rate limit, the concurrency bounds and
// the connection changes shared with every instance on the database.
type host struct {
	assistant *ask.Assistant
	memories  *memory.Service
}

func newHost(ctx context.Context, db *pgstore.DB, keyring seal.Keyring) (*host, error) {
	dir := access.NewMemoryDirectory() // the product's teams, members and roles
	dir.AddProject("acme", "growth")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	limiter := access.NewFallbackRateLimiter(db.RateLimiter, access.NewMemoryRateLimiter(nil), nil)
	gate := access.NewGate(access.NewChecker(dir, nil), limiter)
	keys := access.NewKeys(db.Keys, dir, nil) // for mcpserver.New
	exec := dataexec.NewExecutor(workspace.NewMemoryCatalog(), dataexec.SourceMap{},
		&dataexec.Options{Concurrency: dataexec.ConcurrencyOptions{Shared: db.Leases}})
	conns := connections.NewService(db.Connections, keyring, gate, &connections.Options{Publish: db.ConnectionChanges.Publish})
	sign := signin.New(conns, keyring, &signin.Options{Flows: db.Flows, Leases: db.Leases})
	tools, err := ask.NewRegistry(ask.ProductTools(exec)...)
	if err != nil {
		return nil, err
	}
	h := &host{memories: memory.NewService(db.Memory, keyring, gate, nil)}
	h.assistant = ask.New(mock.New(), gate, exec, db.Ask, tools, &ask.Options{Memory: h.memories, Tools: ask.RemoteTools(remote.New(conns, sign, nil)), TurnSlots: db.Leases})
	// What other instances change (a revoked key, a connection) reaches
	// this one at once.
	return h, db.Listen(ctx, slog.New(slog.DiscardHandler), keys, conns.Records())
}

// Two instances of a host on one database: what a user saves through one
// is there for the other.
func ExampleOpen() {
	ctx := context.Background()
	// The host's own database URL (postgres://askbi@db/askbi), and its
	// keyring from the secret store.
	url := pgtest.ExampleDatabase()
	keyring, err := seal.NewStaticKeyring("k1", map[string][]byte{"k1": seal.GenerateKey()})
	if err != nil {
		log.Fatal(err)
	}
	var instances [2]*host
	for i := range instances {
		db, err := pgstore.Open(ctx, url, nil) // migrates once, whoever comes first
		if err != nil {
			log.Fatal(err)
		}
		defer db.Close()
		if instances[i], err = newHost(ctx, db, keyring); err != nil {
			log.Fatal(err)
		}
	}
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}

	conv, err := instances[0].assistant.CreateConversation(ctx, alice)
	if err != nil {
		log.Fatal(err)
	}
	emit, events := ask.Collect()
	if err := instances[0].assistant.Send(ctx, alice, ask.SendRequest{ConversationID: conv.ID, Message: "/remember our fiscal year starts in April"}, emit); err != nil {
		log.Fatal(err)
	}
	for _, e := range events() {
		if e.Type == ask.EventMessageCompleted {
			fmt.Println("instance 1:", e.Text)
		}
	}

	view, err := instances[1].assistant.Open(ctx, alice, conv.ID)
	if err != nil {
		log.Fatal(err)
	}
	mems, err := instances[1].memories.List(ctx, alice)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("instance 2: %d messages, memory %q\n", len(view.Messages), mems[0].Text)
	// Output:
	// instance 1: Saved to memory.
	// instance 2: 2 messages, memory "our fiscal year starts in April"
}
