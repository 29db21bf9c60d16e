package connhttp

import (
	"net/http"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/httpjson"
)

// The connection routes manage the team's remote MCP connections:
// create, list, read, change and delete a connection (owners and
// admins), discover its tools, page through them (10 a page, search and
// hint filters applied before paging) and set a tool's access one by one
// or all at once (owners and admins).

// connectionBody is POST /connections.
type connectionBody struct {
	Name      string `json:"name" validate:"required,max=64"`
	URL       string `json:"url" validate:"required,max=2048"`
	Auth      string `json:"auth" validate:"omitempty,oneof=none bearer oauth"`
	Token     string `json:"token" validate:"max=4096"`
	ToolFocus string `json:"tool_focus" validate:"max=500"`
}

// connectionPatch is PATCH /connections/{id}; absent fields keep their
// values, "token": "" removes the token.
type connectionPatch struct {
	Name      *string `json:"name" validate:"omitnil,max=64"`
	URL       *string `json:"url" validate:"omitnil,max=2048"`
	Auth      *string `json:"auth" validate:"omitnil,oneof=none bearer oauth"`
	Token     *string `json:"token" validate:"omitnil,max=4096"`
	ToolFocus *string `json:"tool_focus" validate:"omitnil,max=500"`
}

func (h *handler) createConnection(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body connectionBody
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	c, err := h.conns.Create(r.Context(), p, connections.Input{Name: body.Name, URL: body.URL, Auth: connections.Auth(body.Auth),
		Token: body.Token, ToolFocus: body.ToolFocus})
	h.answer(w, r, http.StatusCreated, map[string]any{"connection": c}, err)
}

func (h *handler) listConnections(w http.ResponseWriter, r *http.Request, p access.Principal) {
	list, err := h.conns.Listing(r.Context(), p)
	h.answer(w, r, http.StatusOK, list, err)
}

func (h *handler) getConnection(w http.ResponseWriter, r *http.Request, p access.Principal) {
	c, err := h.conns.Get(r.Context(), p, r.PathValue("id"))
	h.answer(w, r, http.StatusOK, map[string]any{"connection": c}, err)
}

func (h *handler) updateConnection(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body connectionPatch
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	pt := connections.Patch{Name: body.Name, URL: body.URL, Token: body.Token, ToolFocus: body.ToolFocus}
	if body.Auth != nil {
		a := connections.Auth(*body.Auth)
		pt.Auth = &a
	}
	c, err := h.conns.Update(r.Context(), p, r.PathValue("id"), pt)
	h.answer(w, r, http.StatusOK, map[string]any{"connection": c}, err)
}

func (h *handler) deleteConnection(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if err := h.conns.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		h.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) discover(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		ToolFocus *string `json:"tool_focus" validate:"omitnil,max=500"`
	}
	if err := httpjson.Decode(w, r, &body, true); err != nil {
		h.error(w, r, err)
		return
	}
	c, err := h.conns.Discover(r.Context(), p, r.PathValue("id"), body.ToolFocus, h.signin)
	h.answer(w, r, http.StatusOK, map[string]any{"connection": c}, err)
}

func (h *handler) listTools(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := struct {
		Search string `query:"search" validate:"max=200"`
		Hint   string `query:"hint" validate:"omitempty,oneof=read_only mutating destructive unknown"`
		Page   int    `query:"page" validate:"min=0,max=10000"`
	}{Search: r.URL.Query().Get("search"), Hint: r.URL.Query().Get("hint")}
	var err error
	if q.Page, err = httpjson.QueryInt(r, "page"); err == nil {
		err = httpjson.Check(&q)
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	page, err := h.conns.Tools(r.Context(), p, r.PathValue("id"), connections.ToolQuery{Search: q.Search, Hint: dataexec.Class(q.Hint), Page: q.Page})
	h.answer(w, r, http.StatusOK, page, err)
}

func (h *handler) setAccess(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		Allowed *bool `json:"allowed" validate:"required"`
	}
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	v, err := h.conns.SetAccess(r.Context(), p, r.PathValue("id"), r.PathValue("tool"), *body.Allowed)
	h.answer(w, r, http.StatusOK, map[string]any{"tool": v}, err)
}

func (h *handler) allowAll(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct{}
	if err := httpjson.Decode(w, r, &body, true); err != nil {
		h.error(w, r, err)
		return
	}
	res, err := h.conns.AllowAll(r.Context(), p, r.PathValue("id"))
	h.answer(w, r, http.StatusOK, res, err)
}

// answer writes doc with status, or err when there is one.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, status int, doc any, err error) {
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.WriteJSON(w, status, doc)
}
