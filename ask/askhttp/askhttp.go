// Package askhttp is the chat HTTP adapter of askbi: the Ask conversation,
// turn, approval, direct-action, context-search, status and memory
// routes as one http.Handler a host mounts, the way mcpserver is the MCP
// adapter. The connection routes are package connections/connhttp's
// handler, mounted beside it.
// It owns the transport only: JSON and Server-Sent Events, write deadlines
// for long turns, body validation, and the one table from askbi error codes
// to HTTP statuses. Every rule stays in package ask and package memory.
//
// Quick start:
//
//	h := askhttp.New(assistant, memories, func(r *http.Request) (access.Principal, error) {
//		return mySessions.Principal(r) // the host's product login
//	}, nil)
//	mux.Handle("/ai/", h)
//
// Every route authenticates the request, passes it through the
// assistant's request gate once (live membership, the rate limit and
// [access.RightUseAssistant]; GET /ai/status reports instead of refusing),
// and answers errors as {"error": {"code", "message"}} with the code's
// status, also for unknown paths (404) and methods (405 with Allow).
package askhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/memory"
)

// Options configures the handler. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Prefix is where the host mounts the handler. Default "/ai".
	Prefix string
	// JSONTurnDeadline is the write deadline of a turn answered as one
	// JSON document. Default the assistant's turn timeout plus a minute.
	JSONTurnDeadline time.Duration
	// StreamWindow is how far each write of an event stream moves its
	// write deadline: a live stream (events, and a heartbeat comment every
	// 15 seconds) is never cut, while a client that stops reading is.
	// Default the heartbeat's 15 seconds plus a minute.
	StreamWindow time.Duration
	// MessageBytesInFlight bounds the bytes of message bodies (POST
	// /conversations/{id}/messages) the handler holds at once, counted
	// as they are read and held until their turn ends: a message past
	// it is refused rate_limited (429 with Retry-After) as soon as it
	// is, before the rest is read and before anything changes. It is
	// what bounds the memory of many large messages at once: decoding
	// takes about twice a body's size, and the reference server's RSS
	// stays within its idle RSS plus three times this bound
	// (docs/operations.md). Default DefaultMessageBytesInFlight
	// (48 MiB).
	MessageBytesInFlight int64
	// UserMessageBytesInFlight is the same bound for one user's
	// messages (in any team). Default ask.MaxAttachmentBodyBytes
	// (24 MiB): one message of the largest size at a time, or many
	// small ones.
	UserMessageBytesInFlight int64
	// Logger logs internal errors with detail, masked as the
	// assistant's events are (ask.Assistant.RedactLogger). Default
	// slog.Default().
	Logger *slog.Logger
}

// handler is the chat API.
type handler struct {
	assistant *ask.Assistant
	memory    *memory.Service
	authn     access.Authenticate
	o         Options
	mux       *http.ServeMux
	budget    *budget // message bytes in flight
}

// New returns the chat API over assistant and memories (nil: the memory
// routes answer Unsupported), authenticating requests with authn. opts may
// be nil.
func New(assistant *ask.Assistant, memories *memory.Service, authn access.Authenticate, opts *Options) http.Handler {
	h := &handler{assistant: assistant, memory: memories, authn: authn, mux: http.NewServeMux()}
	if opts != nil {
		h.o = *opts
	}
	o := &h.o
	o.Prefix = httpjson.Prefix(o.Prefix, "/ai")
	if o.JSONTurnDeadline <= 0 {
		o.JSONTurnDeadline = assistant.TurnTimeout() + time.Minute
	}
	if o.StreamWindow <= 0 {
		o.StreamWindow = sseHeartbeat + time.Minute
	}
	if o.MessageBytesInFlight <= 0 {
		o.MessageBytesInFlight = DefaultMessageBytesInFlight
	}
	if o.UserMessageBytesInFlight <= 0 {
		o.UserMessageBytesInFlight = ask.MaxAttachmentBodyBytes
	}
	h.budget = newBudget(o.MessageBytesInFlight, o.UserMessageBytesInFlight)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = assistant.RedactLogger(o.Logger) // what the assistant masks, the log masks
	route := func(method, path string, fn func(http.ResponseWriter, *http.Request, access.Principal)) {
		h.mux.HandleFunc(method+" "+o.Prefix+path, h.begin(fn, true))
	}
	// The status reports instead of refusing: it is not gated.
	h.mux.HandleFunc("GET "+o.Prefix+"/status", h.begin(h.status, false))
	route("POST", "/conversations", h.createConversation)
	route("GET", "/conversations", h.listConversations)
	route("GET", "/conversations/{id}", h.openConversation)
	route("PATCH", "/conversations/{id}", h.renameConversation)
	route("DELETE", "/conversations/{id}", h.deleteConversation)
	route("POST", "/conversations/{id}/messages", h.sendMessage)
	route("POST", "/conversations/{id}/approvals/{approval_id}/approve", h.approve)
	route("POST", "/conversations/{id}/approvals/{approval_id}/reject", h.reject)
	route("GET", "/conversations/{id}/charts/{chart_id}", h.chart)
	route("POST", "/conversations/{id}/charts/{chart_id}/add-to-dashboard", h.addToDashboard)
	route("GET", "/context", h.searchContext)
	route("GET", "/memory", h.listMemory)
	route("POST", "/memory", h.addMemory)
	route("DELETE", "/memory", h.deleteAllMemory)
	route("PUT", "/memory/{id}", h.editMemory)
	route("DELETE", "/memory/{id}", h.deleteMemory)
	// What no route matched is answered after authentication too, so the
	// routes cannot be mapped without a credential.
	noRoute := httpjson.NoRoute(h.mux, o.Prefix+"/", o.Logger)
	h.mux.HandleFunc(o.Prefix+"/", h.begin(func(w http.ResponseWriter, r *http.Request, _ access.Principal) { noRoute(w, r) }, false))
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// begin authenticates the request and passes it through the assistant's
// gate once, before fn runs with the live principal. Ungated routes (the
// status) skip the right to use the assistant, so they can say why it is
// not available.
func (h *handler) begin(fn func(http.ResponseWriter, *http.Request, access.Principal), gated bool) http.HandlerFunc {
	if !gated {
		return httpjson.Route(h.o.Logger, h.authn, nil, fn)
	}
	return httpjson.Route(h.o.Logger, h.authn, h.assistant.Begin, fn)
}

func (h *handler) error(w http.ResponseWriter, r *http.Request, err error) {
	httpjson.WriteError(w, r, h.o.Logger, err)
}

// status is GET /status: whether the assistant can answer, and if not why,
// so a client can disable its input; and for whom (user, team, live
// role), so it can scope its requests.
func (h *handler) status(w http.ResponseWriter, r *http.Request, p access.Principal) {
	st, err := h.assistant.Status(r.Context(), p)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, st, err)
}

