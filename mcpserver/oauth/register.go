package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/internal/httpjson"
	"github.com/askbi/askbi/internal/outbound"
)

// Registration limits.
const (
	maxRegistrationBytes = 16 << 10
	maxRedirectURIs      = 10
	maxRedirectURILen    = 2000
	maxClientName        = 100
)

// registration is the part of RFC 7591 client metadata the server reads;
// other fields (client_uri, logo_uri, software_id, ...) are ignored.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// register serves dynamic client registration (RFC 7591), for public
// (token_endpoint_auth_method "none") and confidential clients. The
// body is read as every JSON body of the SDK is (httpjson.NewReader:
// application/json, each key once), and fields it does not know are
// ignored, as RFC 7591 asks.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var reg registration
	body, err := httpjson.NewReader(w, r, maxRegistrationBytes, nil)
	if err == nil {
		err = json.NewDecoder(body).Decode(&reg)
	}
	if err != nil {
		registrationError(w, "invalid_client_metadata", "the body must be a JSON object of client metadata sent as application/json, each field once, at most 16 KiB")
		return
	}
	if code, msg := validateRegistration(&reg); code != "" {
		registrationError(w, code, msg)
		return
	}
	// The scopes the client may request: all four by default, else the
	// offered ones it names, with data:read (see withDataRead).
	scopes := access.AllScopes
	if reg.Scope != "" {
		scopes = withDataRead(knownScopes(strings.Fields(reg.Scope)))
	}
	now := s.now().UTC()
	c := Client{ID: newID("mcpc_"), AuthMethod: reg.TokenEndpointAuthMethod, Name: reg.ClientName,
		RedirectURIs: reg.RedirectURIs, Scopes: scopes, CreatedAt: now}
	var secret string
	if c.AuthMethod != "none" {
		secret, c.SecretHash = newSecret()
	}
	if err := s.store.CreateClient(r.Context(), c); err != nil {
		s.log.ErrorContext(r.Context(), "oauth: register client", "err", err)
		registrationError(w, "server_error", "the client could not be registered; try again")
		return
	}
	s.audit.Record(r.Context(), access.Principal{}, ActionRegister, access.Entity{Type: "oauth_client", ID: c.ID}, now, nil,
		map[string]string{"auth_method": c.AuthMethod})
	out := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        now.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": c.AuthMethod,
		"grant_types":                reg.GrantTypes,
		"response_types":             []string{"code"},
		"scope":                      scopeList(c.Scopes),
	}
	if secret != "" {
		out["client_secret"] = secret
		out["client_secret_expires_at"] = 0
	}
	httpjson.WriteJSON(w, http.StatusCreated, out)
}

// validateRegistration fills defaults and checks reg, returning an RFC
// 7591 error code and description, or "".
func validateRegistration(reg *registration) (code, msg string) {
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > maxRedirectURIs {
		return "invalid_redirect_uri", "redirect_uris: 1 to 10 redirect URIs are required"
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return "invalid_redirect_uri", "redirect_uris: " + err.Error()
		}
	}
	reg.ClientName = strings.TrimSpace(reg.ClientName)
	if reg.ClientName == "" {
		reg.ClientName = "Unnamed MCP client"
	}
	if len([]rune(reg.ClientName)) > maxClientName {
		return "invalid_client_metadata", "client_name: at most 100 characters"
	}
	switch reg.TokenEndpointAuthMethod {
	case "":
		reg.TokenEndpointAuthMethod = "client_secret_basic" // RFC 7591's default
	case "none", "client_secret_post", "client_secret_basic":
	default:
		return "invalid_client_metadata", "token_endpoint_auth_method: must be none, client_secret_post or client_secret_basic"
	}
	if len(reg.GrantTypes) == 0 {
		reg.GrantTypes = slices.Clone(grantTypes)
	}
	for _, g := range reg.GrantTypes {
		if !slices.Contains(grantTypes, g) {
			return "invalid_client_metadata", "grant_types: only authorization_code and refresh_token are offered"
		}
	}
	for _, t := range reg.ResponseTypes {
		if t != "code" {
			return "invalid_client_metadata", "response_types: only code is offered"
		}
	}
	return "", ""
}

// checkRedirectURI accepts absolute https URIs, http URIs on a loopback
// host (RFC 8252 §7.3), and private-use schemes of native apps (§7.1,
// such as cursor://), without fragment or user information.
func checkRedirectURI(raw string) error {
	if len(raw) > maxRedirectURILen {
		return errors.New("a redirect URI is at most 2000 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !u.IsAbs() {
		return errors.New("each redirect URI must be an absolute URI")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return errors.New("a redirect URI must not have a fragment")
	}
	if u.User != nil {
		return errors.New("a redirect URI must not hold user information")
	}
	switch scheme := strings.ToLower(u.Scheme); {
	case scheme == "https":
		if u.Host == "" {
			return errors.New("an https redirect URI needs a host")
		}
	case scheme == "http":
		if !outbound.LoopbackHost(u.Hostname()) {
			return errors.New("http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https")
		}
	case slices.Contains([]string{"javascript", "data", "file", "vbscript", "blob", "about"}, scheme):
		return errors.New("scheme " + scheme + " is not allowed")
	}
	return nil
}

// withDataRead returns scopes with data:read added, in documented order.
// Every tool needs data:read, so the server never grants a set without
// it, whatever a client registers or requests: a token without it could
// list no tool at all.
func withDataRead(scopes []access.Scope) []access.Scope {
	return knownScopes(append(scopeArgs(scopes), string(access.ScopeDataRead)))
}

// knownScopes keeps the scopes of names that this server offers, in
// documented order.
func knownScopes(names []string) []access.Scope {
	var out []access.Scope
	for _, s := range access.AllScopes {
		if slices.Contains(names, string(s)) {
			out = append(out, s)
		}
	}
	return out
}

func registrationError(w http.ResponseWriter, code, msg string) {
	status := http.StatusBadRequest
	if code == "server_error" {
		status = http.StatusInternalServerError
	}
	httpjson.WriteJSON(w, status, map[string]string{"error": code, "error_description": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Access-Control-Allow-Origin", "*") // public metadata (RFC 8414 §3)
	httpjson.WriteJSON(w, status, v)
}
