// Package datahttp is the HTTP adapter of the product's data: the Data
// API (a dataset's rows, a chart's series) and the reads and the one
// action behind the pages that chat results and MCP tools link to
// ([dataexec.Links]): a preview with the dashboards it may go on, its
// placement, a dashboard. It sits beside package askhttp rather than in
// it because none of it is the assistant: it needs no model, no
// conversation and not the right to use Ask, only the executor and the
// request gate, so a host can serve it with Ask turned off.
//
// Quick start:
//
//	mux.Handle("/api/", datahttp.New(exec, gate, func(r *http.Request) (access.Principal, error) {
//		return mySessions.Principal(r) // the product login (a cookie or a bearer token)
//	}, nil))
//
// Routes, under Options.Prefix (default "/api"):
//
//	GET  /datasets/{id}/data             run_dataset: {dataset, columns, rows, row_count, truncated, …}
//	GET  /charts/{id}/data               get_chart_data: {chart, chart_type, labels, series, row_count, …}
//	GET  /charts/{id}                    the chart page's view: {chart, place_on, links}
//	POST /charts/{id}/add-to-dashboard   {"dashboard_id"}: place a preview, as from a chat result
//	GET  /dashboards/{id}                {dashboard, charts}: its charts as references with their page URLs
//
// The two data routes take the parameters of the MCP tools of the same
// action, as query parameters: filters (a JSON array of {field, op,
// value}), variables (a JSON object) and refresh (true or false). Any
// other parameter is InvalidArgument. They run the same dataexec actions
// on the same Executor as run_dataset and get_chart_data, so the caps
// (rows, bytes, request size, deadline), the cache and the errors are the
// same; the answer is the executor's result, bounded by its caps, with no
// further budget.
//
// Every request is authenticated by the host's [access.Authenticate], passes the
// gate once (live membership, the rate limit), and is decided by the
// executor's access checks: an entity of another team, or in a project
// (or on a dataset) the user cannot reach, is 404 like an unknown one.
// Errors are {"error": {"code", "message"}} with the status of the code,
// also for unknown paths (404) and methods (405 with Allow). Requests
// from another origin that could change something are refused
// (http.CrossOriginProtection), so a host may authenticate with a cookie.
package datahttp

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/workspace"
)

// Options configures the handler. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Prefix is where the host mounts the handler. Default "/api".
	Prefix string
	// Logger logs internal errors with detail. Default slog.Default().
	Logger *slog.Logger
}

type handler struct {
	exec  *dataexec.Executor
	gate  *access.Gate
	authn access.Authenticate
	o     Options
	mux   *http.ServeMux
	cop   *http.CrossOriginProtection
}

// New returns the handler over exec, passing each request through gate
// once after authn. opts may be nil.
func New(exec *dataexec.Executor, gate *access.Gate, authn access.Authenticate, opts *Options) http.Handler {
	h := &handler{exec: exec, gate: gate, authn: authn, mux: http.NewServeMux(), cop: http.NewCrossOriginProtection()}
	if opts != nil {
		h.o = *opts
	}
	h.o.Prefix = "/" + strings.Trim(h.o.Prefix, "/")
	if h.o.Prefix == "/" {
		h.o.Prefix = "/api"
	}
	if h.o.Logger == nil {
		h.o.Logger = slog.Default()
	}
	route := func(pattern string, fn func(http.ResponseWriter, *http.Request, access.Principal)) {
		method, path, _ := strings.Cut(pattern, " ")
		h.mux.HandleFunc(method+" "+h.o.Prefix+path, h.begin(fn))
	}
	route("GET /datasets/{id}/data", h.datasetData)
	route("GET /charts/{id}/data", h.chartData)
	route("GET /charts/{id}", h.chart)
	route("POST /charts/{id}/add-to-dashboard", h.place)
	route("GET /dashboards/{id}", h.dashboard)
	noRoute := httpjson.NoRoute(h.mux, h.o.Prefix+"/", h.o.Logger)
	h.mux.HandleFunc(h.o.Prefix+"/", h.begin(func(w http.ResponseWriter, r *http.Request, _ access.Principal) { noRoute(w, r) }))
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.cop.Check(r); err != nil {
		h.error(w, r, askbi.Errorf(askbi.Forbidden, "cross-origin request refused"))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// begin authenticates the request and passes it through the gate once.
func (h *handler) begin(fn func(http.ResponseWriter, *http.Request, access.Principal)) http.HandlerFunc {
	return httpjson.Route(h.o.Logger, h.authn, h.gate.Begin, fn)
}

func (h *handler) error(w http.ResponseWriter, r *http.Request, err error) {
	httpjson.WriteError(w, r, h.o.Logger, err)
}

// params reads filters, variables and refresh from the query; anything
// else there is InvalidArgument.
func params(r *http.Request) (dataexec.Params, error) {
	var p dataexec.Params
	q := r.URL.Query()
	for name, vs := range q {
		switch name {
		case "filters", "variables", "refresh":
			if len(vs) > 1 {
				return p, askbi.Errorf(askbi.InvalidArgument, "%s: give it once", name)
			}
		default:
			return p, askbi.Errorf(askbi.InvalidArgument, "%s: unknown parameter; use filters, variables or refresh", name)
		}
	}
	if s := q.Get("filters"); s != "" {
		if err := strict(s, &p.Filters); err != nil {
			return p, askbi.Errorf(askbi.InvalidArgument, "filters: must be a JSON array of {\"field\", \"op\", \"value\"}")
		}
	}
	if s := q.Get("variables"); s != "" {
		if err := strict(s, &p.Variables); err != nil {
			return p, askbi.Errorf(askbi.InvalidArgument, "variables: must be a JSON object of names to values")
		}
	}
	switch q.Get("refresh") {
	case "", "false":
	case "true":
		p.Refresh = true
	default:
		return p, askbi.Errorf(askbi.InvalidArgument, "refresh: must be true or false")
	}
	return p, nil
}

// strict decodes one JSON value into v, refusing unknown fields and
// trailing data. Numbers stay json.Number, as the MCP path has them.
func strict(s string, v any) error {
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return askbi.Errorf(askbi.InvalidArgument, "trailing data")
	}
	return nil
}

// datasetOut is run_dataset's answer: the dataset with its link, and its
// bounded table.
type datasetOut struct {
	Dataset linked          `json:"dataset"`
	Columns []string        `json:"columns"`
	Rows    json.RawMessage `json:"rows"`
	dataexec.Meta
}

// linked is a reference with the URL of its page.
type linked struct {
	dataexec.Ref
	URL string `json:"url,omitempty"`
}

func (h *handler) datasetData(w http.ResponseWriter, r *http.Request, p access.Principal) {
	ps, err := params(r)
	if err != nil {
		h.error(w, r, err)
		return
	}
	res, err := dataexec.RunDatasetAction.Run(h.exec, r.Context(), p, dataexec.DatasetRun{DatasetID: r.PathValue("id"), Params: ps})
	if err != nil {
		h.error(w, r, err)
		return
	}
	rows, err := res.AppendRowsJSON(nil)
	if err != nil {
		h.error(w, r, err)
		return
	}
	ds := linked{Ref: *res.Dataset, URL: h.exec.Links()(dataexec.PageDataset, res.Dataset.ID)}
	httpjson.WriteJSON(w, http.StatusOK, datasetOut{Dataset: ds, Columns: res.Columns, Rows: rows, Meta: res.Meta})
}

// chartOut is get_chart_data's answer: the chart with its link and its
// labels and series.
type chartOut struct {
	Chart linked `json:"chart"`
	*dataexec.ChartData
}

func (h *handler) chartData(w http.ResponseWriter, r *http.Request, p access.Principal) {
	ps, err := params(r)
	if err != nil {
		h.error(w, r, err)
		return
	}
	cr, err := dataexec.ChartDataAction.Run(h.exec, r.Context(), p, dataexec.ChartRun{ChartID: r.PathValue("id"), Params: ps})
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, chartOut{Chart: linked{Ref: cr.Chart, URL: h.exec.Links().Chart(*cr).Chart}, ChartData: cr.Data})
}

