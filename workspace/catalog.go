package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/askbi/askbi/access"
)

// Dashboard is a dashboard of the host's workspace. It belongs to one
// project of one team.
type Dashboard struct {
	ID        string    `json:"id"`
	TeamID    string    `json:"team_id"`
	ProjectID string    `json:"project_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Ref returns the access reference of d.
func (d Dashboard) Ref() access.Entity {
	return access.Entity{Type: access.TypeDashboard, ID: d.ID, TeamID: d.TeamID, ProjectID: d.ProjectID}
}

// ChartType is how a chart draws its data.
type ChartType string

// Chart types.
const (
	ChartLine     ChartType = "line"
	ChartBar      ChartType = "bar"
	ChartArea     ChartType = "area"
	ChartPie      ChartType = "pie"
	ChartDoughnut ChartType = "doughnut"
	ChartTable    ChartType = "table"
	ChartKPI      ChartType = "kpi"
)

// ChartTypes lists every chart type in documented order.
var ChartTypes = []ChartType{ChartLine, ChartBar, ChartArea, ChartPie, ChartDoughnut, ChartTable, ChartKPI}

// Valid reports whether t is one of [ChartTypes].
func (t ChartType) Valid() bool { return slices.Contains(ChartTypes, t) }

// ChartStatus says whether a chart is a temporary preview or placed on a
// dashboard.
type ChartStatus string

// Chart statuses.
const (
	StatusPreview ChartStatus = "preview"
	StatusSaved   ChartStatus = "saved"
	// StatusUnavailable is a chart that no longer exists or is out of
	// reach, as a chart result reports it.
	StatusUnavailable ChartStatus = "unavailable"
)

// Chart draws one dataset. A chart with no DashboardID is a temporary
// preview, a private draft of its creator (CreatedBy): no other member
// reaches it, in search, reads, changes or placement, and a preview
// with no recorded creator reaches nobody. PlaceChart puts it on a
// dashboard, in place, and from then on it is the team's.
type Chart struct {
	ID     string `json:"id"`
	TeamID string `json:"team_id"`
	// ProjectID is the dashboard's project for a saved chart, and the
	// dataset's project for a preview.
	ProjectID   string    `json:"project_id"`
	DashboardID string    `json:"dashboard_id,omitempty"` // "" for a preview
	Name        string    `json:"name"`
	Type        ChartType `json:"chart_type"`
	DatasetID   string    `json:"dataset_id"`
	// XField names the dataset field that gives the labels. It may be
	// empty only for a KPI chart.
	XField  string   `json:"x_field,omitempty"`
	YFields []string `json:"y_fields"`
	// Filters are applied to the dataset's rows before the chart draws
	// them: the filters and date range of the answer the chart was made
	// from. They are set when the chart is created and kept after.
	Filters []Filter `json:"filters,omitempty"`
	// CreatedBy is the user who created the chart (Executor sets it on
	// every preview it creates), kept as it is by every change.
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Ref returns the access reference of c: a preview is private to its
// creator (access.Entity.Private).
func (c Chart) Ref() access.Entity {
	e := access.Entity{Type: access.TypeChart, ID: c.ID, TeamID: c.TeamID, ProjectID: c.ProjectID}
	if c.DashboardID == "" {
		e.Private, e.OwnerID = true, c.CreatedBy
	}
	return e
}

// Status returns [StatusPreview] for a chart on no dashboard, else
// [StatusSaved].
func (c Chart) Status() ChartStatus {
	if c.DashboardID == "" {
		return StatusPreview
	}
	return StatusSaved
}

// Dataset is a saved data request that charts draw. Version changes
// whenever the dataset's request changes; it is part of the cache key.
type Dataset struct {
	ID        string  `json:"id"`
	TeamID    string  `json:"team_id"`
	ProjectID string  `json:"project_id"`
	Name      string  `json:"name"`
	Version   int64   `json:"version"`
	Request   Request `json:"request"`
	// Scope, when set, declares the part of its source's data the
	// dataset holds; its saved filters (Request.Filters) limit it too.
	// Ask does not answer a broader request from a scoped dataset.
	Scope     *Scope    `json:"scope,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Conditions returns the conditions that limit d as stored: its declared
// scope's filters, then its saved filters (Request.Filters), a condition
// named in both appearing twice. DatasetScope names each once.
func (d Dataset) Conditions() []Filter {
	var out []Filter
	if d.Scope != nil {
		out = append(out, d.Scope.Filters...)
	}
	return append(out, d.Request.Filters...)
}

// Ref returns the access reference of d.
func (d Dataset) Ref() access.Entity {
	return access.Entity{Type: access.TypeDataset, ID: d.ID, TeamID: d.TeamID, ProjectID: d.ProjectID}
}

// Request is what a dataset (or a preview) asks its connection for: either
// SQL (SQL sources) or Tool and Arguments (MCP sources), the output fields
// that map source rows to named values, and the variables the SQL or the
// arguments reference as {{name}}.
type Request struct {
	ConnectionID string          `json:"connection_id"`
	SQL          string          `json:"sql,omitempty"`
	Tool         string          `json:"tool,omitempty"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	// Fields are the output field paths (configuration.output.fields).
	// Empty means the source's columns pass through as they are.
	Fields    Fields     `json:"fields,omitempty"`
	Variables []Variable `json:"variables,omitempty"`
	// Filters are the dataset's saved filters: they apply to every run,
	// before (and together with) the caller's, and make the dataset
	// scoped (DatasetScope).
	Filters []Filter `json:"filters,omitempty"`
}

// Field is one named output value and the path that selects it from a
// source row: the first element names a column (by name, or column_N for
// the Nth column, from zero), and each later element is an object key or
// an array index into the cell's JSON.
type Field struct {
	Name string   `json:"name"`
	Path []string `json:"path"`
}

// Fields is an ordered list of output fields. In JSON it is the object form
// of configuration.output.fields, {"page": ["column_0"], "visitors":
// ["column_1", "0"]}, and it keeps the object's key order both ways. Path
// elements may be JSON strings or integers.
type Fields []Field

// Names returns the field names in order.
func (fs Fields) Names() []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// MarshalJSON writes fs as a JSON object in order.
func (fs Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(f.Name)
		if err != nil {
			return nil, err
		}
		path, err := json.Marshal(f.Path)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(path)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the object form, keeping key order. null gives nil.
// A repeated name or a path that is not an array of strings or integers is
// an error.
func (fs *Fields) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*fs = nil
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("fields: want an object of field paths")
	}
	var out Fields
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string) // object keys are always strings
		if seen[name] {
			return fmt.Errorf("fields: field %q appears twice", name)
		}
		seen[name] = true
		var raw []any
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("fields: field %q: path must be an array", name)
		}
		path := make([]string, len(raw))
		for i, el := range raw {
			switch v := el.(type) {
			case string:
				path[i] = v
			case json.Number:
				if _, err := v.Int64(); err != nil {
					return fmt.Errorf("fields: field %q: path element %s is not an integer", name, v)
				}
				path[i] = v.String()
			default:
				return fmt.Errorf("fields: field %q: path elements must be strings or integers", name)
			}
		}
		out = append(out, Field{Name: name, Path: path})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return err
	}
	*fs = out
	return nil
}

// VariableType is the type of a dataset variable's value.
type VariableType string

// Variable types. A date is YYYY-MM-DD.
const (
	VarNumber  VariableType = "number"
	VarString  VariableType = "string"
	VarDate    VariableType = "date"
	VarBoolean VariableType = "boolean"
)

// Variable is a value a dataset's SQL or tool arguments reference as
// {{Name}}. Callers set it per run; Default is used when they do not.
type Variable struct {
	Name string       `json:"name"`
	Type VariableType `json:"type"`
	// Default is a JSON value of Type (a number, string or boolean; a date
	// is a "YYYY-MM-DD" string). nil means the variable is required.
	Default any `json:"default,omitempty"`
}

// Connection is a data connection of the host. It never holds
// credentials: the host's Sources turn it into a Source.
type Connection struct {
	ID     string `json:"id"`
	TeamID string `json:"team_id"`
	// ProjectID is "" for a team-wide connection.
	ProjectID string `json:"project_id,omitempty"`
	Name      string `json:"name"`
	// Type names the kind of source: "postgres", "mysql", "mcp", ...
	Type      string    `json:"type"`
	Active    bool      `json:"active"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Ref returns the access reference of c.
func (c Connection) Ref() access.Entity {
	return access.Entity{Type: access.TypeConnection, ID: c.ID, TeamID: c.TeamID, ProjectID: c.ProjectID}
}

// Catalog is the host's workspace as the Executor reads it: its
// dashboards, charts, datasets and connections. IDs are unique across
// teams. The Executor checks access on everything a Catalog returns, so a
// Catalog need not know principals. Implementations must be safe for
// concurrent use; workspacetest.Run proves one.
//
// A Catalog that may also be changed implements [CatalogWriter]. The split
// lets a host expose a workspace it cannot (or will not) let the assistant
// change, such as a read-only replica or a remote BI product's API, with
// five methods instead of ten stubs.
type Catalog interface {
	// Dashboard returns one dashboard, or NotFound.
	Dashboard(ctx context.Context, id string) (Dashboard, error)
	// Chart returns one chart, or NotFound.
	Chart(ctx context.Context, id string) (Chart, error)
	// Dataset returns one dataset with its request, or NotFound.
	Dataset(ctx context.Context, id string) (Dataset, error)
	// Connection returns one connection, or NotFound.
	Connection(ctx context.Context, id string) (Connection, error)

	// Search lists entities of q.TeamID whose name contains q.Text (case
	// insensitive, literally: no wildcards; "" matches all), of q.Types
	// (all four when empty), in q.Projects or team-wide, and reached by
	// q.UserID (a preview only when q.UserID created it), most recently
	// updated first (ties by ID), at most q.Limit. Each row's Entity is
	// its entity's Ref. It returns no error codes of its own.
	Search(ctx context.Context, q CatalogQuery) ([]SearchRow, error)
}

// CatalogWriter is implemented by catalogs the Executor may change. It is
// optional; the Executor finds it on its Catalog with a type assertion,
// once, in NewExecutor. Without it every write (an exploration save,
// CreateChartPreview, UpdateChart, PlaceChart, DeleteDashboard) answers
// Unsupported before it reads the catalog or runs a source query. Its
// changes must be visible to the same value's Catalog reads at once.
type CatalogWriter interface {
	// CreateChart stores a new chart and returns it. An empty ID is
	// assigned by the catalog; an ID in use gives Conflict.
	CreateChart(ctx context.Context, c Chart) (Chart, error)
	// UpdateChart replaces the Name, Type, DatasetID, XField, YFields and
	// UpdatedAt of chart c.ID, leaving its team, project, dashboard,
	// CreatedBy and CreatedAt as stored, and returns the stored chart. It
	// returns NotFound for an unknown chart.
	UpdateChart(ctx context.Context, c Chart) (Chart, error)
	// PlaceChart puts preview chart chartID on dashboardID in one atomic
	// step: the chart keeps its ID and CreatedBy and takes the
	// dashboard's ID and project, and UpdatedAt at. It returns NotFound
	// for an unknown chart or dashboard, and Conflict when the chart is
	// not a preview (also when a concurrent call placed it first).
	PlaceChart(ctx context.Context, chartID, dashboardID string, at time.Time) (Chart, error)
	// CreateDataset stores a new dataset together with its request, in one
	// transaction: both or neither. An empty ID is assigned by the catalog;
	// an ID in use gives Conflict and changes nothing. A call that fails
	// for any reason must leave nothing behind: the Executor saves a
	// dataset with exactly one call, never retries it, and has no way to
	// undo half of one.
	CreateDataset(ctx context.Context, d Dataset) (Dataset, error)
	// DeleteDashboard deletes a dashboard and its charts, or returns
	// NotFound. Datasets stay.
	DeleteDashboard(ctx context.Context, id string) error
}

// ConnectionWriter is implemented by catalogs that keep the connections
// askbi itself manages (remote MCP connections, which package
// dataexec/mcpsource creates, changes and deletes), so that search, the
// context picker and the Executor see them like the host's own. It is
// separate from [CatalogWriter]: a host can take askbi's connections into a
// catalog the assistant may not otherwise change. Its changes must be
// visible to the same value's Catalog reads at once.
type ConnectionWriter interface {
	// SaveConnection inserts or replaces connection c (by ID).
	SaveConnection(ctx context.Context, c Connection) error
	// DeleteConnection removes connection id; removing an unknown one is
	// not an error. Datasets on it stay and answer Unavailable.
	DeleteConnection(ctx context.Context, id string) error
}

// CatalogQuery is a workspace search pushed into the Catalog.
type CatalogQuery struct {
	TeamID   string
	Text     string
	Types    []access.EntityType // dashboard, chart, dataset, connection; empty means all
	Projects access.Projects     // the caller's live project access
	// UserID is the caller: the previews it created are listed, other
	// previews are not (access.Entity.ReachedBy). "" lists no preview.
	UserID string
	Limit  int // at least 1
}

// SearchRow is one Catalog search hit, with what its info line needs.
type SearchRow struct {
	Entity    access.Entity
	Name      string
	UpdatedAt time.Time

	// ChartCount is a dashboard's number of charts.
	ChartCount int
	// ChartType and DashboardName ("" for a preview) describe a chart.
	ChartType     ChartType
	DashboardName string
	// ConnectionName, ConnectionType and Active describe a dataset's
	// connection, or a connection itself.
	ConnectionName string
	ConnectionType string
	Active         bool
	// Scope is the conditions that limit a dataset as stored
	// (Dataset.Conditions), for its info line; the executor names each
	// once (DatasetScope).
	Scope []Filter
}
