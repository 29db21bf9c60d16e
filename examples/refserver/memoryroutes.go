package main

import (
	"net/http"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/memory"
)

// memoryBody is POST /ai/memory and PUT /ai/memory/{id}. The memory
// service normalizes and measures the text (at most 500 characters).
type memoryBody struct {
	Text string `json:"text" validate:"required"`
}

func (a *app) listMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	items, err := a.memory.List(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if items == nil {
		items = []memory.Item{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (a *app) addMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body memoryBody
	if err := decodeBody(w, r, &body, false); err != nil {
		a.writeError(w, r, err)
		return
	}
	item, err := a.memory.Add(r.Context(), p, body.Text)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"item": item})
}

func (a *app) editMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body memoryBody
	if err := decodeBody(w, r, &body, false); err != nil {
		a.writeError(w, r, err)
		return
	}
	item, err := a.memory.Edit(r.Context(), p, r.PathValue("id"), body.Text)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"item": item})
}

func (a *app) deleteMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	if err := a.memory.Delete(r.Context(), p, r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *app) deleteAllMemory(w http.ResponseWriter, r *http.Request, p access.Principal) {
	n, err := a.memory.DeleteAll(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": n})
}
