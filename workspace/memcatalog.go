package workspace

import (
	"cmp"
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// MemoryCatalog is an in-memory Catalog and [CatalogWriter] for tests,
// examples and the embedded default. It is safe for concurrent use and returns copies, so
// callers may change what they get. The zero value is not usable; call
// [NewMemoryCatalog].
type MemoryCatalog struct {
	mu          sync.RWMutex
	dashboards  map[string]Dashboard
	charts      map[string]Chart
	datasets    map[string]Dataset
	connections map[string]Connection
}

// NewMemoryCatalog returns an empty catalog.
func NewMemoryCatalog() *MemoryCatalog {
	return &MemoryCatalog{
		dashboards:  map[string]Dashboard{},
		charts:      map[string]Chart{},
		datasets:    map[string]Dataset{},
		connections: map[string]Connection{},
	}
}

// PutDashboard adds or replaces a dashboard.
func (m *MemoryCatalog) PutDashboard(d Dashboard) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dashboards[d.ID] = d
}

// PutChart adds or replaces a chart.
func (m *MemoryCatalog) PutChart(c Chart) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.charts[c.ID] = cloneChart(c)
}

// PutDataset adds or replaces a dataset.
func (m *MemoryCatalog) PutDataset(d Dataset) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.datasets[d.ID] = cloneDataset(d)
}

// PutConnection adds or replaces a connection.
func (m *MemoryCatalog) PutConnection(c Connection) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.connections[c.ID] = c
}

// Dashboard implements Catalog.
func (m *MemoryCatalog) Dashboard(_ context.Context, id string) (Dashboard, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.dashboards[id]
	if !ok {
		return Dashboard{}, askbi.Errorf(askbi.NotFound, "dashboard not found")
	}
	return d, nil
}

// Chart implements Catalog.
func (m *MemoryCatalog) Chart(_ context.Context, id string) (Chart, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.charts[id]
	if !ok {
		return Chart{}, askbi.Errorf(askbi.NotFound, "chart not found")
	}
	return cloneChart(c), nil
}

// Dataset implements Catalog.
func (m *MemoryCatalog) Dataset(_ context.Context, id string) (Dataset, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	d, ok := m.datasets[id]
	if !ok {
		return Dataset{}, askbi.Errorf(askbi.NotFound, "dataset not found")
	}
	return cloneDataset(d), nil
}

// Connection implements Catalog.
func (m *MemoryCatalog) Connection(_ context.Context, id string) (Connection, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.connections[id]
	if !ok {
		return Connection{}, askbi.Errorf(askbi.NotFound, "connection not found")
	}
	return c, nil
}

// Search implements Catalog.
func (m *MemoryCatalog) Search(_ context.Context, q CatalogQuery) ([]SearchRow, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	text := strings.ToLower(q.Text)
	want := func(e access.Entity, name string) bool {
		return e.TeamID == q.TeamID &&
			(len(q.Types) == 0 || slices.Contains(q.Types, e.Type)) &&
			(e.ProjectID == "" || q.Projects.Contains(e.ProjectID)) &&
			e.ReachedBy(q.UserID) &&
			strings.Contains(strings.ToLower(name), text)
	}
	var rows []SearchRow
	for _, d := range m.dashboards {
		if want(d.Ref(), d.Name) {
			n := 0
			for _, c := range m.charts {
				if c.DashboardID == d.ID {
					n++
				}
			}
			rows = append(rows, SearchRow{Entity: d.Ref(), Name: d.Name, UpdatedAt: d.UpdatedAt, ChartCount: n})
		}
	}
	for _, c := range m.charts {
		if want(c.Ref(), c.Name) {
			r := SearchRow{Entity: c.Ref(), Name: c.Name, UpdatedAt: c.UpdatedAt, ChartType: c.Type}
			if d, ok := m.dashboards[c.DashboardID]; ok {
				r.DashboardName = d.Name
			}
			rows = append(rows, r)
		}
	}
	for _, d := range m.datasets {
		if want(d.Ref(), d.Name) {
			r := SearchRow{Entity: d.Ref(), Name: d.Name, UpdatedAt: d.UpdatedAt, Scope: d.Conditions()}
			if c, ok := m.connections[d.Request.ConnectionID]; ok {
				r.ConnectionName, r.ConnectionType, r.Active = c.Name, c.Type, c.Active
			}
			rows = append(rows, r)
		}
	}
	for _, c := range m.connections {
		if want(c.Ref(), c.Name) {
			rows = append(rows, SearchRow{Entity: c.Ref(), Name: c.Name, UpdatedAt: c.UpdatedAt,
				ConnectionName: c.Name, ConnectionType: c.Type, Active: c.Active})
		}
	}
	slices.SortFunc(rows, func(a, b SearchRow) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Entity.ID, b.Entity.ID)
	})
	if len(rows) > q.Limit {
		rows = rows[:max(q.Limit, 0)]
	}
	return rows, nil
}

