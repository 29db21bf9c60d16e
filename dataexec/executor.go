package dataexec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/telemetry"
	"github.com/askbi/askbi/workspace"
)

// HardMaxRows is the largest row cap an Executor accepts; Options.MaxRows
// above it is clamped to it.
const HardMaxRows = 10000

// Options configures an Executor. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Timeout is the deadline for the source work of one call (a query or
	// an inspection). Default 15 seconds.
	Timeout time.Duration
	// MaxRows caps the rows of a result. Default 1,000; values above
	// HardMaxRows (10,000) are clamped to it.
	MaxRows int
	// PreviewRows caps the rows of an exploration preview, including the
	// preview an exploration save runs. Default 100; never more than MaxRows.
	PreviewRows int
	// MaxBytes caps the estimated serialized (JSON) size of a result's
	// rows. Default 1 MiB.
	MaxBytes int64
	// MaxRequestBytes caps the size of what a caller sends in one call:
	// SQL, tool and arguments, fields, filters, variables, names and IDs
	// combined. Larger calls get TooLarge. Default 64 KiB.
	MaxRequestBytes int
	// SampleRows is how many rows are checked before a chart is created or
	// changed. Default DefaultSampleRows.
	SampleRows int
	// MaxChartPoints caps the rows a chart draws. Default
	// DefaultMaxChartPoints.
	MaxChartPoints int
	// InspectLimit caps the relations an inspection lists. Default 200.
	InspectLimit int
	// Cache configures the cache of fresh results.
	Cache CacheOptions
	// Concurrency bounds the source work running at once per principal,
	// team and source.
	Concurrency ConcurrencyOptions
	// Audit records dataset saves and chart previews, changes, placements
	// and dashboard deletions. Default none.
	Audit access.AuditSink
	// Telemetry makes a span of each data request (a dataset run, from
	// the cache or the source, or an exploration preview: the source's
	// kind, the cache result, rows and bytes; never the SQL, arguments
	// or data) and counts the cache results and the source queries in
	// flight (package telemetry). Default none: off, at the cost of a nil
	// check.
	Telemetry *telemetry.Telemetry
	// Logger logs audit failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Links maps results to the product's pages, for every adapter (chat
	// results, the MCP tools, the data routes). Default PublicLinks(""):
	// same-origin paths /previews/{id}, /charts/{id}, /dashboards/{id}
	// and /datasets/{id}; set PublicLinks(publicURL), or the host's own
	// mapping, so that outside clients get absolute URLs.
	Links Links
}

// Executor is the one data path of askbi: the chat assistant and the MCP
// server both call it, and it is where access is checked for every data
// read and workspace change. Every method takes the live principal of
// the request ([access.Gate.Begin]) and decides each right with
// [access.Allow], then applies the limits in Options; it never reads
// membership or charges the rate limit itself, so nested calls cost
// nothing. A principal that is not live is refused (Internal). It is safe
// for concurrent use.
//
// Each job has one method, the one its product Action runs: a chart change
// is UpdateChart with a [ChartChange], and every step of exploration
// (listing connections, inspecting one, previewing a request, saving it as
// a dataset) is Explore with its [ExploreOp].
//
// Unknown IDs and IDs the principal cannot see (another team's, in a
// project outside its access, or another member's chart preview) all
// answer NotFound with the same message.
// A call rejected for its input (InvalidArgument, or TooLarge for its
// size), for access (NotFound, ScopeRequired, Forbidden) or for its
// connection (Unsupported, Unavailable when inactive) runs no source query. The one exception is a
// filter on an unknown field of a dataset without declared output fields,
// whose columns are only known after the run. A write on a Catalog that is
// not a CatalogWriter answers Unsupported before it reads anything.
type Executor struct {
	catalog workspace.Catalog
	writer  workspace.CatalogWriter // nil when the catalog is read-only
	sources Sources

	timeout      time.Duration
	maxRows      int
	previewRows  int
	maxBytes     int64
	maxRequest   int
	sampleRows   int
	chartPoints  int
	inspectLimit int

	cache   *resultCache
	flights flights
	slots   *slots
	audit   *access.Auditor
	tel     *telemetry.Telemetry
	now     func() time.Time
	links   Links
}

