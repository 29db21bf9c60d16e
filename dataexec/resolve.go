package dataexec

import (
	"context"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
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
		return &Ref{Type: r.Type, ID: d.ID, Name: d.Name, ProjectID: d.ProjectID, Info: infoLine(workspace.SearchRow{Entity: d.Ref(), ChartCount: n})}, nil
	case access.TypeChart:
		c, err := load(ctx, live, r.Type, e.catalog.Chart, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		row := workspace.SearchRow{Entity: c.Ref(), ChartType: c.Type}
		if c.DashboardID != "" {
			if d, err := e.catalog.Dashboard(ctx, c.DashboardID); err == nil {
				row.DashboardName = d.Name
			}
		}
		// A dataset out of p's reach adds nothing to the chart's scope,
		// as the chart's result shows it (chartOf).
		ds, err := load(ctx, live, access.TypeDataset, e.catalog.Dataset, c.DatasetID, access.RightRead)
		if code := askbi.ErrorCode(err); code != "" && code != askbi.NotFound && code != askbi.Forbidden {
			return nil, err
		}
		return &Ref{Type: r.Type, ID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Info: infoLine(row), Scope: scopeRef(ChartScope(c, ds))}, nil
	case access.TypeDataset:
		d, err := load(ctx, live, r.Type, e.catalog.Dataset, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		conn, _ := e.catalog.Connection(ctx, d.Request.ConnectionID)
		ref := e.scopedRef(ctx, live, d, conn)
		return &ref, nil
	case access.TypeConnection:
		c, err := load(ctx, live, r.Type, e.catalog.Connection, r.ID, access.RightRead)
		if err != nil {
			return nil, err
		}
		row := workspace.SearchRow{Entity: c.Ref(), ConnectionType: c.Type, Active: c.Active}
		return &Ref{Type: r.Type, ID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Info: infoLine(row)}, nil
	}
	return nil, askbi.Errorf(askbi.InvalidArgument, "unknown entity type %q", r.Type)
}

// chartCount counts a dashboard's charts through the catalog's search,
// which reports it for dashboards.
func (e *Executor) chartCount(ctx context.Context, live access.Principal, d workspace.Dashboard) (int, error) {
	rows, err := e.catalog.Search(ctx, workspace.CatalogQuery{TeamID: d.TeamID, Text: d.Name, Types: []access.EntityType{access.TypeDashboard},
		Projects: live.Projects, UserID: live.UserID, Limit: MaxSearchLimit})
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

// MaxDashboardCharts is the most charts DashboardCharts returns.
const MaxDashboardCharts = MaxSearchLimit

// DashboardCharts returns the charts on dashboard dashboardID that p may
// read, most recently updated first, at most MaxDashboardCharts, each a
// reference with its info line. It reads them through the catalog's
// search (a dashboard's charts carry its name there), checking each
// chart's dashboard, so the Catalog interface needs nothing more.
// Errors: NotFound for a dashboard p cannot read, ScopeRequired,
// Forbidden; those of the catalog.
func (e *Executor) DashboardCharts(ctx context.Context, p access.Principal, dashboardID string) (_ []Ref, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.DashboardCharts")
	live, err := e.begin(p, len(dashboardID))
	if err != nil {
		return nil, err
	}
	d, err := load(ctx, live, access.TypeDashboard, e.catalog.Dashboard, dashboardID, access.RightRead)
	if err != nil {
		return nil, err
	}
	rows, err := e.catalog.Search(ctx, workspace.CatalogQuery{TeamID: d.TeamID, Types: []access.EntityType{access.TypeChart},
		Projects: live.Projects, UserID: live.UserID, Limit: 10 * MaxDashboardCharts})
	if err != nil {
		return nil, err
	}
	refs := []Ref{}
	for _, row := range rows {
		if len(refs) == MaxDashboardCharts {
			break
		}
		if row.Entity.Type != access.TypeChart || row.DashboardName != d.Name {
			continue
		}
		c, err := e.catalog.Chart(ctx, row.Entity.ID)
		if err != nil || c.DashboardID != d.ID || access.Allow(live, access.RightRead, c.Ref()) != nil {
			continue
		}
		refs = append(refs, Ref{Type: access.TypeChart, ID: c.ID, Name: row.Name, ProjectID: c.ProjectID, Info: infoLine(row)})
	}
	return refs, nil
}

// DeleteDashboard deletes a dashboard and its charts. It needs
// [access.RightEditDashboard]. Errors: Forbidden, ScopeRequired, NotFound;
// Unsupported when the catalog is read-only. The attempt is audited as
// [ActionDashboardDelete].
func (e *Executor) DeleteDashboard(ctx context.Context, p access.Principal, dashboardID string) (err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.DeleteDashboard")
	target := access.Entity{Type: access.TypeDashboard, ID: dashboardID}
	defer e.audit.Track(ctx, p, ActionDashboardDelete, &target, nil)(&err)
	live, w, err := e.beginWrite(p, len(dashboardID))
	if err != nil {
		return err
	}
	d, err := e.checkDelete(ctx, live, dashboardID)
	if err != nil {
		return err
	}
	target = d.Ref()
	return notFoundAs(w.DeleteDashboard(ctx, d.ID), access.TypeDashboard)
}

// RefreshCharts re-reads chart results saved earlier (a chat's work
// summary) in one call, in order: each comes back as its chart stands now
// (a preview placed since shows as saved, everywhere it appears), or, when
// the chart was deleted or is out of p's reach, as StatusUnavailable with
// no dashboard and only the links to its datasets that p can still read.
// The results hold no data. Errors: those of the catalog.
func (e *Executor) RefreshCharts(ctx context.Context, p access.Principal, saved []ChartResult) (_ []ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.RefreshCharts")
	live, err := e.begin(p, 0)
	if err != nil {
		return nil, err
	}
	out := make([]ChartResult, len(saved))
	datasets := map[string]*Ref{} // of unavailable charts, resolved once each
	for i, old := range saved {
		c, err := load(ctx, live, access.TypeChart, e.catalog.Chart, old.Chart.ID, access.RightRead)
		switch askbi.ErrorCode(err) {
		case "":
			cr, err := e.chartOf(ctx, live, c)
			if err != nil {
				return nil, err
			}
			out[i] = *cr
			continue
		case askbi.NotFound:
		default:
			return nil, err
		}
		out[i] = ChartResult{Status: workspace.StatusUnavailable, Chart: old.Chart, ChartType: old.ChartType, Datasets: []Ref{}}
		for _, d := range old.Datasets {
			if _, done := datasets[d.ID]; done {
				continue
			}
			ref, err := e.resolve(ctx, live, access.Entity{Type: access.TypeDataset, ID: d.ID})
			if askbi.ErrorCode(err) != askbi.NotFound && err != nil {
				return nil, err
			}
			datasets[d.ID] = ref
		}
		for _, d := range old.Datasets {
			if ref := datasets[d.ID]; ref != nil {
				out[i].Datasets = append(out[i].Datasets, *ref)
			}
		}
	}
	return out, nil
}

// chartOf is the result of chart c for live principal p, without data. A
// chart whose dataset p can no longer read stays readable, without the
// dataset's reference.
func (e *Executor) chartOf(ctx context.Context, p access.Principal, c workspace.Chart) (*ChartResult, error) {
	ds, err := load(ctx, p, access.TypeDataset, e.catalog.Dataset, c.DatasetID, access.RightRead)
	if code := askbi.ErrorCode(err); code != "" && code != askbi.NotFound && code != askbi.Forbidden {
		return nil, err
	} else if code != "" {
		r := e.chartResult(ctx, p, c, workspace.Dataset{}, workspace.Connection{}, nil)
		r.Datasets = []Ref{}
		return r, nil
	}
	conn, _ := e.catalog.Connection(ctx, ds.Request.ConnectionID)
	return e.chartResult(ctx, p, c, ds, conn, nil), nil
}

// checkDelete decides whether live principal p may delete dashboardID.
func (e *Executor) checkDelete(ctx context.Context, p access.Principal, dashboardID string) (workspace.Dashboard, error) {
	return load(ctx, p, access.TypeDashboard, e.catalog.Dashboard, dashboardID, access.RightEditDashboard)
}
