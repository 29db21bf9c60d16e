package accesstest

import (
	"net/http"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

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

// Sessions are the session principals of Teams' users, by name (alice,
// bob, vic, carol), as a host's login would make them.
var Sessions = map[string]access.Principal{
	"alice": {UserID: "alice", TeamID: "acme", Auth: access.AuthSession},
	"bob":   {UserID: "bob", TeamID: "acme", Auth: access.AuthSession},
	"vic":   {UserID: "vic", TeamID: "acme", Auth: access.AuthSession},
	"carol": {UserID: "carol", TeamID: "globex", Auth: access.AuthSession},
}

// Token is the bearer token Login takes for the user called name.
func Token(name string) string { return "test-session-" + name }

// Login is the tests' stand-in for a host's product login, an
// [access.Authenticate]: "Authorization: Bearer <Token(name)>" is the
// session of Sessions[name]; anything else is Unauthenticated.
func Login(r *http.Request) (access.Principal, error) {
	bad := askbi.Errorf(askbi.Unauthenticated, "sign in: send Authorization: Bearer <token>")
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return access.Principal{}, bad
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(tok), "test-session-")
	p, known := Sessions[name]
	if !ok || !known {
		return access.Principal{}, bad
	}
	return p, nil
}
