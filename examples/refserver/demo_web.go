package main

import (
	"bytes"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/chartview"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/httpjson"
)

// The reference product's pages, which stand in for a host's own: the
// chat page and the product pages that chat results and MCP tools link
// to.

// webFiles is the page: the product's chat as a thin client of the chat
// API, plain JavaScript modules with no build step.
//
//go:embed web
var webFiles embed.FS

// webCSP is the Content-Security-Policy of everything the page is made
// of: scripts, styles and images from this origin only, no inline script
// or style, no framing.
const webCSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// webStart is when the files were built into the binary, for
// Last-Modified.
var webStart = time.Now()

// webRoutes serves the page at / and its files under /web/, and the
// product pages that chat results and MCP tools link to
// (dataexec.PublicLinks): /previews/{id} (the chart and the dashboard
// selector), /charts/{id}, /dashboards/{id} and /datasets/{id}, read-only.
// They draw from the data routes (/api/, package datahttp), which check
// access. /web/entity.html?type= stands in for a host's own form that
// sets up a native source (the chat's setup card opens it). A file that
// does not exist answers a JSON 404 like every other route; folders are
// not listed.
func (a *app) webRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { a.webFile(w, r, "web/index.html") })
	// Browsers and feed readers ask for /favicon.ico whatever the page
	// links; it is the page's icon, never a 404.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { a.webFile(w, r, "web/favicon.svg") })
	mux.HandleFunc("GET /web/{file...}", func(w http.ResponseWriter, r *http.Request) {
		a.webFile(w, r, path.Join("web", r.PathValue("file")))
	})
	// The chart component is package chartview's, the one the MCP app
	// draws with too.
	mux.HandleFunc("GET /web/js/chart-svg.js", func(w http.ResponseWriter, r *http.Request) {
		a.webBytes(w, r, "chart-svg.js", chartview.JS)
	})
	mux.HandleFunc("GET /web/chart.css", func(w http.ResponseWriter, r *http.Request) { a.webBytes(w, r, "chart.css", chartview.CSS) })
	for _, page := range []dataexec.Page{dataexec.PagePreview, dataexec.PageChart, dataexec.PageDashboard, dataexec.PageDataset} {
		mux.HandleFunc("GET /"+string(page)+"/{id}", a.productPage)
	}
}

// productPage serves a page behind a link to a signed-in browser; any
// other is sent to sign in, and from there back to the page. A page of an
// entity the user cannot read (another team's, out of their projects, or
// gone) answers 404, with the same page, which then says "Not found": the
// two are not told apart. The data routes check every read again.
func (a *app) productPage(w http.ResponseWriter, r *http.Request) {
	p, err := a.sessions.browser(r)
	if err != nil {
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, "/signin?return="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	typ := access.TypeChart // previews and charts
	switch dataexec.Page(strings.Split(r.URL.Path, "/")[1]) {
	case dataexec.PageDashboard:
		typ = access.TypeDashboard
	case dataexec.PageDataset:
		typ = access.TypeDataset
	}
	live, err := a.gate.Begin(r.Context(), p)
	var refs []*dataexec.Ref
	if err == nil {
		refs, err = a.executor.Resolve(r.Context(), live, []access.Entity{{Type: typ, ID: r.PathValue("id")}})
	}
	if err != nil {
		httpjson.WriteError(w, r, a.log, err)
		return
	}
	if refs[0] == nil {
		a.webFileStatus(w, r, "web/product.html", http.StatusNotFound)
		return
	}
	a.webFile(w, r, "web/product.html")
}

// webFileStatus answers an embedded page with a status other than 200,
// uncached.
func (a *app) webFileStatus(w http.ResponseWriter, r *http.Request, name string, status int) {
	b, err := fs.ReadFile(webFiles, name)
	if err != nil {
		httpjson.WriteError(w, r, a.log, askbi.Errorf(askbi.NotFound, "not found"))
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// webFile answers one embedded file with the page's security headers.
func (a *app) webFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(webFiles, name)
	if err != nil || strings.HasPrefix(path.Base(name), ".") {
		w.Header().Set("Content-Security-Policy", webCSP)
		httpjson.WriteError(w, r, a.log, askbi.Errorf(askbi.NotFound, "not found"))
		return
	}
	a.webBytes(w, r, name, b)
}

// webBytes answers b, the file name, with the page's security headers.
func (a *app) webBytes(w http.ResponseWriter, r *http.Request, name string, b []byte) {
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, webStart, bytes.NewReader(b))
}
