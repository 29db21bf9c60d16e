package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// scopeInfo is how the consent page words a scope.
var scopeInfo = map[access.Scope]struct {
	label, desc string
	write       bool // off by default, owners and admins only
}{
	access.ScopeDataRead:      {"Read data", "Search dashboards, charts and datasets and read their current data.", false},
	access.ScopeDataRefresh:   {"Refresh data", "Run queries again instead of using cached results.", false},
	access.ScopeChartsPreview: {"Create chart previews", "Create temporary charts that are not placed on a dashboard.", true},
	access.ScopeDatasetsWrite: {"Save datasets", "Explore sources and save validated queries as new datasets.", true},
}

// authorize validates an authorization request and shows the consent
// page. Nothing is ever approved without the user's answer to that page.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	if q.Has("request_uri") || q.Has("request") {
		s.errorPage(w, http.StatusBadRequest, "Request objects are not supported.")
		return
	}
	// An unknown client or a redirect URI that is not registered is shown
	// here, never redirected to (RFC 6749 §4.1.2.1). So is a client_id
	// URL whose metadata document cannot be used.
	c, err := s.client(ctx, q.Get("client_id"))
	if err != nil {
		s.clientPage(w, r, err)
		return
	}
	if len(q["redirect_uri"]) != 1 || !matchRedirect(c.RedirectURIs, q.Get("redirect_uri")) {
		s.errorPage(w, http.StatusBadRequest, "The app's return address is not one it registered.")
		return
	}
	ctx = withClient(context.WithValue(ctx, redirectKey, q.Get("redirect_uri")), c)
	ar, err := s.newAuthorizeRequest(ctx, c, q)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	user, err := s.users.SignedIn(r)
	if err != nil {
		s.pageError(w, r, err, "")
		return
	}
	if user == "" {
		http.Redirect(w, r, s.users.SignInURL(s.issuer+"/oauth/authorize?"+r.URL.RawQuery), http.StatusFound)
		return
	}
	teams, err := s.liveTeams(ctx, user)
	if err != nil {
		s.pageError(w, r, err, "")
		return
	}
	if len(teams) == 0 {
		s.errorPage(w, http.StatusForbidden, "You are not a member of any team, so there is nothing to connect.")
		return
	}
	csrf, csrfHash := newSecret()
	req := Request{ID: newID("mcpr_"), ClientID: c.ID, UserID: user, CSRFHash: csrfHash,
		Query: canonicalQuery(ar), ExpiresAt: s.now().Add(s.opts.ConsentLifespan).UTC()}
	if err := s.store.CreateRequest(ctx, req); err != nil {
		s.pageError(w, r, err, "")
		return
	}
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	var docHost, docID string
	if isDocumentID(c.ID) {
		u, _ := url.Parse(c.ID)
		docHost, docID = displayHost(u), c.ID
	}
	var scopes []consentScope
	for _, sc := range scopesOf(ar.GetRequestedScopes()) {
		info := scopeInfo[sc]
		scopes = append(scopes, consentScope{Name: string(sc), Label: info.label, Desc: info.desc,
			Required: sc == access.ScopeDataRead, Checked: !info.write, Write: info.write})
	}
	s.writePage(w, redirect, http.StatusOK, consentPage{
		Product: s.opts.ProductName, App: c.Name, ReturnHost: returnHost(redirect), DocHost: docHost, ClientID: docID, User: user,
		Teams: teams, Scopes: scopes, RequestID: req.ID, CSRF: csrf, Action: s.issuer + "/oauth/authorize",
		SwitchUser: s.users.SignInURL(s.issuer + "/oauth/authorize?" + r.URL.RawQuery),
	})
}

// newAuthorizeRequest has fosite validate the request after three
// adjustments: scopes this server does not offer (offline_access,
// openid, ...) are dropped, no scope at all means every scope the client
// may request, and data:read is always requested (withDataRead);
// resource must be this server's MCP URL (RFC 8707) and becomes the
// audience, absent meaning that same URL, the only resource here. PKCE
// must be S256.
func (s *Server) newAuthorizeRequest(ctx context.Context, c Client, q url.Values) (fosite.AuthorizeRequester, error) {
	q = cloneValues(q)
	allowed := withDataRead(c.Scopes)
	scopes := knownScopes(strings.Fields(q.Get("scope")))
	scopes = slices.DeleteFunc(scopes, func(sc access.Scope) bool { return !slices.Contains(allowed, sc) })
	if len(scopes) == 0 {
		scopes = allowed
	}
	q.Set("scope", scopeList(withDataRead(scopes)))
	res := q["resource"]
	q.Del("resource")
	q.Del("audience")
	ar, err := s.authorizeRequest(ctx, q)
	if err != nil {
		return ar, err
	}
	if len(res) > 1 || len(res) == 1 && res[0] != s.resource {
		return ar, errInvalidTarget()
	}
	ar.(*fosite.AuthorizeRequest).Form.Set("resource", s.resource)
	ar.SetRequestedAudience(fosite.Arguments{s.resource})
	switch m := q.Get("code_challenge_method"); {
	case q.Get("code_challenge") == "":
		return ar, fosite.ErrInvalidRequest.WithHint("PKCE is required: send code_challenge with code_challenge_method S256.")
	case m != "S256":
		return ar, fosite.ErrInvalidRequest.WithHint("Only the S256 code_challenge_method is supported.")
	}
	return ar, nil
}

