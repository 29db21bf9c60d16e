// Package usagehttp is the HTTP adapter of package usage: the usage view
// of Ask and the MCP server together, and the token budgets, as one
// http.Handler a host mounts:
//
//	h := usagehttp.New(svc, mySessions.Principal, nil)
//	mux.Handle("/ai/usage", h)
//	mux.Handle("/ai/usage/", h)
//
// Routes (under Options.Prefix, default /ai/usage):
//
//	GET    /ai/usage?from=&to=                        the view (RFC 3339 times; default the last 7 days)
//	GET    /ai/usage/budgets                          the budgets that apply to the caller, and where they stand
//	PUT    /ai/usage/budgets                          {"user_id", "period", "tokens"}: set one (owners and admins)
//	DELETE /ai/usage/budgets?user_id=&period=         remove one (owners and admins)
//
// Every route authenticates the request with the host's
// [access.Authenticate], passes the request gate once in the service, and
// answers errors as {"error": {"code", "message"}} with the code's status
// (internal/httpjson), also for unknown paths (404) and methods (405).
package usagehttp

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/usage"
)

// DefaultPeriod is the view's period when a request names none.
const DefaultPeriod = 7 * 24 * time.Hour

// Options configures the handler. The zero value is valid; each zero
// field means its default.
type Options struct {
	// Prefix is where the host mounts the handler. Default "/ai/usage".
	Prefix string
	// Logger logs internal errors with detail. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock, for the default period. Default time.Now.
	Now func() time.Time
}

type handler struct {
	svc   *usage.Service
	authn access.Authenticate
	o     Options
	mux   *http.ServeMux
}

// New returns the usage routes over svc, authenticating requests with
// authn. opts may be nil.
func New(svc *usage.Service, authn access.Authenticate, opts *Options) http.Handler {
	h := &handler{svc: svc, authn: authn, mux: http.NewServeMux()}
	if opts != nil {
		h.o = *opts
	}
	o := &h.o
	o.Prefix = httpjson.Prefix(o.Prefix, "/ai/usage")
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	route := func(pattern string, fn func(http.ResponseWriter, *http.Request, access.Principal)) {
		h.mux.HandleFunc(pattern, httpjson.Route(o.Logger, authn, nil, fn))
	}
	route("GET "+o.Prefix, h.report)
	route("GET "+o.Prefix+"/budgets", h.budgets)
	route("PUT "+o.Prefix+"/budgets", h.setBudget)
	route("DELETE "+o.Prefix+"/budgets", h.deleteBudget)
	// What no route matched is answered after authentication too.
	noRoute := httpjson.NoRoute(h.mux, o.Prefix+"/", o.Logger)
	for _, pattern := range []string{o.Prefix, o.Prefix + "/"} {
		route(pattern, func(w http.ResponseWriter, r *http.Request, _ access.Principal) { noRoute(w, r) })
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// report answers the view of [from, to).
func (h *handler) report(w http.ResponseWriter, r *http.Request, p access.Principal) {
	to, err := timeParam(r, "to", h.o.Now())
	var from time.Time
	if err == nil {
		from, err = timeParam(r, "from", to.Add(-DefaultPeriod))
	}
	var rep usage.Report
	if err == nil {
		rep, err = h.svc.Report(r.Context(), p, from, to)
	}
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, rep, err)
}

// timeParam is the RFC 3339 time of query parameter name, or def.
func timeParam(r *http.Request, name string, def time.Time) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, askbi.Errorf(askbi.InvalidArgument, "%s: must be an RFC 3339 time, such as 2026-12-01T00:00:00Z", name)
	}
	return t, nil
}

// budgetsDoc is the answer of GET budgets.
type budgetsDoc struct {
	Budgets []usage.BudgetStatus `json:"budgets"`
}

func (h *handler) budgets(w http.ResponseWriter, r *http.Request, p access.Principal) {
	bs, err := h.svc.Budgets(r.Context(), p)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, budgetsDoc{Budgets: bs}, err)
}

func (h *handler) setBudget(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var c usage.BudgetChange
	if err := httpjson.Decode(w, r, &c, false); err != nil {
		httpjson.WriteError(w, r, h.o.Logger, err)
		return
	}
	st, err := h.svc.SetBudget(r.Context(), p, c)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, st, err)
}

func (h *handler) deleteBudget(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := r.URL.Query()
	if err := h.svc.DeleteBudget(r.Context(), p, q.Get("user_id"), usage.Period(q.Get("period"))); err != nil {
		httpjson.WriteError(w, r, h.o.Logger, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
