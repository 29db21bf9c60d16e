package main

import (
	"embed"
	"net/http"
)

// webFiles is the demo page: a thin client of the chat API.
//
//go:embed web
var webFiles embed.FS

func (a *app) webRoutes(mux *http.ServeMux) {
	files := http.FileServerFS(webFiles)
	static := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /web/", static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/web/"
		static(w, r2)
	})
}
