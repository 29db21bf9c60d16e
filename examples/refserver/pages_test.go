package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// browserClient is a browser's cookie jar that does not follow redirects,
// so each one can be checked.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestProductPages: the pages behind links open in a browser session,
// send a browser without one to sign in and back, and draw from the data
// routes, which take the same session (and API keys) but not from
// another origin; the chat API still takes only the bearer token.
func TestProductPages(t *testing.T) {
	ta := MustApp(t, nil)
	c := browserClient(t)
	page := "/previews/chart_weekly_signups"
	res := get(t, c, ta.url+page)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?return="+url.QueryEscape(page) {
		t.Fatalf("signed out: %d to %q, want 303 to sign in and back", res.StatusCode, res.Header.Get("Location"))
	}
	res, err := c.PostForm(ta.url+"/signin", url.Values{"token": {ta.session(t, "bob")}, "return": {page}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != page {
		t.Fatalf("sign-in: %d to %q, want back to %s", res.StatusCode, res.Header.Get("Location"), page)
	}
	for _, p := range []string{page, "/charts/chart_weekly_signups", "/dashboards/dash_growth", "/datasets/ds_weekly_signups"} {
		if res := get(t, c, ta.url+p); res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s signed in: %d %s", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	// A page of what bob cannot read is a 404 too: another project's
	// chart, dashboard and dataset, another team's chart, one that is gone.
	for _, p := range []string{"/previews/chart_mrr", "/charts/chart_mrr", "/dashboards/dash_finance", "/datasets/ds_mrr", "/charts/chart_tickets", "/charts/nope"} {
		if res := get(t, c, ta.url+p); res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s as bob: %d %s, want the page with 404", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	// The page's data, by the cookie alone; what bob cannot reach is 404.
	for p, want := range map[string]int{
		"/api/charts/chart_weekly_signups": 200, "/api/datasets/ds_weekly_signups/data": 200, "/api/dashboards/dash_growth": 200,
		"/api/charts/chart_mrr": 404, "/api/datasets/ds_mrr/data": 404, "/api/charts/chart_tickets": 404,
	} {
		if res := get(t, c, ta.url+p); res.StatusCode != want {
			t.Errorf("GET %s as bob's browser: %d, want %d", p, res.StatusCode, want)
		}
	}
	// A page of another site cannot place a chart with the cookie.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", ta.url+"/api/charts/chart_weekly_signups/add-to-dashboard",
		strings.NewReader(`{"dashboard_id":"dash_growth"}`))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if res, err := c.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site placement: %v %v, want 403", res.StatusCode, err)
	}
	// The chat API does not take the cookie.
	if res := get(t, c, ta.url+"/ai/status"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("chat API by cookie: %d, want 401", res.StatusCode)
	}
	// API keys read data; MCP OAuth tokens and unknown keys do not.
	key := ta.apiKey(t, "alice-read")
	if res := get(t, c, ta.url+"/api/charts/chart_mrr/data", "Authorization", "Bearer "+key); res.StatusCode != 200 {
		t.Errorf("API key data read: %d", res.StatusCode)
	}
	if res := get(t, c, ta.url+"/api/charts/chart_mrr/data?refresh=true", "Authorization", "Bearer "+key); res.StatusCode != 403 {
		t.Errorf("refresh with a data:read key: %d, want 403", res.StatusCode)
	}
	if res := get(t, http.DefaultClient, ta.url+"/api/charts/chart_mrr/data", "Authorization", "Bearer askbi_nope"); res.StatusCode != 401 {
		t.Errorf("unknown key: %d, want 401", res.StatusCode)
	}
	// Signing out ends the browser session.
	out, _ := http.NewRequestWithContext(t.Context(), "POST", ta.url+"/signout", nil)
	if res, err := c.Do(out); err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("sign out: %v %v", res, err)
	}
	if res := get(t, c, ta.url+page); res.StatusCode != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want 303 to sign in", res.StatusCode)
	}
	// The demo sign-in opens the browser session too, so links from the
	// chat open signed in.
	if res, err := c.Post(ta.url+"/demo/sign-in", "application/json", strings.NewReader(`{"name":"vic"}`)); err != nil || res.StatusCode != 200 {
		t.Fatalf("demo sign-in: %v %v", res, err)
	}
	if res := get(t, c, ta.url+page); res.StatusCode != http.StatusOK {
		t.Errorf("after the demo sign-in: %d, want 200", res.StatusCode)
	}
}

