package dataexec

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// Class is how much a call can change, which decides whether it needs a
// person's approval in Ask and what an MCP client is told about it.
type Class string

// Classes. An MCP tool's annotations map as: destructiveHint=true →
// destructive; readOnlyHint=true → read-only; readOnlyHint=false →
// mutating; missing → unknown, treated as destructive.
const (
	ClassReadOnly    Class = "read_only"   // runs without approval
	ClassMutating    Class = "mutating"    // needs an approval
	ClassDestructive Class = "destructive" // always needs an approval
	ClassUnknown     Class = "unknown"     // treated as destructive
)

// Classes lists every class in documented order.
var Classes = []Class{ClassReadOnly, ClassMutating, ClassDestructive, ClassUnknown}

// ClassFromAnnotations classifies a tool from its MCP annotations (nil
// pointers mean the hint is missing). The hints are untrusted: a missing
// one never makes a tool safer. Read-only needs readOnlyHint true;
// mutating needs readOnlyHint false and destructiveHint explicitly false,
// since MCP's default for a missing destructiveHint is true; anything
// less is unknown, which is treated as destructive.
func ClassFromAnnotations(readOnly, destructive *bool) Class {
	switch {
	case destructive != nil && *destructive:
		return ClassDestructive
	case readOnly != nil && *readOnly:
		return ClassReadOnly
	case readOnly != nil && destructive != nil:
		return ClassMutating
	}
	return ClassUnknown
}

// Gated reports whether calls of class c need an approval.
func (c Class) Gated() bool { return c != ClassReadOnly }

// Hints returns the MCP annotations that describe c.
func (c Class) Hints() (readOnly, destructive bool) {
	return c == ClassReadOnly, c == ClassDestructive || c == ClassUnknown
}

// Action is one product action, defined once for every adapter: its name,
// the right it needs (whose scopes decide which tokens may see it), its
// class, its input type In with the JSON Schema of it (built from this
// package's own enums), and the executor call that does it, returning the
// safe result Out. The chat and MCP adapters compose their tools from
// actions and differ only in wording, size budget and output shaping.
type Action[In, Out any] struct {
	Name  string
	Right access.Right
	Class Class
	// Input is the JSON Schema of In: an object, closed to unknown
	// properties.
	Input json.RawMessage
	Run   func(e *Executor, ctx context.Context, p access.Principal, in In) (Out, error)
	// Check, set on the actions that change the workspace, decides without
	// changing anything or running a query whether p may Run the action
	// with in: the very checks Run makes before it touches data (access,
	// the entities' state, the spec), so an adapter can refuse to propose
	// a change the user could never make. Run still decides on its own.
	Check func(e *Executor, ctx context.Context, p access.Principal, in In) error
}

// FilterOps lists every filter operator in documented order.
var FilterOps = []workspace.FilterOp{workspace.OpEq, workspace.OpNe, workspace.OpGt, workspace.OpGte, workspace.OpLt, workspace.OpLte, workspace.OpContains, workspace.OpIn}

// SearchTypes lists the entity types workspace search finds.
var SearchTypes = []access.EntityType{access.TypeDashboard, access.TypeChart, access.TypeDataset, access.TypeConnection}

// Inputs of the actions that have no input type of their own elsewhere.
type (
	// DatasetRef names one dataset.
	DatasetRef struct {
		DatasetID string `json:"dataset_id"`
	}
	// DatasetRun is a dataset run with its parameters.
	DatasetRun struct {
		DatasetID string `json:"dataset_id"`
		Params
	}
	// ChartRun is a chart's data read with its parameters.
	ChartRun struct {
		ChartID string `json:"chart_id"`
		Params
	}
	// ChartChange changes a chart; fields left empty keep their values.
	ChartChange struct {
		ChartID string `json:"chart_id"`
		Name    string `json:"name,omitempty"`
		// Type, XField and YFields as in ChartSpec.
		Type    workspace.ChartType `json:"chart_type,omitempty"`
		XField  string              `json:"x_field,omitempty"`
		YFields []string            `json:"y_fields,omitempty"`
	}
	// Placement puts a preview chart on a dashboard.
	Placement struct {
		ChartID     string `json:"chart_id"`
		DashboardID string `json:"dashboard_id"`
	}
	// Placements put several preview charts on one dashboard.
	Placements struct {
		ChartIDs    []string `json:"chart_ids"`
		DashboardID string   `json:"dashboard_id"`
	}
	// DashboardRef names one dashboard.
	DashboardRef struct {
		DashboardID string `json:"dashboard_id"`
	}
	// Deleted is the result of a deletion.
	Deleted struct {
		Deleted Ref `json:"deleted"`
	}
)

