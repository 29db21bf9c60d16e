package pgstore_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/pgstore"
)

// TestDirectory: the seed is stored once, and what changed since stays;
// a change through one pool is read through another at once (two
// instances); a removed member is not_found.
func TestDirectory(t *testing.T) {
	ctx := context.Background()
	dbs := mustPools(t, 2)
	a, b := pgstore.NewDirectory(dbs[0]), pgstore.NewDirectory(dbs[1])
	seed := pgstore.DirectorySeed{
		Projects: [][2]string{{"acme", "growth"}, {"acme", "finance"}},
		Members: []pgstore.SeedMember{
			{Team: "acme", User: "alice", Role: access.RoleOwner, Projects: access.AllProjects()},
			{Team: "acme", User: "bob", Role: access.RoleEditor, Projects: access.ProjectSet("growth")},
		},
	}
	if ok, err := a.Seed(ctx, "demo", seed); err != nil || !ok {
		t.Fatalf("Seed = %v, %v", ok, err)
	}
	member := func(d *pgstore.Directory, user string) (access.Membership, askbi.Code) {
		m, err := d.Member(ctx, "acme", user)
		return m, askbi.ErrorCode(err)
	}
	if m, code := member(b, "bob"); code != "" || m.Role != access.RoleEditor || !cmp.Equal(m.Projects, access.ProjectSet("growth")) {
		t.Errorf("bob = %+v, %s", m, code)
	}
	if ok, err := b.HasProject(ctx, "acme", "finance"); err != nil || !ok {
		t.Errorf("HasProject(finance) = %v, %v", ok, err)
	}
	if ok, err := b.HasProject(ctx, "acme", "ops"); err != nil || ok {
		t.Errorf("HasProject(ops) = %v, %v", ok, err)
	}
	if err := a.SetMember(ctx, "acme", "bob", access.RoleViewer, access.AllProjects()); err != nil {
		t.Fatal(err)
	}
	if m, _ := member(b, "bob"); m.Role != access.RoleViewer || !m.Projects.All {
		t.Errorf("bob after the change on the other pool = %+v, want a viewer of every project", m)
	}
	if err := a.RemoveMember(ctx, "acme", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, code := member(b, "alice"); code != askbi.NotFound {
		t.Errorf("removed alice = %s, want not_found", code)
	}
	if ok, err := b.Seed(ctx, "demo", seed); err != nil || ok {
		t.Errorf("second Seed = %v, %v; want false", ok, err)
	}
	if _, code := member(b, "alice"); code != askbi.NotFound {
		t.Errorf("alice after a second seed = %s, want still removed", code)
	}
}
