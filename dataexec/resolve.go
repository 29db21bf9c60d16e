package dataexec

import (
	"context"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// maxResolve bounds the references one Resolve call checks.
const maxResolve = 50

// Resolve revalidates references the principal selected earlier, such as
// a chat's active context: each comes back as a safe Ref with its info
// line, or as nil when it no longer exists or the principal can no longer
// read it (the two are not told apart). Order is kept.
//
// Errors: InvalidArgument for more than 50 references or an unknown type.
func (e *Executor) Resolve(ctx context.Context, p access.Principal, refs []access.Entity) (_ []*Ref, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.Resolve")
	if len(refs) > maxResolve {
		return nil, askbi.Errorf(askbi.InvalidArgument, "at most %d references", maxResolve)
	}
	live, err := e.begin(p, 0)
	if err != nil {
		return nil, err
	}
	out := make([]*Ref, len(refs))
	for i, r := range refs {
		ref, err := e.resolve(ctx, live, r)
		switch askbi.ErrorCode(err) {
		case "":
			out[i] = ref
		case askbi.NotFound:
		default:
			return nil, err
		}
	}
	return out, nil
}

func (e *Executor) resolve(ctx context.Context, live access.Principal, r access.Entity) (*Ref, error) {
	switch r.Type {
	case access.TypeDashboard:
		d, err := load(ctx, live, r.Type, e.catalog.Dashboard, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		n, err := e.chartCount(ctx, live, d)
		if err != nil {
			return nil, err
		}
		return &Ref{Type: r.Type, ID: d.ID, Name: d.Name, ProjectID: d.ProjectID, Info: infoLine(SearchRow{Entity: d.Ref(), ChartCount: n})}, nil
	case access.TypeChart:
		c, err := load(ctx, live, r.Type, e.catalog.Chart, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		row := SearchRow{Entity: c.Ref(), ChartType: c.Type}
		if c.DashboardID != "" {
			if d, err := e.catalog.Dashboard(ctx, c.DashboardID); err == nil {
				row.DashboardName = d.Name
			}
		}
		return &Ref{Type: r.Type, ID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Info: infoLine(row)}, nil
	case access.TypeDataset:
		d, err := load(ctx, live, r.Type, e.catalog.Dataset, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		conn, _ := e.catalog.Connection(ctx, d.Request.ConnectionID)
		ref := datasetRef(d, conn)
		return &ref, nil
	case access.TypeConnection:
		c, err := load(ctx, live, r.Type, e.catalog.Connection, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		row := SearchRow{Entity: c.Ref(), ConnectionType: c.Type, Active: c.Active}
		return &Ref{Type: r.Type, ID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Info: infoLine(row)}, nil
	}
	return nil, askbi.Errorf(askbi.InvalidArgument, "unknown entity type %q", r.Type)
}

// chartCount counts a dashboard's charts through the catalog's search,
// which reports it for dashboards.
func (e *Executor) chartCount(ctx context.Context, live access.Principal, d Dashboard) (int, error) {
	rows, err := e.catalog.Search(ctx, CatalogQuery{TeamID: d.TeamID, Text: d.Name, Types: []access.EntityType{access.TypeDashboard},
		Projects: live.Projects, Limit: MaxSearchLimit})
	if err != nil {
		return 0, err
	}
	for _, row := range rows {
		if row.Entity.ID == d.ID {
			return row.ChartCount, nil
		}
	}
	return 0, nil
}

// DeleteDashboard deletes a dashboard and its charts. It needs
// access.RightEditDashboard. Errors: Forbidden, ScopeRequired, NotFound;
// Unsupported when the catalog is read-only. The attempt is audited as
// ActionDashboardDelete.
func (e *Executor) DeleteDashboard(ctx context.Context, p access.Principal, dashboardID string) (err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.DeleteDashboard")
	target := access.Entity{Type: access.TypeDashboard, ID: dashboardID}
	defer e.audit.Track(ctx, p, ActionDashboardDelete, &target, nil)(&err)
	live, err := e.begin(p, len(dashboardID))
	if err != nil {
		return err
	}
	w, err := e.writable()
	if err != nil {
		return err
	}
	d, err := load(ctx, live, access.TypeDashboard, e.catalog.Dashboard, dashboardID, access.RightEditDashboard)
	if err != nil {
		return err
	}
	target = d.Ref()
	return notFoundAs(w.DeleteDashboard(ctx, d.ID), access.TypeDashboard)
}

// Chart returns a chart with safe references to its dataset and dashboard,
// without data. It needs access.RightRead on the chart. Errors:
// Forbidden, ScopeRequired, NotFound.
func (e *Executor) Chart(ctx context.Context, p access.Principal, chartID string) (_ *ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.Chart")
	live, err := e.begin(p, len(chartID))
	if err != nil {
		return nil, err
	}
	c, err := load(ctx, live, access.TypeChart, e.catalog.Chart, chartID, access.RightRead)
	if err != nil {
		return nil, err
	}
	ds, err := load(ctx, live, access.TypeDataset, e.catalog.Dataset, c.DatasetID, access.RightRead)
	if code := askbi.ErrorCode(err); code != "" && code != askbi.NotFound && code != askbi.Forbidden {
		return nil, err
	} else if code != "" {
		// The chart stays readable; its dataset reference does not.
		r := e.chartResult(ctx, live, c, Dataset{}, Connection{}, nil)
		r.Datasets = []Ref{}
		return r, nil
	}
	conn, _ := e.catalog.Connection(ctx, ds.Request.ConnectionID)
	return e.chartResult(ctx, live, c, ds, conn, nil), nil
}
