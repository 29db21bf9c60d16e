package workspacetest_test

import (
	"testing"

	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

// A catalog's own tests run the suite; newCatalog gives each subtest a
// fresh catalog holding the fixture and nothing else. A SQL adapter
// inserts the fixture into a fresh, migrated database; the in-memory
// catalog takes it as it is (Fixture.Memory), and as it is also a
// workspace.CatalogWriter, the Writer subtests run too.
func ExampleRun() {
	// func TestCatalog(t *testing.T), in the catalog's package:
	_ = func(t *testing.T) {
		workspacetest.Run(t, func(t *testing.T, f workspacetest.Fixture) workspace.Catalog {
			return f.Memory()
		})
	}
}