// noState is the state fosite validates for a request that sent none:
// fosite refuses a state shorter than one character, while OAuth 2.1
// makes state optional under PKCE. It never reaches the client or the
// store.
const noState = "none"

// authorizeRequest has fosite validate the authorization request q. A
// request without state is validated with noState, which is then taken
// out again, so the response carries no state either.
func (s *Server) authorizeRequest(ctx context.Context, q url.Values) (fosite.AuthorizeRequester, error) {
	sent := q.Get("state") != ""
	if !sent {
		q = cloneValues(q)
		q.Set("state", noState)
	}
	fr := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/oauth/authorize", RawQuery: q.Encode()}, Header: http.Header{}}
	ar, err := s.provider.NewAuthorizeRequest(ctx, fr)
	if r, ok := ar.(*fosite.AuthorizeRequest); ok && !sent {
		r.State = ""
		r.Form.Del("state")
	}
	return ar, err
}

// canonicalQuery is the validated request as the consent answer will
// replay it to fosite.
func canonicalQuery(ar fosite.AuthorizeRequester) string {
	f := ar.GetRequestForm()
	q := url.Values{}
	for _, k := range []string{"response_type", "client_id", "redirect_uri", "state", "scope", "code_challenge", "code_challenge_method", "resource"} {
		if v := f.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	q.Set("scope", strings.Join(ar.GetRequestedScopes(), " "))
	return q.Encode()
}

// consent takes the consent page's answer.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	user, err := s.users.SignedIn(r)
	if err != nil {
		s.pageError(w, r, err, "")
		return
	}
	if user == "" {
		s.errorPage(w, http.StatusUnauthorized, "Sign in, then connect the app again.")
		return
	}
	// A metadata document is read before the request is taken: a
	// document that cannot be fetched now leaves the page to be answered
	// again. The client_id field only says which document to read; the
	// request taken next must name the same client.
	docID := r.PostForm.Get("client_id")
	if isDocumentID(docID) {
		c, err := s.client(ctx, docID)
		if err != nil {
			s.clientPage(w, r, err)
			return
		}
		ctx = withClient(ctx, c)
	}
	// The request is taken first, so a form can be answered only once.
	req, err := s.store.TakeRequest(ctx, r.PostForm.Get("request_id"), s.now())
	if err != nil {
		s.pageError(w, r, err, "This page has expired or was already answered. Connect the app again.")
		return
	}
	if req.UserID != user || !equalHash(r.PostForm.Get("csrf"), req.CSRFHash) || isDocumentID(req.ClientID) && req.ClientID != docID {
		s.errorPage(w, http.StatusForbidden, "This answer did not come from your consent page. Connect the app again.")
		return
	}
	q, err := url.ParseQuery(req.Query)
	if err != nil {
		s.pageError(w, r, err, "")
		return
	}
	ctx = context.WithValue(ctx, redirectKey, q.Get("redirect_uri"))
	ar, err := s.authorizeRequest(ctx, q)
	if err != nil {
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		s.writeAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The user denied access."))
		return
	}
	g, msg, err := s.grant(ctx, user, req.ClientID, r.PostForm.Get("team"), ar.GetRequestedScopes(), r.PostForm["scope"])
	if msg != "" || err != nil {
		s.pageError(w, r, err, msg)
		return
	}
	ar.SetID(g.ID)
	ar.SetRequestedAudience(fosite.Arguments{s.resource})
	for _, sc := range g.Scopes {
		ar.GrantScope(string(sc))
	}
	ar.GrantAudience(s.resource)
	resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &fosite.DefaultSession{Subject: user})
	if err != nil {
		s.revokeGrant(ctx, g.ID, "authorize_failed")
		s.writeAuthorizeError(ctx, w, ar, err)
		return
	}
	resp.AddParameter("iss", s.issuer) // RFC 9207
	if ar.GetState() == "" {
		resp.GetParameters().Del("state") // none was sent: none comes back
	}
	s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
}