// CreateChart implements [CatalogWriter].
func (m *MemoryCatalog) CreateChart(_ context.Context, c Chart) (Chart, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.ID == "" {
		c.ID = m.newID("chart", func(id string) bool { _, ok := m.charts[id]; return ok })
	} else if _, ok := m.charts[c.ID]; ok {
		return Chart{}, askbi.Errorf(askbi.Conflict, "chart already exists")
	}
	m.charts[c.ID] = cloneChart(c)
	return cloneChart(c), nil
}

// UpdateChart implements [CatalogWriter].
func (m *MemoryCatalog) UpdateChart(_ context.Context, c Chart) (Chart, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.charts[c.ID]
	if !ok {
		return Chart{}, askbi.Errorf(askbi.NotFound, "chart not found")
	}
	old.Name, old.Type, old.DatasetID, old.XField = c.Name, c.Type, c.DatasetID, c.XField
	old.YFields, old.UpdatedAt = slices.Clone(c.YFields), c.UpdatedAt
	m.charts[c.ID] = old
	return cloneChart(old), nil
}

// PlaceChart implements [CatalogWriter].
func (m *MemoryCatalog) PlaceChart(_ context.Context, chartID, dashboardID string, at time.Time) (Chart, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.charts[chartID]
	if !ok {
		return Chart{}, askbi.Errorf(askbi.NotFound, "chart not found")
	}
	d, ok := m.dashboards[dashboardID]
	if !ok {
		return Chart{}, askbi.Errorf(askbi.NotFound, "dashboard not found")
	}
	if c.Status() != StatusPreview {
		return Chart{}, askbi.Errorf(askbi.Conflict, "the chart is already on a dashboard")
	}
	c.DashboardID, c.ProjectID, c.UpdatedAt = d.ID, d.ProjectID, at
	m.charts[chartID] = c
	return cloneChart(c), nil
}

// CreateDataset implements [CatalogWriter]. The dataset and its request are
// one value here, so the save is atomic by construction.
func (m *MemoryCatalog) CreateDataset(_ context.Context, d Dataset) (Dataset, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d.ID == "" {
		d.ID = m.newID("dataset", func(id string) bool { _, ok := m.datasets[id]; return ok })
	} else if _, ok := m.datasets[d.ID]; ok {
		return Dataset{}, askbi.Errorf(askbi.Conflict, "dataset already exists")
	}
	m.datasets[d.ID] = cloneDataset(d)
	return cloneDataset(d), nil
}

// DeleteDashboard implements [CatalogWriter].
func (m *MemoryCatalog) DeleteDashboard(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.dashboards[id]; !ok {
		return askbi.Errorf(askbi.NotFound, "dashboard not found")
	}
	delete(m.dashboards, id)
	for cid, c := range m.charts {
		if c.DashboardID == id {
			delete(m.charts, cid)
		}
	}
	return nil
}

// DeleteDataset removes a dataset, as the host's own UI would; its charts
// stay and report it missing. Deleting an unknown dataset does nothing.
func (m *MemoryCatalog) DeleteDataset(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.datasets, id)
}

// DeleteChart removes a chart, as the host's own UI would. Deleting an
// unknown chart does nothing.
func (m *MemoryCatalog) DeleteChart(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.charts, id)
}

// newID returns an unused random ID "<prefix>_<16 chars>"; m.mu is held.
// Random, not counted, so an ID is never reused after a restart that
// re-seeds the catalog.
func (m *MemoryCatalog) newID(prefix string, used func(string) bool) string {
	for {
		if id := prefix + "_" + strings.ToLower(rand.Text()[:16]); !used(id) {
			return id
		}
	}
}

func cloneChart(c Chart) Chart {
	c.YFields = slices.Clone(c.YFields)
	c.Filters = slices.Clone(c.Filters)
	return c
}

func cloneDataset(d Dataset) Dataset {
	d.Request = d.Request.Clone()
	if d.Scope != nil {
		sc := *d.Scope
		sc.Filters = slices.Clone(sc.Filters)
		d.Scope = &sc
	}
	return d
}

// Clone returns r sharing no slice with it: a caller may change the copy.
func (r Request) Clone() Request {
	r.Arguments = slices.Clone(r.Arguments)
	r.Fields = slices.Clone(r.Fields)
	for i := range r.Fields {
		r.Fields[i].Path = slices.Clone(r.Fields[i].Path)
	}
	r.Variables = slices.Clone(r.Variables)
	r.Filters = slices.Clone(r.Filters)
	return r
}

// SaveConnection implements [ConnectionWriter].
func (m *MemoryCatalog) SaveConnection(_ context.Context, c Connection) error {
	m.PutConnection(c)
	return nil
}

// DeleteConnection implements [ConnectionWriter]. Deleting an unknown
// connection does nothing; datasets on it stay and report it gone.
func (m *MemoryCatalog) DeleteConnection(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.connections, id)
	return nil
}
