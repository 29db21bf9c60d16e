package access_test

import (
	"context"
	"fmt"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

func Example() {
	ctx := context.Background()
	dir := access.NewMemoryDirectory()
	dir.AddProject("acme", "growth")
	dir.AddProject("acme", "finance")
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())

	// Alice, signed in, creates a read-only key for one project.
	checker := access.NewChecker(dir, nil)
	alice, _ := checker.Live(ctx, access.Principal{UserID: "alice", TeamID: "acme", Auth: access.AuthSession})
	keys := access.NewKeys(access.NewMemoryKeyStore(), dir, nil)
	secret, _, _ := keys.Create(ctx, alice, access.KeyRequest{
		Name: "notebook", Scopes: []string{"data:read"}, Projects: access.ProjectSet("growth"),
	})

	// An agent presents the key; every check re-reads live membership.
	p, _ := keys.Verify(ctx, secret)
	growth := access.Entity{Type: access.TypeDashboard, ID: "d1", TeamID: "acme", ProjectID: "growth"}
	finance := access.Entity{Type: access.TypeDashboard, ID: "d2", TeamID: "acme", ProjectID: "finance"}
	fmt.Println(checker.Can(ctx, p, access.RightRead, growth))
	fmt.Println(askbi.ErrorCode(checker.Can(ctx, p, access.RightRead, finance)))
	fmt.Println(askbi.ErrorCode(checker.Can(ctx, p, access.RightRefresh, growth)))

	// A removed member loses access at once, although Verify may answer
	// from its cache for KeyOptions.CacheTTL.
	dir.RemoveMember("acme", "alice")
	fmt.Println(askbi.ErrorCode(checker.Can(ctx, p, access.RightRead, growth)))
	// Output:
	// <nil>
	// not_found
	// scope_required
	// forbidden
}