// The product actions.
var (
	// SearchAction finds dashboards, charts, datasets and connections by
	// name (Executor.Search).
	SearchAction = Action[SearchQuery, []Ref]{
		Name: "search_workspace", Right: access.RightRead, Class: ClassReadOnly,
		Input: object(props{
			"query": {"type": "string", "maxLength": maxSearchText},
			"types": {"type": "array", "maxItems": len(SearchTypes), "items": enum(SearchTypes)},
			"limit": limitSchema,
		}),
		Run: (*Executor).Search,
	}
	// DatasetFieldsAction reads a dataset's fields by running it.
	DatasetFieldsAction = Action[DatasetRef, *Result]{
		Name: "read_dataset_fields", Right: access.RightRead, Class: ClassReadOnly,
		Input: object(props{"dataset_id": idSchema}, "dataset_id"),
		Run: func(e *Executor, ctx context.Context, p access.Principal, in DatasetRef) (*Result, error) {
			return e.RunDataset(ctx, p, in.DatasetID, Params{})
		},
	}
	// RunDatasetAction runs a dataset (Executor.RunDataset).
	RunDatasetAction = Action[DatasetRun, *Result]{
		Name: "run_dataset", Right: access.RightRead, Class: ClassReadOnly,
		Input: object(withParams(props{"dataset_id": idSchema}), "dataset_id"),
		Run: func(e *Executor, ctx context.Context, p access.Principal, in DatasetRun) (*Result, error) {
			return e.RunDataset(ctx, p, in.DatasetID, in.Params)
		},
	}
	// ChartDataAction reads a chart's labels and series
	// (Executor.ChartData).
	ChartDataAction = Action[ChartRun, *ChartResult]{
		Name: "get_chart_data", Right: access.RightRead, Class: ClassReadOnly,
		Input: object(withParams(props{"chart_id": idSchema}), "chart_id"),
		Run: func(e *Executor, ctx context.Context, p access.Principal, in ChartRun) (*ChartResult, error) {
			return e.ChartData(ctx, p, in.ChartID, in.Params)
		},
	}
	// ChartPreviewAction creates a temporary chart from a dataset
	// (Executor.CreateChartPreview). A preview is a private draft: it is
	// on no dashboard and changes no saved chart, so both adapters treat
	// it as read-only (Ask runs it without an approval); tokens still need
	// the charts:preview scope, which is off by default.
	ChartPreviewAction = Action[ChartSpec, *ChartResult]{
		Name: "create_chart_preview", Right: access.RightPreviewChart, Class: ClassReadOnly,
		Input: object(chartProps(props{"dataset_id": idSchema, "filters": filtersSchema}), "dataset_id", "chart_type", "y_fields", "name"),
		Run:   (*Executor).CreateChartPreview,
	}
	// UpdateChartAction changes a chart (Executor.UpdateChart).
	UpdateChartAction = Action[ChartChange, *ChartResult]{
		Name: "update_chart", Right: access.RightRead, Class: ClassMutating,
		Input: object(chartProps(props{"chart_id": idSchema}), "chart_id"),
		Run:   (*Executor).UpdateChart,
		Check: func(e *Executor, ctx context.Context, p access.Principal, in ChartChange) error {
			live, err := e.begin(p, changeSize(in))
			if err == nil {
				_, _, _, err = e.checkUpdate(ctx, live, in)
			}
			return err
		},
	}
	// PlaceChartAction puts a preview chart on a dashboard
	// (Executor.PlaceChart).
	PlaceChartAction = Action[Placement, *ChartResult]{
		Name: "add_preview_to_dashboard", Right: access.RightEditDashboard, Class: ClassMutating,
		Input: object(props{"chart_id": idSchema, "dashboard_id": idSchema}, "chart_id", "dashboard_id"),
		Run: func(e *Executor, ctx context.Context, p access.Principal, in Placement) (*ChartResult, error) {
			return e.PlaceChart(ctx, p, in.ChartID, in.DashboardID)
		},
		Check: func(e *Executor, ctx context.Context, p access.Principal, in Placement) error {
			live, err := e.begin(p, 0)
			if err == nil {
				_, _, _, err = e.checkPlace(ctx, live, in.ChartID, in.DashboardID)
			}
			return err
		},
	}
	// PlaceChartsAction puts several preview charts on one dashboard in
	// one approved call (Executor.PlaceCharts); idempotent, so a retry
	// places only what is left.
	PlaceChartsAction = Action[Placements, *Placed]{
		Name: "add_previews_to_dashboard", Right: access.RightEditDashboard, Class: ClassMutating,
		Input: object(props{
			"chart_ids":    {"type": "array", "minItems": 1, "maxItems": MaxPlacements, "items": idSchema},
			"dashboard_id": idSchema,
		}, "chart_ids", "dashboard_id"),
		Run: func(e *Executor, ctx context.Context, p access.Principal, in Placements) (*Placed, error) {
			return e.PlaceCharts(ctx, p, in.ChartIDs, in.DashboardID)
		},
		Check: func(e *Executor, ctx context.Context, p access.Principal, in Placements) error {
			live, err := e.begin(p, 0)
			if err == nil {
				_, _, err = e.checkPlaceAll(ctx, live, in.ChartIDs, in.DashboardID)
			}
			return err
		},
	}
	// DeleteDashboardAction deletes a dashboard and its charts
	// (Executor.DeleteDashboard).
	DeleteDashboardAction = Action[DashboardRef, Deleted]{
		Name: "delete_dashboard", Right: access.RightEditDashboard, Class: ClassDestructive,
		Input: object(props{"dashboard_id": idSchema}, "dashboard_id"),
		Check: func(e *Executor, ctx context.Context, p access.Principal, in DashboardRef) error {
			live, err := e.begin(p, 0)
			if err == nil {
				_, err = e.checkDelete(ctx, live, in.DashboardID)
			}
			return err
		},
		Run: func(e *Executor, ctx context.Context, p access.Principal, in DashboardRef) (Deleted, error) {
			err := e.DeleteDashboard(ctx, p, in.DashboardID)
			return Deleted{Deleted: Ref{Type: access.TypeDashboard, ID: in.DashboardID}}, err
		},
	}
	// ExploreAction inspects sources, previews a request and saves it as
	// a dataset (Executor.Explore).
	ExploreAction = Action[Exploration, *Explored]{
		Name: "explore_data", Right: access.RightExplore, Class: ClassMutating,
		Input: object(props{
			"operation":     enum([]ExploreOp{ExploreInspect, ExplorePreview, ExploreSave}),
			"connection_id": idSchema,
			"table":         {"type": "string", "maxLength": 200},
			"sql":           {"type": "string", "maxLength": 20000},
			"tool":          {"type": "string", "maxLength": 64},
			"arguments":     {"type": "object"},
			"fields":        {"type": "object", "maxProperties": maxFields},
			"name":          nameSchema,
			"dashboard_id":  idSchema,
		}, "operation"),
		Run: (*Executor).Explore,
	}
)