func (h *handler) createConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct{}
	if err := httpjson.Decode(w, r, &body, true); err != nil {
		h.error(w, r, err)
		return
	}
	c, err := h.assistant.CreateConversation(r.Context(), p)
	httpjson.Reply(w, r, h.o.Logger, http.StatusCreated, map[string]any{"conversation": c}, err)
}

func (h *handler) listConversations(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := struct {
		Limit int `query:"limit" validate:"min=0,max=100"`
	}{}
	var err error
	if q.Limit, err = httpjson.QueryInt(r, "limit"); err == nil {
		err = httpjson.Check(&q)
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	list, err := h.assistant.Conversations(r.Context(), p, q.Limit)
	if err != nil {
		h.error(w, r, err)
		return
	}
	if list == nil {
		list = []ask.Conversation{}
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"conversations": list})
}

func (h *handler) openConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	v, err := h.assistant.Open(r.Context(), p, r.PathValue("id"))
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, v, err)
}

// renameConversation is PATCH /conversations/{id} {"title": "…"}: it
// answers the renamed conversation.
func (h *handler) renameConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		Title string `json:"title" validate:"required"`
	}
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	c, err := h.assistant.RenameConversation(r.Context(), p, r.PathValue("id"), body.Title)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, map[string]any{"conversation": c}, err)
}

