package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/dataexec"
)

// chatRoutes mounts the chat, context-search and memory API. Every route
// authenticates a product session (Authorization: Bearer <session_token>);
// API keys are refused here, as session tokens are on /mcp.
func (a *app) chatRoutes(mux *http.ServeMux) {
	h := func(pattern string, fn func(http.ResponseWriter, *http.Request, access.Principal)) {
		mux.HandleFunc(pattern, a.withSession(fn, pattern != "GET /ai/status"))
	}
	h("POST /ai/conversations", a.createConversation)
	h("GET /ai/conversations", a.listConversations)
	h("GET /ai/conversations/{id}", a.openConversation)
	h("DELETE /ai/conversations/{id}", a.deleteConversation)
	h("POST /ai/conversations/{id}/messages", a.sendMessage)
	h("POST /ai/conversations/{id}/approvals/{approval_id}/approve", a.approve)
	h("POST /ai/conversations/{id}/approvals/{approval_id}/reject", a.reject)
	h("POST /ai/conversations/{id}/charts/{chart_id}/add-to-dashboard", a.addToDashboard)
	h("GET /ai/context", a.searchContext)
	h("GET /ai/memory", a.listMemory)
	h("POST /ai/memory", a.addMemory)
	h("PUT /ai/memory/{id}", a.editMemory)
	h("DELETE /ai/memory/{id}", a.deleteMemory)
	h("DELETE /ai/memory", a.deleteAllMemory)
	h("GET /ai/status", a.status)
	mux.HandleFunc("/ai/", a.noRoute(mux))
}

// noRoute answers what no route matched under /ai/: 405 with Allow when
// the path exists for other methods, else 404, both as JSON errors. The
// allowed methods are read from mux itself.
func (a *app) noRoute(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/ai/" && pattern != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			a.writeError(w, r, askbi.Errorf(askbi.NotFound, "not found"))
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, errorDoc{errorBody{Code: askbi.Unsupported,
			Message: r.Method + " is not allowed here; use " + strings.Join(allow, " or ")}})
	}
}

// status is GET /ai/status: whether the assistant can answer, and if not
// why, so a client can disable its input.
func (a *app) status(w http.ResponseWriter, r *http.Request, p access.Principal) {
	st, err := a.assistant.Status(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// withSession authenticates the request's session and passes it through
// the gate once, before fn runs with the live principal; with assistant,
// the route also needs access.RightUseAssistant.
func (a *app) withSession(fn func(http.ResponseWriter, *http.Request, access.Principal), assistant bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := a.sessions.authenticate(r)
		if err == nil {
			p, err = a.gate.Begin(r.Context(), p)
		}
		if err == nil && assistant {
			if access.Allow(p, access.RightUseAssistant, access.Team(p.TeamID)) != nil {
				err = askbi.Errorf(askbi.Forbidden, "The assistant is not available to your role in this team.")
			}
		}
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		fn(w, r, p)
	}
}

func (a *app) createConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct{}
	if err := decodeBody(w, r, &body, true); err != nil {
		a.writeError(w, r, err)
		return
	}
	c, err := a.assistant.CreateConversation(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"conversation": c})
}

