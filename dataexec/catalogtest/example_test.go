package catalogtest_test

import (
	"testing"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/catalogtest"
)

// A catalog's own tests run the suite; newCatalog gives each subtest a
// fresh catalog holding the fixture and nothing else. Here it is the
// in-memory catalog, which is also a dataexec.CatalogWriter, so the
// Writer subtests run too; a SQL adapter inserts the fixture into a
// fresh, migrated database.
func ExampleRun() {
	// func TestCatalog(t *testing.T), in the catalog's package:
	_ = func(t *testing.T) {
		catalogtest.Run(t, func(t *testing.T, f catalogtest.Fixture) dataexec.Catalog {
			c := dataexec.NewMemoryCatalog()
			for _, x := range f.Connections {
				c.PutConnection(x)
			}
			for _, x := range f.Dashboards {
				c.PutDashboard(x)
			}
			for _, x := range f.Datasets {
				c.PutDataset(x)
			}
			for _, x := range f.Charts {
				c.PutChart(x)
			}
			return c
		})
	}
}