// TestMCPLinks: the MCP tools link to this server's pages under its public
// URL: a preview to /previews/{id}, which opens for the user that made it.
func TestMCPLinks(t *testing.T) {
	ta := MustApp(t, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "links-test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: ta.url + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{ta.apiKey(t, "alice")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out
	}
	out := call("create_chart_preview", map[string]any{"dataset_id": "ds_weekly_signups", "chart_type": "bar", "x_field": "week",
		"y_fields": []any{"signups"}, "name": "Signups, bars"})
	chart := out["chart"].(map[string]any)
	if chart["url"] != ta.url+"/previews/"+chart["id"].(string) {
		t.Errorf("preview url = %v, want %s/previews/{id}", chart["url"], ta.url)
	}
	if ds := out["datasets"].([]any)[0].(map[string]any); ds["url"] != ta.url+"/datasets/ds_weekly_signups" {
		t.Errorf("dataset url = %v", ds["url"])
	}
	out = call("get_chart_data", map[string]any{"chart_id": "chart_mrr"})
	if u := out["chart"].(map[string]any)["url"]; u != ta.url+"/charts/chart_mrr" {
		t.Errorf("saved chart url = %v", u)
	}
	// The preview's page and data open for alice, and not for carol.
	var view struct {
		Chart struct{ Status string }
	}
	ta.MustDo(t, http.StatusOK, "GET", "/api/charts/"+chart["id"].(string), ta.session(t, "alice"), nil, &view)
	if view.Chart.Status != "preview" {
		t.Errorf("preview view status = %q", view.Chart.Status)
	}
	ta.MustDo(t, http.StatusNotFound, "GET", "/api/charts/"+chart["id"].(string), ta.session(t, "carol"), nil, nil)
}