func (a *app) listConversations(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := struct {
		Limit int `query:"limit" validate:"min=0,max=100"`
	}{}
	var err error
	if q.Limit, err = queryInt(r, "limit"); err == nil {
		err = check(&q)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	list, err := a.assistant.Conversations(r.Context(), p, q.Limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []ask.Conversation{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": list})
}

func (a *app) openConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	v, err := a.assistant.Open(r.Context(), p, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (a *app) deleteConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if err := a.assistant.DeleteConversation(r.Context(), p, r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// contextRef is one selected entity in a message.
type contextRef struct {
	EntityType string `json:"entity_type" validate:"required,oneof=dashboard chart dataset connection"`
	ID         string `json:"id" validate:"required,max=100"`
}

// messageBody is POST /ai/conversations/{id}/messages. Context omitted
// keeps the active context; [] clears it; a list replaces it.
type messageBody struct {
	Message  string        `json:"message" validate:"required"`
	Context  *[]contextRef `json:"context" validate:"omitnil,max=10,dive"`
	Headless bool          `json:"headless"`
}

func (a *app) sendMessage(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body messageBody
	if err := decodeBody(w, r, &body, false); err != nil {
		a.writeError(w, r, err)
		return
	}
	req := ask.SendRequest{ConversationID: r.PathValue("id"), Message: body.Message, Headless: body.Headless}
	if body.Context != nil {
		refs := make([]ask.ContextRef, len(*body.Context))
		for i, c := range *body.Context {
			refs[i] = ask.ContextRef{Type: access.EntityType(c.EntityType), ID: c.ID}
		}
		req.Context = &refs
	}
	a.runTurn(w, r, func(ctx context.Context, emit ask.Emit) error {
		return a.assistant.Send(ctx, p, req, emit)
	})
}

// approvalBody is what the user was shown and approves or rejects: it
// must match the approval exactly.
type approvalBody struct {
	Tool      string          `json:"tool" validate:"required,max=64"`
	Arguments json.RawMessage `json:"arguments" validate:"required"`
}

func (a *app) approvalRequest(w http.ResponseWriter, r *http.Request) (ask.ApproveRequest, error) {
	var body approvalBody
	if err := decodeBody(w, r, &body, false); err != nil {
		return ask.ApproveRequest{}, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body.Arguments), []byte("{")) {
		return ask.ApproveRequest{}, askbi.Errorf(askbi.InvalidArgument, "arguments: must be the JSON object shown for approval")
	}
	return ask.ApproveRequest{ConversationID: r.PathValue("id"), ApprovalID: r.PathValue("approval_id"),
		Tool: body.Tool, Arguments: body.Arguments}, nil
}

func (a *app) approve(w http.ResponseWriter, r *http.Request, p access.Principal) {
	req, err := a.approvalRequest(w, r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.runTurn(w, r, func(ctx context.Context, emit ask.Emit) error {
		return a.assistant.Approve(ctx, p, req, emit)
	})
}

func (a *app) reject(w http.ResponseWriter, r *http.Request, p access.Principal) {
	req, err := a.approvalRequest(w, r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.runTurn(w, r, func(ctx context.Context, emit ask.Emit) error {
		return a.assistant.Reject(ctx, p, req, emit)
	})
}

func (a *app) addToDashboard(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		DashboardID string `json:"dashboard_id" validate:"required,max=100"`
	}
	if err := decodeBody(w, r, &body, false); err != nil {
		a.writeError(w, r, err)
		return
	}
	cr, err := a.assistant.AddPreviewToDashboard(r.Context(), p, r.PathValue("id"), r.PathValue("chart_id"), body.DashboardID)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"chart": cr})
}

// Chat turns outlive the server's WriteTimeout, which guards against slow
// clients, so a turn's handler moves its connection's write deadline: to
// the turn's own bound for a JSON answer, and, for a stream, forward on
// every write, so a live stream (events, and a heartbeat every 15 s) is
// never cut while a client that stops reading still is. (ReadTimeout needs
// nothing: the body is read by then, and net/http watches for a client
// that leaves without a deadline.)
const (
	jsonTurnDeadline = turnTimeout + time.Minute
	streamWindow     = ask.SSEHeartbeat + writeTimeout
	// streamOpenAfter is how long a stream waits for the turn's first
	// event before it opens anyway (then the heartbeat keeps it alive).
	streamOpenAfter = time.Second
)

// runTurn runs one turn and answers it as Server-Sent Events when the
// client accepts text/event-stream, else as one JSON document
// {"events": [...]}. The request's context is the turn's: a client that
// leaves stops the model call and the queries.
//
// Errors found before the turn's first event (a bad request, an unknown
// conversation, a rate limit) answer as a normal JSON error with their
// status. Once an event was produced, the answer is 200 and a failure
// arrives as the request.failed event, last in the list or stream.
func (a *app) runTurn(w http.ResponseWriter, r *http.Request, run func(context.Context, ask.Emit) error) {
	rc := http.NewResponseController(w)
	if !acceptsEventStream(r) {
		rc.SetWriteDeadline(time.Now().Add(jsonTurnDeadline))
		emit, events := ask.Collect()
		err := run(r.Context(), emit)
		list := events()
		if len(list) == 0 {
			if err == nil {
				err = askbi.Errorf(askbi.Internal, "the turn produced no events")
			}
			a.writeError(w, r, err)
			return
		}
		if err != nil && list[len(list)-1].Type != ask.EventRequestFailed {
			a.logInternal(r, err)
			list = append(list, failedAfter(list[len(list)-1], err))
		}
		writeJSON(w, http.StatusOK, map[string]any{"events": list})
		return
	}

	window := a.streamWindow
	if window <= 0 {
		window = streamWindow
	}
	rc.SetWriteDeadline(time.Now().Add(window))
	s := &lazyStream{w: streamWriter{ResponseWriter: w, rc: rc, window: window}}
	s.timer = time.AfterFunc(streamOpenAfter, s.open)
	err := run(r.Context(), s.emit)
	last, opened := s.end()
	if !opened {
		if err == nil {
			err = askbi.Errorf(askbi.Internal, "the turn produced no events")
		}
		a.writeError(w, r, err)
		return
	}
	if err != nil && (last == nil || last.Type != ask.EventRequestFailed) {
		a.logInternal(r, err)
		prev := ask.Event{ConversationID: r.PathValue("id")} // the stream opened before any event
		if last != nil {
			prev = *last
		}
		s.sse.Emit(failedAfter(prev, err))
	}
	s.sse.Close()
}

// failedAfter is the request.failed event that closes a turn whose error
// came back without one.
func failedAfter(last ask.Event, err error) ask.Event {
	return ask.Event{Seq: last.Seq + 1, Type: ask.EventRequestFailed, ConversationID: last.ConversationID, TurnID: last.TurnID,
		State: ask.TurnFailed, Error: &ask.ErrorBody{Code: string(askbi.ErrorCode(err)), Message: askbi.ErrorMessage(err)}}
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// lazyStream opens the SSE stream on the turn's first event, or after
// streamOpenAfter, so that errors before the turn starts can still answer
// with an HTTP status.
type lazyStream struct {
	w     http.ResponseWriter
	timer *time.Timer

	mu    sync.Mutex
	sse   *ask.SSE
	last  *ask.Event
	ended bool
}

func (s *lazyStream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
}

func (s *lazyStream) openLocked() {
	if s.sse == nil && !s.ended {
		s.sse = ask.NewSSE(s.w)
	}
}

func (s *lazyStream) emit(e ask.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
	if s.sse != nil && !s.ended {
		s.sse.Emit(e)
		s.last = &e
	}
}

// end stops the opening timer and reports the last event and whether the
// stream opened; after it the stream is the caller's alone.
func (s *lazyStream) end() (*ask.Event, bool) {
	s.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.last, s.sse != nil
}

// streamWriter moves the connection's write deadline forward on every
// write of an event stream. Unwrap lets http.ResponseController reach the
// underlying writer to flush.
type streamWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	window time.Duration
}

func (s streamWriter) Write(b []byte) (int, error) {
	s.rc.SetWriteDeadline(time.Now().Add(s.window))
	return s.ResponseWriter.Write(b)
}

func (s streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Context search.

// recentItems is how many of an empty query's results go in the Recent
// group.
const recentItems = 5

// contextItem is one search result of the context picker.
type contextItem struct {
	ID         string            `json:"id"`
	EntityType access.EntityType `json:"entity_type"`
	Label      string            `json:"label"`
	Name       string            `json:"name"`
	ProjectID  string            `json:"project_id,omitempty"`
	Info       string            `json:"info"`
}

type contextGroup struct {
	Name  string        `json:"name"`
	Items []contextItem `json:"items"`
}

// searchContext is GET /ai/context?teamId=&query=&type=&limit=: the
// entities the user may select, through the same search as the MCP
// search_workspace tool. Limit is 1 to 50, absent or 0 meaning 20. type
// is one type or several, comma-separated or repeated. With an empty
// query the results are the most recently updated items: the first five
// form the Recent group and the rest their type's group; with a query,
// Recent is empty. Each item appears once; every group is always present.
func (a *app) searchContext(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := struct {
		TeamID string   `query:"teamId" validate:"required,max=100"`
		Query  string   `query:"query" validate:"max=200"`
		Types  []string `query:"type" validate:"max=4,dive,oneof=dashboard chart dataset connection"`
		Limit  int      `query:"limit" validate:"min=0,max=50"`
	}{TeamID: r.URL.Query().Get("teamId"), Query: r.URL.Query().Get("query")}
	for _, v := range r.URL.Query()["type"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				q.Types = append(q.Types, t)
			}
		}
	}
	var err error
	if q.Limit, err = queryInt(r, "limit"); err == nil {
		err = check(&q)
	}
	if err == nil && q.TeamID != p.TeamID {
		// A session belongs to one team; another team's ID reveals nothing.
		err = askbi.Errorf(askbi.NotFound, "team not found")
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	sq := dataexec.SearchQuery{Text: q.Query, Limit: q.Limit}
	for _, t := range q.Types {
		sq.Types = append(sq.Types, access.EntityType(t))
	}
	refs, err := a.executor.Search(r.Context(), p, sq)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	groups := []contextGroup{{Name: "Recent"}, {Name: "Dashboards"}, {Name: "Charts"}, {Name: "Datasets"}, {Name: "Connections"}}
	byType := map[access.EntityType]int{access.TypeDashboard: 1, access.TypeChart: 2, access.TypeDataset: 3, access.TypeConnection: 4}
	empty := strings.TrimSpace(q.Query) == ""
	for i, ref := range refs {
		g, ok := byType[ref.Type]
		if !ok {
			continue
		}
		if empty && i < recentItems {
			g = 0
		}
		groups[g].Items = append(groups[g].Items, contextItem{ID: ref.ID, EntityType: ref.Type, Label: ask.Label(ref),
			Name: ref.Name, ProjectID: ref.ProjectID, Info: ref.Info})
	}
	for i := range groups {
		if groups[i].Items == nil {
			groups[i].Items = []contextItem{}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": groups})
}
