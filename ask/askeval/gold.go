package askeval

import (
	"context"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// maxGoldRows bounds the rows a gold query reads: the answers it is
// compared with hold far fewer.
const maxGoldRows = 10000

// runGold runs g as live principal p on ws: a dataset run through the
// executor (its access checks, mapping and filters, as a tool's), or
// its SQL on its connection's source. The rows stay in this process.
func runGold(ctx context.Context, ws *Workspace, p access.Principal, g Gold) (*table, error) {
	var t *table
	if g.Dataset != "" {
		res, err := dataexec.RunDatasetAction.Run(ws.Executor, ctx, p, dataexec.DatasetRun{DatasetID: g.Dataset,
			Params: dataexec.Params{Filters: g.Filters}})
		if err != nil {
			return nil, err
		}
		if res.Truncated {
			return nil, askbi.Errorf(askbi.TooLarge, "the gold dataset %s is cut at the executor's caps; narrow it with filters", g.Dataset)
		}
		t = &table{columns: res.Columns, rows: res.Rows(), count: res.RowCount}
	} else {
		src, ok := ws.Sources[g.Connection]
		if !ok {
			return nil, askbi.Errorf(askbi.InvalidArgument, "the gold's connection %q is not one of the workspace's sources", g.Connection)
		}
		res, err := src.Query(ctx, dataexec.Query{SQL: g.SQL, MaxRows: maxGoldRows, MaxBytes: 64 << 20})
		if err != nil {
			return nil, err
		}
		if res.Truncated {
			return nil, askbi.Errorf(askbi.TooLarge, "the gold query returns more than %d rows", maxGoldRows)
		}
		t = &table{columns: res.Columns, rows: res.Rows, count: len(res.Rows)}
	}
	if len(g.Columns) > 0 {
		for _, c := range g.Columns {
			if column(t.columns, c) < 0 {
				return nil, askbi.Errorf(askbi.InvalidArgument, "the gold has no column %q (it has %v)", c, t.columns)
			}
		}
	}
	return t, nil
}
