package connections_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlySignInOpensSecrets: of the connection packages (this one, the
// remote tools, the routes, the resolver), only package signin opens a
// sealed secret (seal.Open) or talks to an authorization server
// (internal/mcpoauth); the others ask it for a credential.
func TestOnlySignInOpensSecrets(t *testing.T) {
	uses := func(dir string) (opens, oauth []string) {
		t.Helper()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/askbi/askbi/internal/mcpoauth" {
					oauth = append(oauth, f)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "seal" && sel.Sel.Name == "Open" {
						opens = append(opens, f)
					}
				}
				return true
			})
		}
		return opens, oauth
	}
	for _, dir := range []string{".", "remote", "connhttp", "connectionstest", filepath.Join("..", "connresolve")} {
		opens, oauth := uses(dir)
		if len(opens) > 0 {
			t.Errorf("%v open sealed secrets (seal.Open); only package signin does", opens)
		}
		if len(oauth) > 0 {
			t.Errorf("%v talk to authorization servers (internal/mcpoauth); only package signin does", oauth)
		}
	}
	// The sign-in does both: a scan that found nothing there would prove
	// nothing above.
	if opens, oauth := uses("signin"); len(opens) == 0 || len(oauth) == 0 {
		t.Errorf("package signin: seal.Open in %v, internal/mcpoauth in %v; want both found", opens, oauth)
	}
}
