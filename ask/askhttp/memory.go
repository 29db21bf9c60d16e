package askhttp

import (
	"net/http"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/memory"
)

// memoryBody is POST /ai/memory and PUT /ai/memory/{id}. The memory
// service normalizes and measures the text (at most 500 characters).
type memoryBody struct {
	Text string `json:"text" validate:"required"`
}

func (h *handler) listMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	items, err := h.memory.List(r.Context(), p)
	if err != nil {
		h.error(w, r, err)
		return
	}
	if items == nil {
		items = []memory.Item{}
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (h *handler) addMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body memoryBody
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	item, err := h.memory.Add(r.Context(), p, body.Text)
	httpjson.Reply(w, r, h.o.Logger, http.StatusCreated, map[string]any{"item": item}, err)
}

func (h *handler) editMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body memoryBody
	if err := httpjson.Decode(w, r, &body, false); err != nil {
		h.error(w, r, err)
		return
	}
	item, err := h.memory.Edit(r.Context(), p, r.PathValue("id"), body.Text)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, map[string]any{"item": item}, err)
}

func (h *handler) deleteMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if err := h.memory.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		h.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) deleteAllMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	n, err := h.memory.DeleteAll(r.Context(), p)
	httpjson.Reply(w, r, h.o.Logger, http.StatusOK, map[string]any{"deleted": n}, err)
}