// grant checks the consent answer and stores its grant. A user may drop
// optional scopes, never add one the client did not request; data:read,
// which every tool needs and every request has (newAuthorizeRequest), is
// not optional. Owners and admins may grant
// team-wide access; other members only the existing-data scopes, on the
// projects they have now. The grant replaces the user's earlier grants
// to this client in this team. msg is a safe refusal for the user.
func (s *Server) grant(ctx context.Context, user, clientID, teamID string, requested fosite.Arguments, chosen []string) (_ Grant, msg string, err error) {
	live, err := s.checker.Live(ctx, access.Principal{UserID: user, TeamID: teamID, Auth: access.AuthSession})
	if err != nil {
		return Grant{}, "Choose a team you are a member of.", nil
	}
	var scopes []access.Scope
	for _, name := range chosen {
		if !requested.Has(name) {
			return Grant{}, "The app did not ask for " + name + "; you can only allow what it asked for.", nil
		}
	}
	scopes = knownScopes(chosen)
	if !slices.Contains(scopes, access.ScopeDataRead) {
		return Grant{}, "Read data is required: every tool needs it.", nil
	}
	projects := access.AllProjects()
	if !live.Role.AtLeast(access.RoleAdmin) {
		for _, sc := range scopes {
			if scopeInfo[sc].write {
				return Grant{}, "Only a team owner or admin can allow " + scopeInfo[sc].label + " in this team.", nil
			}
		}
		projects = access.ProjectSet(live.Projects.IDs...)
		if live.Projects.All {
			projects = access.AllProjects()
		}
	}
	began := s.now()
	g := Grant{ID: newID("mcpg_"), ClientID: clientID, UserID: user, TeamID: teamID, Scopes: scopes, Projects: projects, CreatedAt: began.UTC()}
	old, err := s.store.Grants(ctx, user)
	if err != nil {
		return Grant{}, "", err
	}
	if err := s.store.CreateGrant(ctx, g); err != nil {
		return Grant{}, "", err
	}
	for _, o := range old {
		if o.ClientID == clientID && o.TeamID == teamID {
			s.revokeGrant(ctx, o.ID, "replaced")
		}
	}
	s.audit.Record(ctx, live, ActionConsent, access.Team(teamID), began, nil,
		map[string]string{"client_id": clientID, "grant_id": g.ID, "scopes": scopeList(scopes)})
	return g, "", nil
}

// liveTeams returns userID's teams with their live roles.
func (s *Server) liveTeams(ctx context.Context, user string) ([]consentTeam, error) {
	teams, err := s.users.Teams(ctx, user)
	if err != nil {
		return nil, err
	}
	var out []consentTeam
	for _, t := range teams {
		live, err := s.checker.Live(ctx, access.Principal{UserID: user, TeamID: t.ID, Auth: access.AuthSession})
		if askbi.ErrorCode(err) == askbi.Forbidden {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, consentTeam{ID: t.ID, Name: t.Name, Role: string(live.Role), Admin: live.Role.AtLeast(access.RoleAdmin)})
	}
	return out, nil
}

// writeAuthorizeError answers an authorization error: redirected to the
// client with iss (RFC 9207) when its redirect URI is valid, else shown.
func (s *Server) writeAuthorizeError(ctx context.Context, w http.ResponseWriter, ar fosite.AuthorizeRequester, err error) {
	if ar == nil || !ar.IsRedirectURIValid() {
		s.errorPage(w, http.StatusBadRequest, "The app's authorization request is invalid: "+fosite.ErrorToRFC6749Error(err).GetDescription())
		return
	}
	s.provider.WriteAuthorizeError(ctx, issWriter{ResponseWriter: w, iss: s.issuer}, ar, err)
}

// issWriter adds iss to the redirect of an authorization error, and
// drops the empty state fosite adds when the request had none.
type issWriter struct {
	http.ResponseWriter
	iss string
}

func (w issWriter) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" && code >= 300 && code < 400 {
		if u, err := url.Parse(loc); err == nil {
			q := u.Query()
			q.Set("iss", w.iss)
			if q.Get("state") == "" {
				q.Del("state")
			}
			u.RawQuery = q.Encode()
			w.Header().Set("Location", u.String())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// pageError shows err's safe message (or msg when set), logging internal
// errors.
func (s *Server) pageError(w http.ResponseWriter, r *http.Request, err error, msg string) {
	if err != nil && askbi.ErrorCode(err) == askbi.Internal {
		s.log.ErrorContext(r.Context(), "oauth: internal error", "path", r.URL.Path, "err", err)
	}
	status := http.StatusBadRequest
	switch {
	case msg != "":
	case askbi.ErrorCode(err) == askbi.Unavailable:
		status, msg = http.StatusServiceUnavailable, "The service is unavailable; try again shortly."
	default:
		status, msg = http.StatusInternalServerError, "Something went wrong; try again."
	}
	s.errorPage(w, status, msg)
}

func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	s.writePage(w, nil, status, consentPage{Product: s.opts.ProductName, Error: msg})
}

