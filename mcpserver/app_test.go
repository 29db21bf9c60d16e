package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/chartview"
	"github.com/askbi/askbi/mcpserver"
)

// uiCaps are client capabilities that declare the MCP Apps extension.
const uiCaps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`

// rpc posts one JSON-RPC request and returns its result. caps, when
// set, makes it a 2026-07-28 request carrying those client capabilities
// in its _meta; otherwise it is a 2025-11-25 request, whose capabilities
// a stateless server does not know after initialize.
func rpc(t *testing.T, url, token, method, params, caps string) json.RawMessage {
	t.Helper()
	if caps != "" {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
		params = strings.Replace(params, "{", "{"+meta+",", 1)
		if params == "{"+meta+",}" {
			params = "{" + meta + "}"
		}
	}
	req := mcpRequest(t.Context(), url, token, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	if caps != "" {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		var p struct{ Name string }
		if json.Unmarshal([]byte(params), &p) == nil && p.Name != "" {
			req.Header.Set("Mcp-Name", p.Name)
		}
	} else {
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatalf("%s: status %d: %v", method, resp.StatusCode, err)
	}
	if msg.Error != nil {
		t.Fatalf("%s: error %d %s", method, msg.Error.Code, msg.Error.Message)
	}
	return msg.Result
}

// TestAppExtension: the server declares the MCP Apps extension to a
// client that declares it, in initialize and in server/discover, and
// to no other; a client known not to speak it (a 2026-07-28 one, whose
// every request carries its capabilities) gets tools/list and tool
// results as before the app, while the tools keep their link to the app
// for a 2025 client, whose capabilities this stateless server cannot
// know after initialize.
func TestAppExtension(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	declared := func(result json.RawMessage) bool {
		var r struct {
			Capabilities struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		_, ok := r.Capabilities.Extensions[mcpserver.UIExtension]
		return ok
	}
	for _, tc := range []struct {
		name, caps string
		want       bool
	}{
		{"with the extension", uiCaps, true},
		{"without", `{}`, false},
		{"another extension", `{"extensions":{"io.example/other":{}}}`, false},
		{"the extension without the app's MIME type", `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			init := rpc(t, e.url, token, "initialize", `{"protocolVersion":"2025-11-25","clientInfo":{"name":"t","version":"1"},"capabilities":`+tc.caps+`}`, "")
			if got := declared(init); got != tc.want {
				t.Errorf("initialize declares the extension: %v, want %v: %s", got, tc.want, init)
			}
			if got := declared(rpc(t, e.url, token, "server/discover", `{}`, tc.caps)); got != tc.want {
				t.Errorf("server/discover declares the extension: %v, want %v", got, tc.want)
			}
		})
	}

	// tools/list: which tools link the app.
	linked := func(result json.RawMessage) []string {
		var r struct {
			Tools []struct {
				Name string         `json:"name"`
				Meta map[string]any `json:"_meta"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range r.Tools {
			if tool.Meta != nil {
				ui, _ := tool.Meta["ui"].(map[string]any)
				if ui["resourceUri"] != mcpserver.AppURI || tool.Meta["ui/resourceUri"] != mcpserver.AppURI {
					t.Errorf("%s: _meta = %v, want ui.resourceUri and ui/resourceUri %s", tool.Name, tool.Meta, mcpserver.AppURI)
				}
				names = append(names, tool.Name)
			}
		}
		return names
	}
	charts := []string{"run_dataset", "get_chart_data", "create_chart_preview"}
	for _, tc := range []struct {
		name, caps string
		want       []string
	}{
		{"2026-07-28 client with the extension", uiCaps, charts},
		{"2026-07-28 client without it", `{}`, nil},
		{"2025 client, capabilities unknown", "", charts},
	} {
		t.Run("tools/list: "+tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, linked(rpc(t, e.url, token, "tools/list", `{}`, tc.caps))); diff != "" {
				t.Errorf("tools linking the app (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppResource: the server lists and reads its one app resource: an
// MCP App's HTML that holds the page's own chart component
// (chartview.JS, byte for byte), declares a CSP without any external
// origin, loads nothing, and is the same for every caller, so no
// credential is in it.
func TestAppResource(t *testing.T) {
	e := newEnv(t, nil, "")
	alice := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	vic := e.MustKey(t, "vic", "acme", access.AllProjects(), access.ScopeDataRead)

	var list struct {
		Resources []struct {
			URI      string         `json:"uri"`
			MIMEType string         `json:"mimeType"`
			Meta     map[string]any `json:"_meta"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(rpc(t, e.url, vic, "resources/list", `{}`, ""), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != mcpserver.AppURI || list.Resources[0].MIMEType != mcpserver.AppMIMEType {
		t.Fatalf("resources/list = %+v, want the one app %s (%s)", list.Resources, mcpserver.AppURI, mcpserver.AppMIMEType)
	}
	read := func(token string) (string, map[string]any) {
		var r struct {
			Contents []struct {
				URI, MIMEType, Text string
				Meta                map[string]any `json:"_meta"`
			} `json:"contents"`
		}
		if err := json.Unmarshal(rpc(t, e.url, token, "resources/read", `{"uri":"`+mcpserver.AppURI+`"}`, ""), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Contents) != 1 || r.Contents[0].URI != mcpserver.AppURI || r.Contents[0].MIMEType != mcpserver.AppMIMEType {
			t.Fatalf("resources/read = %+v", r.Contents)
		}
		return r.Contents[0].Text, r.Contents[0].Meta
	}
	html, meta := read(alice)
	wantCSP := map[string]any{"connectDomains": []any{}, "resourceDomains": []any{}, "frameDomains": []any{}}
	if diff := cmp.Diff(wantCSP, meta["ui"].(map[string]any)["csp"]); diff != "" {
		t.Errorf("the app's CSP (-want +got):\n%s", diff)
	}
	if !strings.Contains(html, string(chartview.JS)) || !strings.Contains(html, string(chartview.CSS)) {
		t.Error("the app does not hold the page's chart component (chartview.JS and CSS) as it is")
	}
	for _, loads := range []string{"<script src", "<link", "@import", "fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "innerHTML", "insertAdjacentHTML"} {
		if strings.Contains(html, loads) {
			t.Errorf("the app contains %q: it must load nothing and never parse data as markup", loads)
		}
	}
	other, _ := read(vic)
	if other != html {
		t.Error("the app differs by caller: it must hold nothing of the caller's")
	}
	if strings.Contains(html, alice) || strings.Contains(html, vic) {
		t.Error("the app holds a credential")
	}
}

// TestAppChartHint: a run_dataset result whose rows chart says how, in
// its _meta (the chart type, label and value fields dataexec.TableChart
// reads), for the app; rows that do not chart, and a client known not
// to speak the extension, get none.
func TestAppChartHint(t *testing.T) {
	e := newEnv(t, nil, "")
	token := e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)
	hint := func(dataset, caps string) any {
		var r struct {
			Meta map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(rpc(t, e.url, token, "tools/call", `{"name":"run_dataset","arguments":{"dataset_id":"`+dataset+`"}}`, caps), &r); err != nil {
			t.Fatal(err)
		}
		return r.Meta["askbi/chart"]
	}
	signups := map[string]any{"chart_type": "line", "x_field": "week", "y_fields": []any{"signups"}}
	for _, tc := range []struct {
		name, dataset, caps string
		want                any
	}{
		{"rows that chart", "ds_signups", "", signups},
		{"the same for a client with the extension", "ds_signups", uiCaps, signups},
		{"rows without a number do not chart", "ds_notes", "", nil},
		{"a client without the extension", "ds_signups", `{}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, hint(tc.dataset, tc.caps)); diff != "" {
				t.Errorf("_meta askbi/chart (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppToolsReadOnly: every tool that the app is linked to, or that
// only the app may call (visibility without "model"), is read-only.
func TestAppToolsReadOnly(t *testing.T) {
	e := newEnv(t, nil, "")
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension(mcpserver.UIExtension, map[string]any{"mimeTypes": []string{mcpserver.AppMIMEType}})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps}).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: bearer{e.MustKey(t, "alice", "acme", access.AllProjects(), access.AllScopes...)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	lt, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tool := range lt.Tools {
		ui, ok := tool.Meta["ui"].(map[string]any)
		if !ok {
			continue
		}
		n++
		vis, _ := ui["visibility"].([]any)
		appOnly := len(vis) > 0 && !slices.Contains(vis, any("model"))
		if (appOnly || ui["resourceUri"] != nil) && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint) {
			t.Errorf("%s is the app's (%v) but not read-only", tool.Name, ui)
		}
	}
	if n == 0 {
		t.Error("no tool links the app")
	}
}