// View is a chart as its page draws it: the chart result with its data,
// the dashboards p may place a preview on ([dataexec.Destinations]; empty
// for a saved chart and for a user who may edit none, so the page shows
// no placement control), and the links of its parts.
type View struct {
	Chart   *dataexec.ChartResult `json:"chart"`
	PlaceOn []dataexec.Ref        `json:"place_on"`
	Links   dataexec.ChartLinks   `json:"links"`
}

// chart is GET /charts/{id}: the view of the chart and preview pages.
func (h *handler) chart(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if len(r.URL.RawQuery) > 0 {
		h.error(w, r, askbi.Errorf(askbi.InvalidArgument, "this route takes no parameters"))
		return
	}
	cr, err := dataexec.ChartDataAction.Run(h.exec, r.Context(), p, dataexec.ChartRun{ChartID: r.PathValue("id")})
	if err != nil {
		h.error(w, r, err)
		return
	}
	v := View{Chart: cr, PlaceOn: []dataexec.Ref{}, Links: h.exec.Links().Chart(*cr)}
	if cr.Status == workspace.StatusPreview {
		if v.PlaceOn, err = dataexec.Destinations(r.Context(), h.exec, p, cr.Chart.ProjectID); err != nil {
			h.error(w, r, err)
			return
		}
	}
	httpjson.WriteJSON(w, http.StatusOK, v)
}

// place is POST /charts/{id}/add-to-dashboard: the direct placement of a
// preview, through the executor's one placement action (access to the
// chart, its dataset and the dashboard, validation, audit), as a chat
// result's placement. A chat that showed the preview shows it saved when
// it next reads it.
func (h *handler) place(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		DashboardID string `json:"dashboard_id" validate:"required,max=100"`
	}
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	cr, err := dataexec.PlaceChartAction.Run(h.exec, r.Context(), p, dataexec.Placement{ChartID: r.PathValue("id"), DashboardID: body.DashboardID})
	if err != nil {
		h.error(w, r, err)
		return
	}
	res := cr.WithoutData()
	httpjson.WriteJSON(w, http.StatusOK, View{Chart: &res, PlaceOn: []dataexec.Ref{}, Links: h.exec.Links().Chart(res)})
}

// dashboard is GET /dashboards/{id}: the dashboard's reference, with its
// info line ("4 charts"), and its charts (Executor.DashboardCharts), each
// with its page, for a page that draws them (GET /charts/{id}).
func (h *handler) dashboard(w http.ResponseWriter, r *http.Request, p access.Principal) {
	id := r.PathValue("id")
	refs, err := h.exec.Resolve(r.Context(), p, []access.Entity{{Type: access.TypeDashboard, ID: id, TeamID: p.TeamID}})
	if err != nil {
		h.error(w, r, err)
		return
	}
	if refs[0] == nil {
		h.error(w, r, askbi.Errorf(askbi.NotFound, "dashboard not found"))
		return
	}
	charts, err := h.exec.DashboardCharts(r.Context(), p, id)
	if err != nil {
		h.error(w, r, err)
		return
	}
	out := make([]linked, len(charts))
	for i, c := range charts {
		out[i] = linked{Ref: c, URL: h.exec.Links()(dataexec.PageChart, c.ID)}
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"dashboard": linked{Ref: *refs[0], URL: h.exec.Links()(dataexec.PageDashboard, id)}, "charts": out})
}
