package accesstest

import "github.com/askbi/askbi/access"

// Teams returns the directory the SDK's tests share, so that each
// package's fixture does not build it again: team acme, with projects
// growth and finance, where alice is an owner of every project, bob an
// editor of growth and vic a viewer of every project; and team globex,
// with project ops, where carol is an owner. A test adds what else it
// needs (SetMember, AddProject).
func Teams() *access.MemoryDirectory {
	dir := access.NewMemoryDirectory()
	for _, p := range [][2]string{{"acme", "growth"}, {"acme", "finance"}, {"globex", "ops"}} {
		dir.AddProject(p[0], p[1])
	}
	dir.SetMember("acme", "alice", access.RoleOwner, access.AllProjects())
	dir.SetMember("acme", "bob", access.RoleEditor, access.ProjectSet("growth"))
	dir.SetMember("acme", "vic", access.RoleViewer, access.AllProjects())
	dir.SetMember("globex", "carol", access.RoleOwner, access.AllProjects())
	return dir
}