func (h *handler) deleteConversation(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if err := h.assistant.DeleteConversation(r.Context(), p, r.PathValue("id")); err != nil {
		h.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// contextRef is one selected entity in a message.
type contextRef struct {
	EntityType string `json:"entity_type" validate:"required,oneof=dashboard chart dataset connection"`
	ID         string `json:"id" validate:"required,max=100"`
}

// messageBody is POST /conversations/{id}/messages. Context omitted keeps
// the active context; [] clears it; a list replaces it. Attachments are
// checked by package ask (ask.Attachment and its limits).
type messageBody struct {
	Message     string           `json:"message" validate:"required"`
	Context     *[]contextRef    `json:"context" validate:"omitnil,max=10,dive"`
	Attachments []attachmentBody `json:"attachments" validate:"dive"`
	Headless    bool             `json:"headless"`
}

// attachmentBody is one file of a message: a text file's text, or an
// image's media type and base64 data.
type attachmentBody struct {
	Name      string    `json:"name" validate:"required,max=1000"`
	MediaType string    `json:"media_type" validate:"max=100"`
	Text      textData  `json:"text"`
	Data      imageData `json:"data"` // base64 (standard alphabet, padded)
}

// attachmentReadTimeout bounds reading a message body, which may carry
// MaxAttachmentBodyBytes: longer than the server's ReadTimeout allows a
// slow uplink.
const attachmentReadTimeout = 2 * time.Minute

// sendMessage is POST /conversations/{id}/messages. Its body is charged
// to the byte budget as it is read and stays charged until the turn
// ends (the turn holds the attachments); a body past the budget is
// refused before more of it is read, and before anything changes, and
// one whose Content-Length does not fit before any of it is.
func (h *handler) sendMessage(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if n := r.ContentLength; n > 0 && n <= ask.MaxAttachmentBodyBytes {
		if err := h.budget.fits(p.UserID, n); err != nil {
			h.error(w, r, err)
			return
		}
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(attachmentReadTimeout))
	var charged int64
	defer func() { h.budget.release(p.UserID, charged) }()
	charge := func(n int) error {
		err := h.budget.charge(p.UserID, int64(n))
		if err == nil {
			charged += int64(n)
		}
		return err
	}
	var body messageBody
	if err := httpjson.DecodeMax(w, r, &body, false, ask.MaxAttachmentBodyBytes, charge); err != nil {
		h.error(w, r, err)
		return
	}
	req := ask.SendRequest{ConversationID: r.PathValue("id"), Message: body.Message, Headless: body.Headless}
	for i, a := range body.Attachments {
		switch {
		case a.Data.tooLarge:
			h.error(w, r, ask.TooLargeAttachment(i, true))
			return
		case a.Text.tooLarge:
			h.error(w, r, ask.TooLargeAttachment(i, false))
			return
		case a.Data.invalid:
			h.error(w, r, askbi.Errorf(askbi.InvalidArgument, "attachments[%d].data: must be base64", i))
			return
		}
		req.Attachments = append(req.Attachments, ask.Attachment{Name: a.Name, MediaType: a.MediaType, Text: a.Text.text, Data: a.Data.bytes})
	}
	if body.Context != nil {
		refs := make([]ask.ContextRef, len(*body.Context))
		for i, c := range *body.Context {
			refs[i] = ask.ContextRef{Type: access.EntityType(c.EntityType), ID: c.ID}
		}
		req.Context = &refs
	}
	h.runTurn(w, r, func(ctx context.Context, emit ask.Emit) error {
		return h.assistant.Send(ctx, p, req, emit)
	})
}

// approvalBody is what the user was shown and approves or rejects: it
// must match the approval exactly.
type approvalBody struct {
	Tool      string          `json:"tool" validate:"required,max=64"`
	Arguments json.RawMessage `json:"arguments" validate:"required"`
}

func (h *handler) approvalRequest(w http.ResponseWriter, r *http.Request) (ask.ApproveRequest, error) {
	var body approvalBody
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		return ask.ApproveRequest{}, err
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body.Arguments), []byte("{")) {
		return ask.ApproveRequest{}, askbi.Errorf(askbi.InvalidArgument, "arguments: must be the JSON object shown for approval")
	}
	return ask.ApproveRequest{ConversationID: r.PathValue("id"), ApprovalID: r.PathValue("approval_id"),
		Tool: body.Tool, Arguments: body.Arguments}, nil
}

func (h *handler) approve(w http.ResponseWriter, r *http.Request, p access.Principal) {
	h.decide(w, r, p, h.assistant.Approve)
}

func (h *handler) reject(w http.ResponseWriter, r *http.Request, p access.Principal) {
	h.decide(w, r, p, h.assistant.Reject)
}

// decide answers an approve or a reject as a turn.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, p access.Principal,
	fn func(context.Context, access.Principal, ask.ApproveRequest, ask.Emit) error) {
	req, err := h.approvalRequest(w, r)
	if err != nil {
		h.error(w, r, err)
		return
	}
	h.runTurn(w, r, func(ctx context.Context, emit ask.Emit) error { return fn(ctx, p, req, emit) })
}

func (h *handler) addToDashboard(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		DashboardID string `json:"dashboard_id" validate:"required,max=100"`
	}
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	cr, err := h.assistant.AddPreviewToDashboard(r.Context(), p, r.PathValue("id"), r.PathValue("chart_id"), body.DashboardID)
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"chart": cr, "links": h.assistant.Links(cr)})
}

// chart is GET /conversations/{id}/charts/{chart_id}: one of the
// conversation's chart results with its data, for the client to draw.
func (h *handler) chart(w http.ResponseWriter, r *http.Request, p access.Principal) {
	cr, err := h.assistant.Chart(r.Context(), p, r.PathValue("id"), r.PathValue("chart_id"))
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, map[string]any{"chart": cr}, err)
}

// searchContext is GET /context?teamId=&query=&type=&limit=: the entities
// the user may select, grouped for the context picker (ask.Assistant.
// SearchContext). type is one type or several, comma-separated or
// repeated.
func (h *handler) searchContext(w http.ResponseWriter, r *http.Request, p access.Principal) {
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
	if q.Limit, err = httpjson.QueryInt(r, "limit"); err == nil {
		err = httpjson.Check(&q)
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	cq := ask.ContextQuery{TeamID: q.TeamID, Text: q.Query, Limit: q.Limit}
	for _, t := range q.Types {
		cq.Types = append(cq.Types, access.EntityType(t))
	}
	groups, err := h.assistant.SearchContext(r.Context(), p, cq)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, map[string]any{"groups": groups}, err)
}