// TestSignInPicker: the /signin page a signed-out link sends a browser to
// offers the demo users while -demo-sign-in is on, and one chosen signs
// in and goes back; off, neither the list nor the choice works.
func TestSignInPicker(t *testing.T) {
	page := "/previews/chart_weekly_signups"
	for _, on := range []bool{true, false} {
		ta := MustApp(t, func(c *config) { c.demoSignIn = on })
		c := browserClient(t)
		res, err := c.Get(ta.url + "/signin?return=" + url.QueryEscape(page))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := strings.Contains(string(body), `name="demo" value="bob"`); got != on {
			t.Errorf("-demo-sign-in=%v: the page lists bob: %v", on, got)
		}
		if strings.Contains(string(body), sessionPrefix) {
			t.Errorf("-demo-sign-in=%v: the page shows a session token", on)
		}
		res, err = c.PostForm(ta.url+"/signin", url.Values{"demo": {"bob"}, "return": {page}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		signedIn := res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") == page
		if signedIn != on {
			t.Errorf("-demo-sign-in=%v: choosing bob: %d to %q", on, res.StatusCode, res.Header.Get("Location"))
		}
		if res := get(t, c, ta.url+page); (res.StatusCode == http.StatusOK) != on {
			t.Errorf("-demo-sign-in=%v: the page after choosing bob: %d", on, res.StatusCode)
		}
		res, err = c.PostForm(ta.url+"/signin", url.Values{"demo": {"mallory"}, "return": {page}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("-demo-sign-in=%v: choosing mallory: %d, want 401", on, res.StatusCode)
		}
	}
}

// TestSignInCrossSite: another site's form cannot sign a browser in as a
// user it chose (login CSRF) or sign it out: a cross-site POST to
// /signin or /signout is refused 403 and sets no cookie, whether the
// browser says so with Sec-Fetch-Site or only with Origin; the same
// site's form still works.
func TestSignInCrossSite(t *testing.T) {
	ta := MustApp(t, nil)
	post := func(path string, hdr ...string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), "POST", ta.url+path, strings.NewReader(url.Values{"demo": {"vic"}, "return": {"/"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := browserClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, path := range []string{"/signin", "/signout"} {
		for name, hdr := range map[string][]string{
			"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
			"Origin only":               {"Origin", "https://evil.example"},
		} {
			if res := post(path, hdr...); res.StatusCode != http.StatusForbidden || res.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s, %s: %d, Set-Cookie %q; want 403 and no cookie", path, name, res.StatusCode, res.Header.Get("Set-Cookie"))
			}
		}
	}
	if res := post("/signin", "Sec-Fetch-Site", "same-origin", "Origin", ta.url); res.StatusCode != http.StatusSeeOther || res.Header.Get("Set-Cookie") == "" {
		t.Errorf("the page's own form: %d, Set-Cookie %q; want 303 with the session cookie", res.StatusCode, res.Header.Get("Set-Cookie"))
	}
}

// TestDemoSignInForgery is the login CSRF of issue 35: another site's
// form with enctype="text/plain" posts {"name":"x=","name":"carol"} (the
// form's one field, named {"name":"x and valued "name":"carol"}) to
// /demo/sign-in, which would sign the browser in as carol. It is refused
// 403 with no cookie. Each guard holds on its own: from the same site,
// text/plain is refused naming Content-Type, and JSON with the key twice
// naming the key, neither with a cookie; the page's own JSON signs in.
func TestDemoSignInForgery(t *testing.T) {
	ta := MustApp(t, nil)
	forged := "{\"name\":\"x=\",\"name\":\"carol\"}\r\n"
	crossSite := []string{"Origin", "http://evil.test", "Sec-Fetch-Site", "cross-site"}
	sameSite := []string{"Origin", ta.url, "Sec-Fetch-Site", "same-origin"}
	for _, tc := range []struct {
		name, contentType, body string
		from                    []string
		status                  int
		say                     string // the error message; "" for a sign-in
	}{
		{"another site's text/plain form", "text/plain", forged, crossSite, http.StatusForbidden, "a request from another site is refused here"},
		{"another site, Origin only", "text/plain", forged, []string{"Origin", "http://evil.test"}, http.StatusForbidden, "a request from another site is refused here"},
		{"another site's script, as JSON", "application/json", `{"name":"carol"}`, crossSite, http.StatusForbidden, "a request from another site is refused here"},
		{"same site, text/plain", "text/plain", forged, sameSite, http.StatusBadRequest, "Content-Type: must be application/json"},
		{"same site, no Content-Type", "", `{"name":"carol"}`, sameSite, http.StatusBadRequest, "Content-Type: must be application/json"},
		{"same site, the key twice", "application/json", forged, sameSite, http.StatusBadRequest, "name: duplicate key"},
		{"same site, the key twice in another case", "application/json", `{"name":"vic","Name":"carol"}`, sameSite, http.StatusBadRequest, "Name: duplicate key"},
		{"the page's own sign-in", "application/json; charset=utf-8", `{"name":"carol"}`, sameSite, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "POST", ta.url+"/demo/sign-in", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			for i := 0; i+1 < len(tc.from); i += 2 {
				req.Header.Set(tc.from[i], tc.from[i+1])
			}
			res, err := browserClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			cookie := res.Header.Get("Set-Cookie")
			if tc.say == "" {
				if res.StatusCode != tc.status || !strings.HasPrefix(cookie, sessionCookie+"="+ta.session(t, "carol")) {
					t.Errorf("%d, Set-Cookie %q; want %d and carol's session", res.StatusCode, cookie, tc.status)
				}
				return
			}
			var doc struct{ Error struct{ Message string } }
			json.Unmarshal(b, &doc)
			if res.StatusCode != tc.status || doc.Error.Message != tc.say || cookie != "" {
				t.Errorf("%d %s, Set-Cookie %q; want %d %q and no cookie", res.StatusCode, b, cookie, tc.status, tc.say)
			}
		})
	}
}

// TestCookieRoutesRefuseCrossSite: every route the session cookie
// authenticates or sets refuses another site's request that could change
// something, made with the cookie of a signed-in browser: 403, and
// nothing changes. The cookie routes are the Data API, the MCP account
// page, the OAuth consent answer and the login routes; the chat and
// connection APIs take the session only as a bearer token.
func TestCookieRoutesRefuseCrossSite(t *testing.T) {
	ta := MustApp(t, nil)
	ta.oauthToken(t, "alice", teamAcme, []string{"data:read"})
	var clients struct{ Clients []struct{ ID string } }
	alice := ta.session(t, "alice")
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp/clients", alice, nil, &clients)
	if len(clients.Clients) != 1 {
		t.Fatalf("clients = %+v", clients)
	}
	var before struct{ Dashboard struct{ Charts []any } }
	ta.MustDo(t, http.StatusOK, "GET", "/api/dashboards/dash_growth", alice, nil, &before)
	for _, r := range []struct{ method, path, contentType, body string }{
		{"POST", "/api/charts/chart_mrr/add-to-dashboard", "application/json", `{"dashboard_id":"dash_growth"}`},
		{"DELETE", "/account/mcp/clients/" + clients.Clients[0].ID, "", ""},
		{"POST", "/oauth/authorize", "application/x-www-form-urlencoded", "decision=allow&team=acme"},
		{"POST", "/signin", "application/x-www-form-urlencoded", "demo=carol"},
		{"POST", "/signout", "", ""},
		{"POST", "/demo/sign-in", "application/json", `{"name":"carol"}`},
	} {
		for name, from := range map[string][]string{
			"Sec-Fetch-Site": {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
			"Origin only":    {"Origin", "https://evil.example"},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), r.method, ta.url+r.path, strings.NewReader(r.body))
			if r.contentType != "" {
				req.Header.Set("Content-Type", r.contentType)
			}
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: alice})
			for i := 0; i+1 < len(from); i += 2 {
				req.Header.Set(from[i], from[i+1])
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden || res.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s %s, %s: %d, Set-Cookie %q; want 403 and no cookie", r.method, r.path, name, res.StatusCode, res.Header.Get("Set-Cookie"))
			}
		}
	}
	ta.MustDo(t, http.StatusOK, "GET", "/account/mcp/clients", alice, nil, &clients)
	var after struct{ Dashboard struct{ Charts []any } }
	ta.MustDo(t, http.StatusOK, "GET", "/api/dashboards/dash_growth", alice, nil, &after)
	if len(clients.Clients) != 1 || len(after.Dashboard.Charts) != len(before.Dashboard.Charts) {
		t.Errorf("a cross-site request changed something: clients %+v, charts %d → %d", clients, len(before.Dashboard.Charts), len(after.Dashboard.Charts))
	}
}

// TestSignInReturn: /signin sends the browser back only to a path on
// this server, rebuilt from the cleaned path; any other return address,
// however it is written, goes to the home page (issue 35: return=
// /%09/evil.test/x answered Location "/\t/evil.test/x", and browsers
// drop the tab and go to //evil.test/x).
func TestSignInReturn(t *testing.T) {
	ta := MustApp(t, nil)
	for raw, want := range map[string]string{
		"/previews/chart_weekly_signups":                "/previews/chart_weekly_signups",
		ta.url + "/oauth/authorize?client_id=c&state=s": "/oauth/authorize?client_id=c&state=s",
		"/charts/chart_mrr#/connections/c":              "/charts/chart_mrr#/connections/c",
		"/a/../charts//chart_mrr":                       "/charts/chart_mrr",
		"/\t/evil.test/x":                               "/", // the query's %09, decoded by the form
		"/%09/evil.test/x":                              "/",
		"/\\evil.test":                                  "/",
		"/%5Cevil.test":                                 "/",
		"//evil.test":                                   "/",
		"/%2F%2Fevil.test":                              "/evil.test",
		"https:evil.test":                               "/",
		"http://evil.test/":                             "/",
		ta.url + "@evil.test/":                          "/",
		"/x\r\nSet-Cookie: a=b":                         "/",
		"/x%0d%0aSet-Cookie:a=b":                        "/",
		"/x%00":                                         "/",
		"/\u2028/evil.test":                             "/",
		"/%E2%80%A8/evil.test":                          "/",
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", ta.url+"/signin",
			strings.NewReader(url.Values{"demo": {"vic"}, "return": {raw}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := ta.HTTP.Transport.RoundTrip(req) // the Location as sent, whatever it holds
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != want {
			t.Errorf("return=%q: %d to %q, want 303 to %q", raw, res.StatusCode, loc, want)
		}
	}
}