// returnHost is what the page shows of a redirect URI: its host, or the
// app's scheme for a native app.
func returnHost(u *url.URL) string {
	if u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return u.Host
	}
	return u.Scheme + ":"
}

type consentScope struct {
	Name, Label, Desc        string
	Required, Checked, Write bool
}

type consentTeam struct {
	ID, Name, Role string
	Admin          bool
}

type consentPage struct {
	Product, App, ReturnHost, User string
	// DocHost is the host of a metadata document client's client_id, the
	// one thing about the app the server checked; ClientID is that
	// client_id, for the answer (consent).
	DocHost, ClientID       string
	Teams                   []consentTeam
	Scopes                  []consentScope
	RequestID, CSRF, Action string
	SwitchUser              string
	Error                   string
}

const pageCSS = `body{font:15px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d2430}` +
	`h1{font-size:1.3rem}.unverified{color:#8a5a00;font-size:.85rem}fieldset{border:1px solid #d5dae1;border-radius:6px;margin:1rem 0}` +
	`label{display:block;margin:.4rem 0}small{color:#5b6572;display:block;margin-left:1.6rem}` +
	`.buttons{display:flex;gap:.6rem}button{padding:.5rem 1.1rem;font-size:1rem}.error{color:#a0001b}`

// pageCSP is the consent page's Content-Security-Policy: nothing loads
// but its own inline style (by hash), it posts only to itself (and the
// app's return address it redirects to), and it cannot be framed.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; base-uri 'none'; frame-ancestors 'none'"
}()

var pageTmpl = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Connect an app · {{.Product}}</title><style>` + pageCSS + `</style></head><body>
{{if .Error}}<h1>{{.Product}}</h1><p class="error" role="alert">{{.Error}}</p>{{else}}
<h1>Connect {{.App}} to {{.Product}}</h1>
<p><strong>{{.App}}</strong> <span class="unverified">(unverified: the app chose this name)</span> wants to use your data through MCP.
It will return to <strong>{{.ReturnHost}}</strong>.{{if .DocHost}} Its name and return addresses are published by <strong>{{.DocHost}}</strong>.{{end}}</p>
<p>Signed in as <strong>{{.User}}</strong>. <a href="{{.SwitchUser}}">Not you?</a></p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request_id" value="{{.RequestID}}"><input type="hidden" name="csrf" value="{{.CSRF}}">{{if .ClientID}}<input type="hidden" name="client_id" value="{{.ClientID}}">{{end}}
<fieldset><legend>Team</legend>
{{range $i, $t := .Teams}}<label><input type="radio" name="team" value="{{$t.ID}}" required{{if eq $i 0}} checked{{end}}> {{$t.Name}} <small>your role: {{$t.Role}}{{if not $t.Admin}}; you can allow read and refresh on your projects only{{end}}</small></label>
{{end}}<small>The app gets this one team. Another team needs another consent.</small></fieldset>
<fieldset><legend>Permissions</legend>
{{range .Scopes}}<label>{{if .Required}}<input type="hidden" name="scope" value="{{.Name}}"><input type="checkbox" checked disabled>{{else}}<input type="checkbox" name="scope" value="{{.Name}}"{{if .Checked}} checked{{end}}>{{end}} {{.Label}}{{if .Write}} (owners and admins){{end}}<small>{{.Desc}}</small></label>
{{end}}</fieldset>
<div class="buttons"><button type="submit" name="decision" value="allow">Allow</button><button type="submit" name="decision" value="deny">Deny</button></div>
</form>{{end}}
</body></html>`))

// writePage renders the page with the headers that keep it out of frames
// and caches. redirect, when set, is added to form-action: browsers apply
// form-action to the redirect that follows the form's post.
func (s *Server) writePage(w http.ResponseWriter, redirect *url.URL, status int, p consentPage) {
	h := w.Header()
	csp := pageCSP + "; form-action " + sourceOf(s.issuer)
	if redirect != nil {
		csp += " " + sourceOf(redirect.String())
	}
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	pageTmpl.Execute(w, p)
}

// sourceOf is the CSP source of a URL: its origin, or its scheme for a
// native app's private-use scheme.
func sourceOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "'none'"
	}
	if u.Scheme == "http" || u.Scheme == "https" {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + ":"
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}