// ExploreOp is what an exploration does.
type ExploreOp string

// Exploration operations.
const (
	// ExploreInspect lists the connections the principal may explore, or
	// with ConnectionID one connection's tables (for an MCP connection,
	// its approved read-only tools, kind "mcp_tool", with their arguments
	// as columns), or with Table too one table's columns.
	ExploreInspect ExploreOp = "inspect"
	// ExplorePreview runs a bounded read-only request.
	ExplorePreview ExploreOp = "preview"
	// ExploreSave previews a request, then saves it as a dataset on
	// DashboardID.
	ExploreSave ExploreOp = "save"
)

// Exploration is the input of [ExploreAction].
type Exploration struct {
	Operation    ExploreOp       `json:"operation"`
	ConnectionID string          `json:"connection_id,omitempty"`
	Table        string          `json:"table,omitempty"`
	SQL          string          `json:"sql,omitempty"`
	Tool         string          `json:"tool,omitempty"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	// Fields are the output field paths (configuration.output.fields)
	// that select named values from a tool's rows.
	Fields      workspace.Fields `json:"fields,omitempty"`
	Name        string           `json:"name,omitempty"`
	DashboardID string           `json:"dashboard_id,omitempty"`
}

// Rights are the rights exploration e needs besides RightExplore on its
// connection: a save needs those of saving a dataset on the dashboard.
func (e Exploration) Rights() []access.Right {
	if e.Operation == ExploreSave {
		return saveRights
	}
	return nil
}

// Explored is what an exploration found: the connections, the tables, or
// the preview (and for a save, the dataset).
type Explored struct {
	Operation   ExploreOp  `json:"operation"`
	Connections []Ref      `json:"connections,omitempty"`
	Tables      []Relation `json:"tables,omitempty"`
	Dataset     *Ref       `json:"dataset,omitempty"`
	Preview     *Result    `json:"preview,omitempty"`
}

// Explore runs one exploration operation, the one way into a workspace's
// connections (see [ExploreAction] and [ExploreOp]):
//
//   - inspect without ConnectionID lists the connections p may explore,
//     most recently updated first, at most MaxSearchLimit, each with its
//     type and state as info line;
//   - inspect with ConnectionID describes what the connection's source may
//     read: without Table its relations (at most Options.InspectLimit)
//     without columns, with Table that one relation with its columns;
//   - preview runs a request on the connection and returns a bounded result
//     (Options.PreviewRows), never cached. Variables take their defaults.
//     Without output fields, cells holding objects or arrays are returned
//     as they are, so the caller can see what paths to write;
//   - save previews the request and only when the preview returns rows
//     that map cleanly saves it as a dataset in DashboardID's project,
//     atomically with its request (one CatalogWriter.CreateDataset call).
//     An empty, invalid or timed-out preview never saves. When the request
//     has no output fields, the preview's columns become its fields, so
//     later filters and charts can be checked before anything runs. The
//     attempt is audited as ActionDatasetSave.
//
// Every operation needs [access.RightExplore] on the connection (on the team
// for the list); save also needs [access.RightSaveDataset] and
// [access.RightEditDashboard] on the dashboard, and a project connection must
// belong to the dashboard's project.
//
// Errors: InvalidArgument for an unknown operation, a field the operation
// requires, or a bad request, name or dashboard (the message names the
// field); TooLarge, Forbidden, ScopeRequired; NotFound (also for an
// unknown table); Unsupported when the source cannot be inspected or the
// catalog is read-only (save); Unavailable; Timeout; and those of
// RunDataset for a preview's run. A save answers InvalidResult for an empty
// preview, a text-only tool result or duplicate column names, and Conflict
// from the catalog.
func (e *Executor) Explore(ctx context.Context, p access.Principal, in Exploration) (_ *Explored, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.Explore")
	need := func(field, v string) error {
		if v == "" {
			return askbi.Errorf(askbi.InvalidArgument, "%s: required for %s", field, in.Operation)
		}
		return nil
	}
	out := &Explored{Operation: in.Operation}
	req := workspace.Request{ConnectionID: in.ConnectionID, SQL: in.SQL, Tool: in.Tool, Arguments: in.Arguments, Fields: in.Fields}
	switch in.Operation {
	case ExploreInspect:
		if in.ConnectionID == "" {
			out.Connections, err = e.connections(ctx, p)
			return out, err
		}
		out.Tables, err = e.inspect(ctx, p, in.ConnectionID, in.Table)
		if out.Tables == nil {
			out.Tables = []Relation{}
		}
		return out, err
	case ExplorePreview:
		if err := need("connection_id", in.ConnectionID); err != nil {
			return nil, err
		}
		out.Preview, err = e.preview(ctx, p, req)
		return out, err
	case ExploreSave:
		for _, f := range [][2]string{{"connection_id", in.ConnectionID}, {"name", in.Name}, {"dashboard_id", in.DashboardID}} {
			if err := need(f[0], f[1]); err != nil {
				return nil, err
			}
		}
		out.Dataset, out.Preview, err = e.saveDataset(ctx, p, in.Name, in.DashboardID, req)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, askbi.Errorf(askbi.InvalidArgument, "operation: must be inspect, preview or save")
}

// Schema fragments, kept terse: the MCP tools/list is budgeted.
type props map[string]map[string]any

var (
	idSchema    = map[string]any{"type": "string", "minLength": 1, "maxLength": 100}
	nameSchema  = map[string]any{"type": "string", "minLength": 1, "maxLength": maxEntityName}
	fieldSchema = map[string]any{"type": "string", "maxLength": maxNameLen}
	limitSchema = map[string]any{"type": "integer", "minimum": 1, "maximum": MaxSearchLimit, "description": "Default 20."}
	// filtersSchema is the schema of []Filter.
	filtersSchema = map[string]any{"type": "array", "maxItems": maxFilters, "items": map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"field", "op"},
		"properties": props{"field": fieldSchema, "op": enum(FilterOps), "value": valueSchema},
	}}
	// valueSchema is the schema of Filter.Value: a scalar, or (for in) an
	// array of scalars; validateFilters decides which op takes which.
	// Typed, not an empty schema (a bare true once encoded), which
	// clients that port tool schemas refuse.
	valueSchema = map[string]any{"type": []string{"string", "number", "boolean", "null", "array"}, "maxItems": maxInValues,
		"items": map[string]any{"type": []string{"string", "number", "boolean", "null"}}}
)

// object is the schema of an object with properties ps, of which required
// must be present, and no others.
func object(ps props, required ...string) json.RawMessage {
	s := map[string]any{"type": "object", "properties": ps, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// enum is the schema of one of values.
func enum[T ~string](values []T) map[string]any {
	return map[string]any{"type": "string", "enum": values}
}

// withParams adds the data read parameters (Params) to ps.
func withParams(ps props) props {
	ps["filters"] = filtersSchema
	ps["variables"] = map[string]any{"type": "object", "maxProperties": maxVariables}
	ps["refresh"] = map[string]any{"type": "boolean", "description": "Bypass the cache; tokens need data:refresh."}
	return ps
}

// chartProps adds a chart's definition (ChartSpec, ChartChange) to ps.
func chartProps(ps props) props {
	ps["chart_type"] = enum(workspace.ChartTypes)
	ps["x_field"] = fieldSchema
	ps["y_fields"] = map[string]any{"type": "array", "minItems": 1, "maxItems": maxSeries, "items": fieldSchema}
	ps["name"] = nameSchema
	return ps
}