// NewExecutor returns an Executor over the host's catalog, running
// requests on sources. The catalog is written to when it is also a
// CatalogWriter, and read-only otherwise. opts may be nil.
func NewExecutor(catalog workspace.Catalog, sources Sources, opts *Options) *Executor {
	var o Options
	if opts != nil {
		o = *opts
	}
	writer, _ := catalog.(workspace.CatalogWriter)
	e := &Executor{
		catalog: catalog, writer: writer, sources: sources,
		timeout: o.Timeout, maxRows: o.MaxRows, previewRows: o.PreviewRows, maxBytes: o.MaxBytes,
		maxRequest: o.MaxRequestBytes, sampleRows: o.SampleRows, chartPoints: o.MaxChartPoints,
		inspectLimit: o.InspectLimit,
		cache:        newResultCache(o.Cache), now: o.Now, links: o.Links, tel: o.Telemetry,
	}
	if e.links == nil {
		e.links = PublicLinks("")
	}
	setDefault(&e.timeout, 15*time.Second)
	if o.Concurrency.Logger == nil {
		o.Concurrency.Logger = o.Logger
	}
	e.slots = newSlots(o.Concurrency, e.timeout)
	setDefault(&e.maxRows, 1000)
	e.maxRows = min(e.maxRows, HardMaxRows)
	setDefault(&e.previewRows, 100)
	e.previewRows = min(e.previewRows, e.maxRows)
	setDefault(&e.maxBytes, 1<<20)
	setDefault(&e.maxRequest, 64<<10)
	setDefault(&e.sampleRows, DefaultSampleRows)
	setDefault(&e.chartPoints, DefaultMaxChartPoints)
	setDefault(&e.inspectLimit, 200)
	if e.now == nil {
		e.now = time.Now
	}
	e.audit = access.NewAuditor(o.Audit, o.Logger, e.now)
	return e
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Meta describes a result: its size, whether and why it was cut, and
// where its data came from.
type Meta struct {
	RowCount  int  `json:"row_count"`
	Truncated bool `json:"truncated"`
	// TruncatedReason is TruncatedRows, TruncatedBytes or (chart data)
	// TruncatedPoints when Truncated.
	TruncatedReason string `json:"truncated_reason,omitempty"`
	// Cached is true when the data was not fetched by this call.
	Cached bool `json:"cached"`
	// DataDate is when the data was fetched from the source.
	DataDate time.Time `json:"data_date"`
	// Warning is set when this is a last good result served because a
	// refresh or fresh run failed; it says when the data is from and why.
	Warning string `json:"warning,omitempty"`
}

// Result is a dataset's or preview's data: mapped columns and rows (Rows,
// and their JSON: [AppendRowsJSON]). Results may share their rows with the
// cache and with other callers: read them, never change them. Make one
// with [NewResult]; the zero Result has no rows.
type Result struct {
	// Dataset is the dataset RunDataset ran; nil for a preview.
	Dataset *Ref     `json:"dataset,omitempty"`
	Columns []string `json:"columns"`
	Meta
	rows *resultRows
}

// Params are a caller's inputs to a data read.
type Params struct {
	// Filters apply to the mapped rows; at most 20.
	Filters []workspace.Filter `json:"filters,omitempty"`
	// Variables set the dataset's declared variables by name; the others
	// take their defaults.
	Variables map[string]any `json:"variables,omitempty"`
	// Refresh bypasses the cache; it needs access.RightRefresh (the
	// data:refresh scope for tokens).
	Refresh bool `json:"refresh,omitempty"`
}

// ChartResult is the one safe result of every chart action, for both
// adapters and the client: references only (the client builds URLs from
// them), and the chart's data when the call built it. Status is
// StatusUnavailable when the chart is gone; its datasets that still exist
// stay listed.
type ChartResult struct {
	Status workspace.ChartStatus `json:"status"`
	// Chart is the chart's reference; its Info says where it is and how it
	// draws ("Growth overview · line chart").
	Chart     Ref                 `json:"chart"`
	ChartType workspace.ChartType `json:"chart_type,omitempty"`
	Datasets  []Ref               `json:"datasets"`
	Dashboard *Ref                `json:"dashboard"` // nil for a preview
	Data      *ChartData          `json:"data,omitempty"`
}

// WithoutData is r without its data, for the places that keep references
// only.
func (r ChartResult) WithoutData() ChartResult {
	r.Data = nil
	return r
}

// RunDataset runs one dataset with filters and variables, from the cache
// when a fresh result is there (unless params.Refresh).
//
// It needs [access.RightRead] on the dataset, and [access.RightRefresh] for a
// refresh. Errors: TooLarge, Forbidden,
// NotFound, ScopeRequired; InvalidArgument for a bad filter or variable,
// or an SQL reference its source refuses or that is not declared;
// Unsupported when the connection's type has no source, or its source
// cannot bind the SQL's variables (it is not a [VariableBinder]);
// Unavailable when the connection is inactive or gone; and from the
// source run (when no last good result can stand in): RateLimited past
// a concurrency bound (Options.Concurrency), Timeout, Unavailable,
// InvalidResult (field mapping), TooLarge (one row over the byte cap).
func (e *Executor) RunDataset(ctx context.Context, p access.Principal, datasetID string, params Params) (_ *Result, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.RunDataset")
	live, err := e.begin(p, len(datasetID)+paramsSize(params))
	if err != nil {
		return nil, err
	}
	ds, err := load(ctx, live, access.TypeDataset, e.catalog.Dataset, datasetID, params.Rights()...)
	if err != nil {
		return nil, err
	}
	res, conn, err := e.runDataset(ctx, live, ds, params)
	if err != nil {
		return nil, err
	}
	ref := e.scopedRef(ctx, live, ds, conn)
	res.Dataset = &ref // run returns a copy, never the cache's own result
	return res, nil
}

// ChartData reads one chart's data, built from its dataset run with
// params. It does not validate the data as chart creation does: an empty
// result gives empty chart data.
//
// It needs [access.RightRead] on the chart and on its dataset (and
// [access.RightRefresh] on the dataset for a refresh). Errors are those of
// RunDataset, and InvalidResult when a chart field is not in the result.
func (e *Executor) ChartData(ctx context.Context, p access.Principal, chartID string, params Params) (_ *ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.ChartData")
	live, err := e.begin(p, len(chartID)+paramsSize(params))
	if err != nil {
		return nil, err
	}
	c, err := load(ctx, live, access.TypeChart, e.catalog.Chart, chartID, access.RightRead)
	if err != nil {
		return nil, err
	}
	ds, err := load(ctx, live, access.TypeDataset, e.catalog.Dataset, c.DatasetID, params.Rights()...)
	if err != nil {
		return nil, err
	}
	params.Filters = append(slices.Clip(c.Filters), params.Filters...) // the chart's own first
	res, conn, err := e.runDataset(ctx, live, ds, params)
	if err != nil {
		return nil, err
	}
	data, err := buildChart(res, chartSpec(c), false, e.sampleRows, e.chartPoints)
	if err != nil {
		return nil, err
	}
	return e.chartResult(ctx, live, c, ds, conn, data), nil
}

// preview runs an exploration request on a connection (ExplorePreview):
// a bounded result, never cached.
func (e *Executor) preview(ctx context.Context, p access.Principal, req workspace.Request) (*Result, error) {
	live, err := e.begin(p, requestSize(req))
	if err != nil {
		return nil, err
	}
	conn, err := load(ctx, live, access.TypeConnection, e.catalog.Connection, req.ConnectionID, access.RightExplore)
	if err != nil {
		return nil, err
	}
	pl, err := e.previewPlan(ctx, live, conn, req, len(req.Fields) == 0)
	if err != nil {
		return nil, err
	}
	res, _, err := e.fetchOnce(ctx, pl)
	return res, err
}

// fetchOnce is fetch for a request that is never cached (an exploration
// preview), under its span when telemetry is on.
func (e *Executor) fetchOnce(ctx context.Context, pl *plan) (*Result, int64, error) {
	if e.tel == nil {
		return e.fetch(ctx, pl)
	}
	ctx, sp := e.tel.StartQuery(ctx, pl.kind)
	res, size, err := e.fetch(ctx, pl)
	if err == nil {
		sp.SetQuery(telemetry.CacheNone, res.RowCount, size, res.Truncated)
	}
	sp.End(err)
	return res, size, err
}

// saveDataset previews req and, only when the preview returns rows that
// map cleanly, saves it as dataset name in dashboard dashboardID's project
// (ExploreSave). It returns the dataset and the preview that validated it.
//
// The dataset and its request reach the catalog in one
// CatalogWriter.CreateDataset call, never retried, so the save is atomic
// when the catalog keeps that method's contract. When the call fails its
// error is returned as it is and nothing is reported saved; what a catalog
// that breaks the contract left behind, the Executor cannot see or undo.
func (e *Executor) saveDataset(ctx context.Context, p access.Principal, name, dashboardID string, req workspace.Request) (_ *Ref, _ *Result, err error) {
	target := access.Entity{Type: access.TypeDashboard, ID: dashboardID}
	details := map[string]string{}
	defer e.audit.Track(ctx, p, ActionDatasetSave, &target, details)(&err)

	live, w, err := e.beginWrite(p, requestSize(req)+len(name)+len(dashboardID))
	if err != nil {
		return nil, nil, err
	}
	conn, err := load(ctx, live, access.TypeConnection, e.catalog.Connection, req.ConnectionID, access.RightExplore)
	if err != nil {
		return nil, nil, err
	}
	details["connection_type"] = conn.Type
	dash, err := load(ctx, live, access.TypeDashboard, e.catalog.Dashboard, dashboardID, saveRights...)
	if err != nil {
		return nil, nil, err
	}
	target = dash.Ref()
	name = strings.TrimSpace(name)
	if !validEntityName(name) {
		return nil, nil, askbi.Errorf(askbi.InvalidArgument, "name: must be 1 to %d printable characters", maxEntityName)
	}
	if conn.ProjectID != "" && conn.ProjectID != dash.ProjectID {
		return nil, nil, askbi.Errorf(askbi.InvalidArgument, "dashboard_id: this connection is not available in the dashboard's project")
	}
	pl, err := e.previewPlan(ctx, live, conn, req, false) // a dataset's cells are scalars
	if err != nil {
		return nil, nil, err
	}
	res, _, err := e.fetchOnce(ctx, pl)
	if err != nil {
		return nil, nil, err
	}
	details["preview_rows"] = fmt.Sprint(res.RowCount)
	if res.RowCount == 0 {
		return nil, nil, askbi.Errorf(askbi.InvalidResult, "the preview returned no rows, so nothing was saved; widen the query or its date range")
	}
	req = req.Clone()
	if len(req.Fields) == 0 {
		if req.Tool != "" && textOnly(res) {
			return nil, nil, askbi.Errorf(askbi.InvalidResult, "the tool returned only text, which is not chart-ready data; add output fields that select named values")
		}
		if req.Fields, err = columnFields(res.Columns); err != nil {
			return nil, nil, err
		}
	}
	now := e.now()
	ds, err := w.CreateDataset(ctx, workspace.Dataset{
		TeamID: dash.TeamID, ProjectID: dash.ProjectID, Name: name, Version: 1, Request: req,
		CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return nil, nil, err
	}
	target = ds.Ref()
	ref := datasetRef(ds, conn)
	return &ref, res, nil
}

// CreateChartPreview runs a dataset, checks a bounded sample as chart data
// (rows exist, fields exist, every value field has a finite number), and
// only then creates a temporary preview chart, private to p's user until
// it is placed (Chart). It never places the chart on a dashboard.
//
// It needs [access.RightPreviewChart] on the dataset. Errors: those of
// RunDataset; InvalidArgument for a bad spec; InvalidResult with a
// correction when the sample fails; Unsupported when the catalog is
// read-only. The attempt is audited as [ActionChartPreview].
func (e *Executor) CreateChartPreview(ctx context.Context, p access.Principal, spec ChartSpec) (_ *ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.CreateChartPreview")
	target := access.Entity{Type: access.TypeDataset, ID: spec.DatasetID}
	defer e.audit.Track(ctx, p, ActionChartPreview, &target, chartDetails(spec))(&err)

	live, w, err := e.beginWrite(p, specSize(spec))
	if err != nil {
		return nil, err
	}
	if err := validateChartSpec(spec); err != nil {
		return nil, err
	}
	ds, err := load(ctx, live, access.TypeDataset, e.catalog.Dataset, spec.DatasetID, access.RightPreviewChart)
	if err != nil {
		return nil, err
	}
	target = ds.Ref()
	data, conn, err := e.sampleChart(ctx, live, ds, spec)
	if err != nil {
		return nil, err
	}
	now := e.now()
	c, err := w.CreateChart(ctx, workspace.Chart{
		TeamID: ds.TeamID, ProjectID: ds.ProjectID, Name: strings.TrimSpace(spec.Name), Type: spec.Type,
		DatasetID: ds.ID, XField: spec.XField, YFields: spec.YFields, Filters: spec.Filters,
		CreatedBy: live.UserID, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return nil, err
	}
	target = c.Ref()
	return e.chartResult(ctx, live, c, ds, conn, data), nil
}

// UpdateChart changes the name, type or fields of a chart that in sets,
// keeping the others and the chart's dataset and filters, after the same
// sample check as CreateChartPreview. A preview stays a preview; a saved
// chart stays on its dashboard.
//
// It needs [access.RightRead] on the chart, [access.RightPreviewChart] on its
// dataset, and [access.RightEditDashboard] on the dashboard of a saved
// chart. Errors: those of CreateChartPreview. The attempt is audited as
// [ActionChartUpdate].
func (e *Executor) UpdateChart(ctx context.Context, p access.Principal, in ChartChange) (_ *ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.UpdateChart")
	target := access.Entity{Type: access.TypeChart, ID: in.ChartID}
	details := map[string]string{}
	defer e.audit.Track(ctx, p, ActionChartUpdate, &target, details)(&err)

	live, w, err := e.beginWrite(p, changeSize(in))
	if err != nil {
		return nil, err
	}
	c, spec, ds, err := e.checkUpdate(ctx, live, in)
	if c.ID != "" {
		target = c.Ref()
		maps.Copy(details, chartDetails(spec))
	}
	if err != nil {
		return nil, err
	}
	data, conn, err := e.sampleChart(ctx, live, ds, spec)
	if err != nil {
		return nil, err
	}
	c.Name, c.Type = strings.TrimSpace(spec.Name), spec.Type
	c.XField, c.YFields, c.UpdatedAt = spec.XField, spec.YFields, e.now()
	if c, err = w.UpdateChart(ctx, c); err != nil {
		return nil, notFoundAs(err, access.TypeChart)
	}
	return e.chartResult(ctx, live, c, ds, conn, data), nil
}

// PlaceChart is the "add preview to dashboard" action: it puts a preview
// chart on a dashboard, updating the chart in place (same ID), after the
// same permission and validation path as any chart change. The chart's
// dataset must be in the dashboard's project.
//
// It needs [access.RightRead] on the chart and its dataset and
// [access.RightEditDashboard] on the dashboard. Errors: TooLarge,
// Forbidden, ScopeRequired; NotFound when the
// chart (for instance a deleted preview), its dataset or the dashboard is
// gone or out of reach; Conflict when the chart is already on a dashboard;
// InvalidArgument for a dashboard in another project; Unsupported when the
// catalog is read-only. The attempt is audited as [ActionChartPlace].
func (e *Executor) PlaceChart(ctx context.Context, p access.Principal, chartID, dashboardID string) (_ *ChartResult, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.PlaceChart")
	target := access.Entity{Type: access.TypeChart, ID: chartID}
	defer e.audit.Track(ctx, p, ActionChartPlace, &target, nil)(&err)

	live, w, err := e.beginWrite(p, len(chartID)+len(dashboardID))
	if err != nil {
		return nil, err
	}
	c, dash, ds, err := e.checkPlace(ctx, live, chartID, dashboardID)
	if c.ID != "" {
		target = c.Ref()
	}
	if err != nil {
		return nil, err
	}
	placed, err := w.PlaceChart(ctx, c.ID, dash.ID, e.now())
	if err != nil {
		return nil, notFoundAs(err, access.TypeChart)
	}
	target = placed.Ref()
	var conn workspace.Connection
	if cn, err := e.catalog.Connection(ctx, ds.Request.ConnectionID); err == nil {
		conn = cn
	}
	return e.chartResult(ctx, live, placed, ds, conn, nil), nil
}

// inspect describes what connection connectionID's source may read, or
// table's columns (ExploreInspect).
func (e *Executor) inspect(ctx context.Context, p access.Principal, connectionID, table string) ([]Relation, error) {
	live, err := e.begin(p, len(connectionID)+len(table))
	if err != nil {
		return nil, err
	}
	conn, err := load(ctx, live, access.TypeConnection, e.catalog.Connection, connectionID, access.RightExplore)
	if err != nil {
		return nil, err
	}
	src, err := e.source(ctx, conn)
	if err != nil {
		return nil, err
	}
	insp, ok := src.(Inspector)
	if !ok {
		return nil, askbi.Errorf(askbi.Unsupported, "this connection's source cannot be inspected")
	}
	release, err := e.slots.acquire(ctx, live, src, conn.ID)
	if err != nil {
		return nil, err
	}
	defer release()
	tctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	rels, err := insp.Inspect(tctx, table, e.inspectLimit)
	if err != nil {
		return nil, e.sourceError(ctx, tctx, err)
	}
	if len(rels) > e.inspectLimit {
		rels = rels[:e.inspectLimit]
	}
	return rels, nil
}

// connections lists the connections p may explore (ExploreInspect
// without a connection).
func (e *Executor) connections(ctx context.Context, p access.Principal) ([]Ref, error) {
	live, err := e.begin(p, 0)
	if err != nil {
		return nil, err
	}
	if err := access.Allow(live, access.RightExplore, access.Team(live.TeamID)); err != nil {
		return nil, err
	}
	rows, err := e.catalog.Search(ctx, workspace.CatalogQuery{TeamID: live.TeamID, Types: []access.EntityType{access.TypeConnection},
		Projects: live.Projects, UserID: live.UserID, Limit: MaxSearchLimit})
	if err != nil {
		return nil, err
	}
	refs := []Ref{}
	for _, r := range rows {
		if r.Entity.Type == access.TypeConnection && access.Allow(live, access.RightExplore, r.Entity) == nil {
			refs = append(refs, Ref{Type: r.Entity.Type, ID: r.Entity.ID, Name: r.Name, ProjectID: r.Entity.ProjectID, Info: infoLine(r)})
		}
	}
	return refs, nil
}

// begin checks what every call begins with: a live principal, then the
// request size.
func (e *Executor) begin(p access.Principal, size int) (access.Principal, error) {
	if !p.IsLive() {
		return access.Principal{}, askbi.Errorf(askbi.Internal, "the principal was not resolved; call access.Gate.Begin first")
	}
	if size > e.maxRequest {
		return access.Principal{}, e.tooLarge()
	}
	return p, nil
}

// checkUpdate decides whether live principal p may change a chart as in
// says, before anything runs: the chart readable, the changed spec valid,
// a saved chart's dashboard editable, its dataset previewable. It returns
// the chart (also when a later check fails), the changed spec and the
// dataset.
func (e *Executor) checkUpdate(ctx context.Context, p access.Principal, in ChartChange) (workspace.Chart, ChartSpec, workspace.Dataset, error) {
	c, err := load(ctx, p, access.TypeChart, e.catalog.Chart, in.ChartID, access.RightRead)
	if err != nil {
		return workspace.Chart{}, ChartSpec{}, workspace.Dataset{}, err
	}
	spec := chartSpec(c)
	if in.Name != "" {
		spec.Name = in.Name
	}
	if in.Type != "" {
		spec.Type = in.Type
	}
	if in.XField != "" {
		spec.XField = in.XField
	}
	if len(in.YFields) > 0 {
		spec.YFields = in.YFields
	}
	if err := validateChartSpec(spec); err != nil {
		return c, spec, workspace.Dataset{}, err
	}
	if c.Status() == workspace.StatusSaved {
		if _, err := load(ctx, p, access.TypeDashboard, e.catalog.Dashboard, c.DashboardID, access.RightEditDashboard); err != nil {
			return c, spec, workspace.Dataset{}, err
		}
	}
	ds, err := load(ctx, p, access.TypeDataset, e.catalog.Dataset, c.DatasetID, access.RightPreviewChart)
	if err != nil {
		return c, spec, workspace.Dataset{}, err
	}
	return c, spec, ds, nil
}

// checkPlace decides whether live principal p may place preview chartID
// on dashboardID, before anything runs: the chart readable and still a
// preview, the dashboard editable, the dataset readable and in the
// dashboard's project. It returns the chart (also when a later check
// fails), the dashboard and the dataset.
func (e *Executor) checkPlace(ctx context.Context, p access.Principal, chartID, dashboardID string) (workspace.Chart, workspace.Dashboard, workspace.Dataset, error) {
	c, err := load(ctx, p, access.TypeChart, e.catalog.Chart, chartID, access.RightRead)
	if err != nil {
		return workspace.Chart{}, workspace.Dashboard{}, workspace.Dataset{}, err
	}
	dash, err := load(ctx, p, access.TypeDashboard, e.catalog.Dashboard, dashboardID, access.RightEditDashboard)
	if err != nil {
		return c, workspace.Dashboard{}, workspace.Dataset{}, err
	}
	if c.Status() != workspace.StatusPreview {
		return c, workspace.Dashboard{}, workspace.Dataset{}, askbi.Errorf(askbi.Conflict, "the chart is already on a dashboard")
	}
	ds, err := load(ctx, p, access.TypeDataset, e.catalog.Dataset, c.DatasetID, access.RightRead)
	if err != nil {
		return c, workspace.Dashboard{}, workspace.Dataset{}, err
	}
	if err := validateChartSpec(chartSpec(c)); err != nil {
		return c, workspace.Dashboard{}, workspace.Dataset{}, err
	}
	if ds.ProjectID != dash.ProjectID {
		return c, workspace.Dashboard{}, workspace.Dataset{}, askbi.Errorf(askbi.InvalidArgument, "dashboard_id: choose a dashboard in the same project as the chart's dataset")
	}
	return c, dash, ds, nil
}

// beginWrite is begin for a workspace change: it also needs a catalog
// that can write, or answers Unsupported before anything is read.
func (e *Executor) beginWrite(p access.Principal, size int) (access.Principal, workspace.CatalogWriter, error) {
	live, err := e.begin(p, size)
	if err != nil {
		return access.Principal{}, nil, err
	}
	if e.writer == nil {
		return access.Principal{}, nil, askbi.Errorf(askbi.Unsupported, "this workspace catalog is read-only")
	}
	return live, e.writer, nil
}

func (e *Executor) tooLarge() error {
	return askbi.Errorf(askbi.TooLarge, "the request is larger than %d KiB; shorten the query, arguments, filters or variables", e.maxRequest>>10)
}

// Rights are the rights a read with p needs on its dataset: RightRead,
// and RightRefresh when it bypasses the cache. Adapters that must know
// before the call (MCP's step-up challenge) ask the same method.
func (p Params) Rights() []access.Right {
	if p.Refresh {
		return []access.Right{access.RightRead, access.RightRefresh}
	}
	return []access.Right{access.RightRead}
}

// saveRights are what saving a dataset needs on its dashboard.
var saveRights = []access.Right{access.RightSaveDataset, access.RightEditDashboard}

// load fetches one entity and decides rights on it for live principal p.
// An unknown ID and an entity out of p's reach give the same NotFound.
func load[T interface{ Ref() access.Entity }](ctx context.Context, p access.Principal, typ access.EntityType,
	get func(context.Context, string) (T, error), id string, rights ...access.Right) (T, error) {
	var zero T
	if id == "" {
		return zero, askbi.Errorf(askbi.InvalidArgument, "%s_id is required", typ)
	}
	v, err := get(ctx, id)
	if err != nil {
		return zero, notFoundAs(err, typ)
	}
	for _, r := range rights {
		if err := access.Allow(p, r, v.Ref()); err != nil {
			return zero, notFoundAs(err, typ)
		}
	}
	return v, nil
}

// notFoundAs gives every NotFound about an entity of typ one message, so
// callers cannot tell "unknown" from "not yours". Other errors pass.
func notFoundAs(err error, typ access.EntityType) error {
	if askbi.ErrorCode(err) != askbi.NotFound {
		return err
	}
	return &askbi.Error{Code: askbi.NotFound, Message: string(typ) + " not found", Err: err}
}

// source returns the Source of an active connection.
func (e *Executor) source(ctx context.Context, conn workspace.Connection) (Source, error) {
	if !conn.Active {
		return nil, askbi.Errorf(askbi.Unavailable, "the connection is not active; finish its setup first")
	}
	return e.sources.Source(ctx, conn)
}

// plan is one source run, fully validated.
type plan struct {
	src     Source
	query   Query
	fields  workspace.Fields
	nested  bool // pass objects and arrays through (previews without fields)
	filters []workspace.Filter
	key     cacheKey
	who     access.Principal // whose concurrency slots the run takes
	connID  string
	kind    string // the connection's type, for telemetry
}

// datasetPlan validates a dataset run and builds its plan and cache key.
// It also returns the dataset's connection.
func (e *Executor) datasetPlan(ctx context.Context, live access.Principal, ds workspace.Dataset, filters []workspace.Filter, vars map[string]any) (*plan, workspace.Connection, error) {
	if ds.Scope != nil {
		// A filter that repeats a declared scope condition holds by
		// construction; its field need not be an output field.
		filters = slices.DeleteFunc(slices.Clone(filters), func(f workspace.Filter) bool {
			return slices.ContainsFunc(ds.Scope.Filters, func(s workspace.Filter) bool { return sameFilter(f, s) })
		})
	}
	var known []string
	if len(ds.Request.Fields) > 0 {
		known = ds.Request.Fields.Names()
	}
	if err := validateFilters(filters, known); err != nil {
		return nil, workspace.Connection{}, err
	}
	vals, err := resolveVariables(ds.Request.Variables, vars)
	if err != nil {
		return nil, workspace.Connection{}, err
	}
	conn, err := e.catalog.Connection(ctx, ds.Request.ConnectionID)
	if askbi.ErrorCode(err) == askbi.NotFound || err == nil && conn.TeamID != ds.TeamID {
		return nil, workspace.Connection{}, &askbi.Error{Code: askbi.Unavailable, Message: "the dataset's connection no longer exists", Err: err}
	}
	if err != nil {
		return nil, workspace.Connection{}, err
	}
	pl, err := e.buildPlan(ctx, live, conn, ds.Request, vals, e.maxRows)
	if err != nil {
		return nil, workspace.Connection{}, err
	}
	// The dataset's saved filters apply first, on every run.
	filters = append(slices.Clip(ds.Request.Filters), filters...)
	pl.filters = filters
	pl.key, err = keyDoc{
		DatasetID: ds.ID, Version: ds.Version, ConnectionID: conn.ID,
		SQL: pl.query.SQL, Tool: pl.query.Tool, Arguments: pl.query.Arguments, Fields: pl.fields,
		Filters: filters, Variables: vals, MaxRows: pl.query.MaxRows, MaxBytes: pl.query.MaxBytes,
	}.sum()
	return pl, conn, err
}

// previewPlan validates an exploration request and builds its plan;
// nested lets object and array cells through.
func (e *Executor) previewPlan(ctx context.Context, live access.Principal, conn workspace.Connection, req workspace.Request, nested bool) (*plan, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	vals, err := resolveVariables(req.Variables, nil)
	if err != nil {
		return nil, err
	}
	pl, err := e.buildPlan(ctx, live, conn, req, vals, e.previewRows)
	if err != nil {
		return nil, err
	}
	pl.nested = nested
	return pl, nil
}

// buildPlan finds a request's source and puts its variables in place: into
// a tool's arguments here, or for the source to bind in SQL.
func (e *Executor) buildPlan(ctx context.Context, live access.Principal, conn workspace.Connection, req workspace.Request, vals map[string]any, maxRows int) (*plan, error) {
	q := Query{SQL: req.SQL, Tool: req.Tool, MaxRows: maxRows, MaxBytes: e.maxBytes}
	var err error
	if req.SQL == "" {
		if q.Arguments, err = renderArguments(req.Arguments, vals); err != nil {
			return nil, err
		}
	}
	src, err := e.source(ctx, conn)
	if err != nil {
		return nil, err
	}
	if req.SQL != "" {
		if q.Variables, err = sqlVariables(src, req.SQL, req.Variables, vals); err != nil {
			return nil, err
		}
	}
	return &plan{src: src, query: q, fields: req.Fields, who: live, connID: conn.ID, kind: conn.Type}, nil
}

// validateRequest checks an exploration request before anything runs.
func validateRequest(r workspace.Request) error {
	bad := func(format string, args ...any) error { return askbi.Errorf(askbi.InvalidArgument, format, args...) }
	switch {
	case (r.SQL == "") == (r.Tool == ""):
		return bad("give either sql or tool")
	case r.SQL != "" && strings.TrimSpace(r.SQL) == "":
		return bad("sql: must not be blank")
	case r.SQL == "" && !validName(r.Tool):
		return bad("tool: %s", nameLimitMsg)
	case r.SQL != "" && len(r.Arguments) > 0:
		return bad("arguments: only for tool requests")
	}
	if err := validateFields(r.Fields); err != nil {
		return err
	}
	return validateDeclarations(r.Variables)
}

// run serves a dataset plan from the cache or the source, under its
// span when telemetry is on.
func (e *Executor) run(ctx context.Context, pl *plan, refresh bool) (*Result, error) {
	if e.tel == nil {
		return e.serve(ctx, pl, refresh, nil)
	}
	ctx, sp := e.tel.StartQuery(ctx, pl.kind)
	cache := telemetry.CacheMiss
	res, err := e.serve(ctx, pl, refresh, &cache)
	if err == nil {
		sp.SetQuery(cache, res.RowCount, res.rowsSize(), res.Truncated)
	}
	sp.End(err)
	return res, err
}

// serve serves a dataset plan from the cache or the source, and says
// which in *how when how is not nil. A failed fetch falls back to the
// last good result, with a warning, when there is one.
func (e *Executor) serve(ctx context.Context, pl *plan, refresh bool, how *telemetry.CacheResult) (*Result, error) {
	last, fresh, ok := e.cache.get(pl.key, e.now())
	if ok && fresh && !refresh {
		last.Cached = true
		if how != nil {
			*how = telemetry.CacheHit
		}
		return last, nil
	}
	if how != nil && refresh {
		*how = telemetry.CacheRefresh
	}
	res, err := e.flights.do(ctx, pl.key, func(ctx context.Context) (*Result, error) {
		res, size, err := e.fetch(ctx, pl)
		if err == nil {
			// The cache keeps the rows as JSON, which the MCP answer
			// writes as it is; a result it cannot keep so (a cell
			// AppendRowsJSON refuses) is not cached.
			res.rows.json, _ = encodeRows(res.rows.cells, size)
		}
		return res, err
	})
	if err != nil && ctx.Err() != nil {
		err = e.sourceError(ctx, ctx, err) // this caller went away or ran out of time
	}
	if err != nil {
		if !ok || ctx.Err() != nil || askbi.ErrorCode(err) == askbi.InvalidArgument {
			return nil, err
		}
		last.Cached = true
		if how != nil {
			*how = telemetry.CacheStale
		}
		last.Warning = fmt.Sprintf("showing data from %s; refresh failed: %s",
			last.DataDate.UTC().Format("2006-01-02 15:04 UTC"), askbi.ErrorMessage(err))
		return last, nil
	}
	e.cache.put(pl.key, res)
	out := *res // callers may change their Meta; the flight's others stay
	return &out, nil
}

// fetch runs a plan on its source under the deadline, then maps, filters
// and caps the rows. It returns the result and its estimated size.
func (e *Executor) fetch(ctx context.Context, pl *plan) (*Result, int64, error) {
	release, err := e.slots.acquire(ctx, pl.who, pl.src, pl.connID)
	if err != nil {
		return nil, 0, err
	}
	tctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	done := e.tel.InFlight(ctx, pl.kind)
	t, err := pl.src.Query(tctx, pl.query)
	done()
	release()
	if err != nil {
		return nil, 0, e.sourceError(ctx, tctx, err)
	}
	fetched := e.now()
	cols, rows, err := mapTable(t, pl.fields, pl.nested)
	if err != nil {
		return nil, 0, err
	}
	res := &Result{Columns: cols, Meta: Meta{Truncated: t.Truncated, TruncatedReason: t.TruncatedReason, DataDate: fetched}}
	if len(rows) > pl.query.MaxRows {
		rows = rows[:pl.query.MaxRows]
		res.Truncated, res.TruncatedReason = true, TruncatedRows
	}
	if rows, err = applyFilters(pl.filters, cols, rows); err != nil {
		return nil, 0, err
	}
	size := int64(2)
	for _, c := range cols {
		size += stringSize(c) + 1
	}
	for i, row := range rows {
		n := rowSize(row)
		if size+n > e.maxBytes {
			if i == 0 {
				return nil, 0, askbi.Errorf(askbi.TooLarge, "a single row exceeds the %d KiB result limit; select fewer or shorter columns", e.maxBytes>>10)
			}
			rows = rows[:i]
			res.Truncated, res.TruncatedReason = true, TruncatedBytes
			break
		}
		size += n
	}
	if rows == nil {
		rows = [][]any{}
	}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	res.rows, res.RowCount = &resultRows{cells: rows}, len(rows)
	return res, size, nil
}

// sourceError gives a source failure its code: Timeout when the deadline
// passed, Unavailable when the caller went away.
func (e *Executor) sourceError(ctx, tctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &askbi.Error{Code: askbi.Unavailable, Message: "the request was cancelled", Err: err}
	case errors.Is(tctx.Err(), context.DeadlineExceeded) || askbi.ErrorCode(err) == askbi.Timeout:
		return &askbi.Error{Code: askbi.Timeout, Message: fmt.Sprintf("the source did not answer within %s; narrow the request or try again", e.timeout), Err: err}
	}
	return err
}

// runDataset plans and runs one dataset (from the cache unless
// params.Refresh) and returns its result and connection.
func (e *Executor) runDataset(ctx context.Context, live access.Principal, ds workspace.Dataset, params Params) (*Result, workspace.Connection, error) {
	pl, conn, err := e.datasetPlan(ctx, live, ds, params.Filters, params.Variables)
	if err != nil {
		return nil, conn, err
	}
	res, err := e.run(ctx, pl, params.Refresh)
	return res, conn, err
}

// sampleChart runs a dataset as chart creation does and checks its sample.
func (e *Executor) sampleChart(ctx context.Context, live access.Principal, ds workspace.Dataset, spec ChartSpec) (*ChartData, workspace.Connection, error) {
	res, conn, err := e.runDataset(ctx, live, ds, Params{Filters: spec.Filters})
	if err != nil {
		return nil, conn, err
	}
	data, err := buildChart(res, spec, true, e.sampleRows, e.chartPoints)
	return data, conn, err
}

// chartResult assembles the safe references of a chart result. The
// dashboard reference is left out unless p can see the dashboard.
func (e *Executor) chartResult(ctx context.Context, p access.Principal, c workspace.Chart, ds workspace.Dataset, conn workspace.Connection, data *ChartData) *ChartResult {
	row := workspace.SearchRow{Entity: c.Ref(), ChartType: c.Type}
	r := &ChartResult{Status: c.Status(), ChartType: c.Type, Datasets: []Ref{e.scopedRef(ctx, p, ds, conn)}, Data: data}
	if c.DashboardID != "" {
		if d, err := e.catalog.Dashboard(ctx, c.DashboardID); err == nil && access.Sees(p, d.Ref()) {
			r.Dashboard = &Ref{Type: access.TypeDashboard, ID: d.ID, Name: d.Name, ProjectID: d.ProjectID}
			row.DashboardName = d.Name
		}
	}
	r.Chart = Ref{Type: access.TypeChart, ID: c.ID, Name: c.Name, ProjectID: c.ProjectID, Info: infoLine(row), Scope: scopeRef(ChartScope(c, ds))}
	return r
}

// chartDetails are the safe audit details of a chart change.
func chartDetails(s ChartSpec) map[string]string {
	if !s.Type.Valid() {
		return nil
	}
	return map[string]string{"chart_type": string(s.Type)}
}

func chartSpec(c workspace.Chart) ChartSpec {
	return ChartSpec{DatasetID: c.DatasetID, Name: c.Name, Type: c.Type, XField: c.XField, YFields: c.YFields, Filters: c.Filters}
}

// textOnly reports whether a result is one column of text: an MCP tool's
// response text, which is not chart-ready data.
func textOnly(r *Result) bool {
	if len(r.Columns) != 1 {
		return false
	}
	for _, row := range r.Rows() {
		if _, ok := row[0].(string); !ok && row[0] != nil {
			return false
		}
	}
	return true
}

// columnFields makes output fields that select each column by name.
func columnFields(cols []string) (workspace.Fields, error) {
	fs := make(workspace.Fields, len(cols))
	for i, c := range cols {
		fs[i] = workspace.Field{Name: c, Path: []string{c}}
	}
	if err := validateFields(fs); err != nil {
		return nil, askbi.Errorf(askbi.InvalidResult, "the result's column names cannot be used as fields (%s); give each column a short, unique alias", askbi.ErrorMessage(err))
	}
	return fs, nil
}

// paramsSize estimates the size of a caller's params.
func paramsSize(p Params) int {
	n := 0
	for _, f := range p.Filters {
		n += len(f.Field) + len(f.Op) + int(valueSize(f.Value)) + 8
	}
	for k, v := range p.Variables {
		n += len(k) + int(valueSize(v)) + 4
	}
	return n
}

// requestSize estimates the size of a caller's request.
func requestSize(r workspace.Request) int {
	n := len(r.ConnectionID) + len(r.SQL) + len(r.Tool) + len(r.Arguments)
	for _, f := range r.Fields {
		n += len(f.Name) + 4
		for _, el := range f.Path {
			n += len(el) + 3
		}
	}
	for _, v := range r.Variables {
		n += len(v.Name) + len(v.Type) + int(valueSize(v.Default)) + 8
	}
	return n
}

func changeSize(c ChartChange) int {
	return len(c.ChartID) + specSize(ChartSpec{Name: c.Name, Type: c.Type, XField: c.XField, YFields: c.YFields})
}

func specSize(s ChartSpec) int {
	n := len(s.DatasetID) + len(s.Name) + len(s.Type) + len(s.XField) + paramsSize(Params{Filters: s.Filters})
	for _, y := range s.YFields {
		n += len(y) + 3
	}
	return n
}

// MaxPlacements is the most charts one PlaceCharts call places.
const MaxPlacements = 20

// Placed is the outcome of PlaceCharts: the dashboard, and each chart as
// it stands after the call, in the order asked (each once).
type Placed struct {
	Dashboard Ref           `json:"dashboard"`
	Charts    []ChartResult `json:"charts"`
}

// PlaceCharts puts several preview charts on one dashboard: the batch form
// of PlaceChart, built on it. Every chart is checked before any is placed
// (readable, a preview or already on this dashboard, its dataset in the
// dashboard's project), so a bad one places none; then each preview is
// placed with PlaceChart (same rights, validation and audit). It is
// idempotent: a chart already on this dashboard counts as placed, also
// when a concurrent call placed it first, so a retry after a failure
// places only the rest and never makes a duplicate. Repeated IDs count
// once.
//
// It needs what PlaceChart needs on each chart. Errors: those of
// PlaceChart, with Conflict for a chart on another dashboard, and
// InvalidArgument for no charts or more than [MaxPlacements].
func (e *Executor) PlaceCharts(ctx context.Context, p access.Principal, chartIDs []string, dashboardID string) (_ *Placed, err error) {
	defer askbi.Wrap(&err, "dataexec.Executor.PlaceCharts")
	size := len(dashboardID)
	for _, id := range chartIDs {
		size += len(id) + 3
	}
	live, _, err := e.beginWrite(p, size)
	if err != nil {
		return nil, err
	}
	ids, dash, err := e.checkPlaceAll(ctx, live, chartIDs, dashboardID)
	if err != nil {
		return nil, err
	}
	out := &Placed{Dashboard: Ref{Type: access.TypeDashboard, ID: dash.ID, Name: dash.Name, ProjectID: dash.ProjectID}}
	for _, id := range ids {
		cr, err := e.placedOn(ctx, live, id, dash.ID)
		if askbi.ErrorCode(err) == askbi.Conflict {
			cr, err = e.PlaceChart(ctx, live, id, dash.ID)
		}
		if askbi.ErrorCode(err) == askbi.Conflict { // placed since: by us?
			cr, err = e.placedOn(ctx, live, id, dash.ID)
		}
		if err != nil {
			return nil, err
		}
		out.Charts = append(out.Charts, *cr)
	}
	return out, nil
}

// checkPlaceAll checks a batch placement before anything changes, and
// returns the chart IDs once each, in order, and the dashboard.
func (e *Executor) checkPlaceAll(ctx context.Context, p access.Principal, chartIDs []string, dashboardID string) ([]string, workspace.Dashboard, error) {
	var ids []string
	for _, id := range chartIDs {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > MaxPlacements {
		return nil, workspace.Dashboard{}, askbi.Errorf(askbi.InvalidArgument, "chart_ids: give 1 to %d charts", MaxPlacements)
	}
	dash, err := load(ctx, p, access.TypeDashboard, e.catalog.Dashboard, dashboardID, access.RightEditDashboard)
	if err != nil {
		return nil, workspace.Dashboard{}, err
	}
	for _, id := range ids {
		c, _, _, err := e.checkPlace(ctx, p, id, dash.ID)
		if askbi.ErrorCode(err) == askbi.Conflict && c.DashboardID == dash.ID {
			continue // already there: done
		}
		if err != nil {
			return nil, workspace.Dashboard{}, err
		}
	}
	return ids, dash, nil
}

// placedOn is the result of chart id when it is on dashboardID already,
// or Conflict when it is a preview or on another dashboard.
func (e *Executor) placedOn(ctx context.Context, p access.Principal, id, dashboardID string) (*ChartResult, error) {
	c, err := load(ctx, p, access.TypeChart, e.catalog.Chart, id, access.RightRead)
	if err != nil {
		return nil, err
	}
	switch c.DashboardID {
	case dashboardID:
		return e.chartOf(ctx, p, c)
	case "":
		return nil, askbi.Errorf(askbi.Conflict, "the chart is a preview")
	}
	return nil, askbi.Errorf(askbi.Conflict, "the chart is already on another dashboard")
}
