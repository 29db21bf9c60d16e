package memory_test

import (
	"context"
	"fmt"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/memory"
)

func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.SetMember("acme", "alice", access.RoleViewer, access.ProjectSet())
	dir.SetMember("acme", "bob", access.RoleViewer, access.ProjectSet())
	alice := access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession}
	bob := access.Principal{UserID: "bob", TeamID: "acme", Auth: access.AuthSession}

	// The host supplies the key, e.g. memory.ParseKey of a configured secret.
	keys, err := memory.NewStaticKeyring("2026-09", map[string][]byte{"2026-09": memory.GenerateKey()})
	if err != nil {
		panic(err)
	}
	svc := memory.NewService(memory.NewMemoryStore(), keys, access.NewGate(access.NewChecker(dir, nil), nil), &memory.Options{
		Policy: memory.StaticPolicy(true), // the team allows memory with external AI
	})

	// A chat message: /remember saves without a model call.
	if text, ok := memory.ParseRemember("/remember Our fiscal year starts in April."); ok {
		if _, err := svc.Add(ctx, alice, text); err != nil {
			fmt.Println(askbi.ErrorMessage(err))
		} else {
			fmt.Println(memory.SavedReply)
		}
	}

	// An empty /remember is refused.
	text, _ := memory.ParseRemember("/remember   ")
	_, err = svc.Add(ctx, alice, text)
	fmt.Println(askbi.ErrorCode(err), "-", askbi.ErrorMessage(err))

	// The next Ask turn reads the memories afresh, as untrusted user context.
	notes, _ := svc.ForModel(ctx, alice)
	fmt.Printf("%q\n", notes)

	// Bob cannot see or change Alice's memories.
	items, _ := svc.List(ctx, alice)
	err = svc.Delete(ctx, bob, items[0].ID)
	fmt.Println(askbi.ErrorCode(err))
	// Output:
	// Saved to memory.
	// invalid_argument - text: a memory cannot be empty
	// ["Our fiscal year starts in April."]
	// not_found
}
