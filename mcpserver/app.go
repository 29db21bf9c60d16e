package mcpserver

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/chartview"
	"github.com/askbi/askbi/dataexec"
)

// The chart app: charts inline in an agent's chat (MCP Apps, SEP-1865).
// get_chart_data, create_chart_preview and run_dataset link AppURI
// through their _meta.ui.resourceUri; a host that speaks the extension
// reads the resource and renders it in a sandboxed frame beside the
// answer, handing it the tool result. The app draws the chart with the
// page's own component (package chartview), from structuredContent
// only: it gets no credential and makes no request, so whatever a host
// calls for it passes the same authentication, scopes and rights as any
// call.
const (
	// AppURI is the chart app's resource.
	AppURI = "ui://askbi/chart.html"
	// AppMIMEType is the MIME type of an MCP App's HTML.
	AppMIMEType = "text/html;profile=mcp-app"
	// UIExtension is the MCP Apps extension's ID, in the client's and
	// the server's capabilities.
	UIExtension = "io.modelcontextprotocol/ui"
	// chartHintKey is the member of a run_dataset result's _meta that
	// says how its rows chart (dataexec.TableChart's reading).
	chartHintKey = "askbi/chart"
)

var (
	//go:embed app.html
	appPage string
	//go:embed app.css
	appCSS string
	//go:embed app.js
	appJS string
)

// appHTML is the app: one HTML file with the chart component, the app's
// script and their styles inline, since the frame may load nothing.
var appHTML = func() string {
	css, js := string(chartview.CSS)+appCSS, string(chartview.JS)+appJS
	if strings.Contains(strings.ToLower(css), "</style") || strings.Contains(strings.ToLower(js), "</script") {
		panic("mcpserver: the chart app's script or style would end its element early")
	}
	return strings.NewReplacer("{{css}}", css, "{{js}}", js).Replace(appPage)
}()

// appMeta is the app resource's _meta.ui: a CSP with no external origin
// of any kind (no connections, no resources, no frames), and a border.
func appMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{
		"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}, "frameDomains": []string{}},
		"prefersBorder": true,
	}}
}

// appToolMeta links a tool to the app, in the current form and the
// legacy flat key that earlier hosts read.
func appToolMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"resourceUri": AppURI}, "ui/resourceUri": AppURI}
}

func (s *Server) addApp() {
	s.mcp.AddResource(&mcp.Resource{
		URI: AppURI, Name: "chart", Title: "askbi chart", MIMEType: AppMIMEType, Meta: appMeta(),
		Description: "Draws the chart of a get_chart_data, create_chart_preview or run_dataset result.",
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: AppURI, MIMEType: AppMIMEType, Text: appHTML, Meta: appMeta()}}}, nil
	})
}

// uiSupport reads a client's capabilities: whether they are known at
// all, and whether they declare the extension with the app's MIME type.
// A 2025 client's capabilities come with initialize only, which a
// stateless server does not keep, so its later requests are unknown; a
// 2026-07-28 client sends them with every request.
func uiSupport(caps *mcp.ClientCapabilities) (known, declared bool) {
	if caps == nil {
		return false, false
	}
	var ext struct {
		MIMETypes []string `json:"mimeTypes"`
	}
	if v, ok := caps.Extensions[UIExtension]; ok {
		if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &ext) == nil {
			declared = slices.Contains(ext.MIMETypes, AppMIMEType)
		}
	}
	return true, declared
}

// withUIExtension declares the extension in caps, a copy the SDK made
// for this answer.
func withUIExtension(caps *mcp.ServerCapabilities) {
	if caps != nil {
		caps.AddExtension(UIExtension, map[string]any{"mimeTypes": []string{AppMIMEType}})
	}
}

// withoutApp returns the tools without their links to the app, for a
// client that said it does not speak the extension: as before the app.
// The SDK's tools are shared, so each changed one is a copy.
func withoutApp(tools []*mcp.Tool) []*mcp.Tool {
	out := make([]*mcp.Tool, len(tools))
	for i, t := range tools {
		if _, ok := t.Meta["ui"]; ok {
			c := *t
			c.Meta = nil
			t = &c
		}
		out[i] = t
	}
	return out
}

// chartHint is how a dataset result's rows chart, for the app: the
// chart type, label field and value fields that dataexec.TableChart
// reads in them; nil when they are not a chart.
func chartHint(res *dataexec.Result) mcp.Meta {
	// TableChart reads the first DefaultSampleRows rows only.
	rows := res.Head(dataexec.DefaultSampleRows).Rows()
	cd, err := dataexec.TableChart(&dataexec.Table{Columns: res.Columns, Rows: rows})
	if err != nil {
		return nil
	}
	ys := make([]string, len(cd.Series))
	for i, sr := range cd.Series {
		ys[i] = sr.Name
	}
	return mcp.Meta{chartHintKey: map[string]any{"chart_type": cd.Type, "x_field": cd.XField, "y_fields": ys}}
}
