package sourcetest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/dataexec/sourcetest"
)

// A source's own tests run the suite; the Fixture says how to ask this
// kind of source for what the suite needs. Here it is the in-memory
// TableSource, which answers by SQL text or tool name, so its tables are
// made in advance for each n the suite will ask for. It cannot block and
// has no backend to watch, so those cases say why they do not apply.
func ExampleRun() {
	// func TestSource(t *testing.T), in the source's package:
	_ = func(t *testing.T) {
		sourcetest.Run(t, func(t *testing.T) (dataexec.Source, sourcetest.Fixture) {
			tables := map[string]*dataexec.Table{
				"kinds": {Columns: []string{"n", "b", "i", "f", "s"}, Rows: [][]any{{nil, true, int64(-7), 2.5, "text"}}},
			}
			for _, n := range sourcetest.RowCounts() {
				rows := &dataexec.Table{Columns: []string{"id", "name"}}
				for i := 1; i <= n; i++ {
					rows.Rows = append(rows.Rows, []any{int64(i), fmt.Sprintf("row %d", i)})
				}
				tables[fmt.Sprint("rows ", n)] = rows
			}
			for _, n := range sourcetest.WideSizes() {
				tables[fmt.Sprint("wide ", n)] = &dataexec.Table{Columns: []string{"v"}, Rows: [][]any{{strings.Repeat("x", n)}}}
			}
			const noBlock = "TableSource answers from memory at once"
			return dataexec.NewTableSource(tables), sourcetest.Fixture{
				Rows:     func(n int) dataexec.Query { return dataexec.Query{SQL: fmt.Sprint("rows ", n)} },
				Wide:     func(n int) dataexec.Query { return dataexec.Query{SQL: fmt.Sprint("wide ", n)} },
				Kinds:    func() dataexec.Query { return dataexec.Query{SQL: "kinds"} },
				Rejected: []dataexec.Query{{SQL: "no such table"}},
				NotApplicable: map[string]string{
					sourcetest.CaseDeadlineWhileRunning: noBlock,
					sourcetest.CaseCancelWhileRunning:   noBlock,
					sourcetest.CaseRejectedRanNothing:   "TableSource has no backend to watch",
				},
			}
		})
	}
}
