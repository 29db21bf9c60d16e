package connhttp

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/internal/httpjson"
)

// The connection setup routes: the resolver's options for a missing
// provider (setup), save and connect (a new OAuth connection and the
// start of its sign-in, in one action), the start of a sign-in on a
// saved connection (retry, reconnect), and the callback the provider's
// authorization server redirects the browser to, which completes the
// sign-in and sends the browser on to the connection page.

// OAuthReturn is where a sign-in's callback leads: the connection page
// of ConnectionID, with the conversation and team the sign-in started
// from (all empty for a state askbi did not issue) and, when it failed,
// the error's code. The host's ConnectionPage turns it into a URL.
type OAuthReturn struct {
	ConnectionID   string
	ConversationID string
	TeamID         string
	Error          askbi.Code // "" on success
}

// DefaultConnectionPage is "/" with the return in the query: oauth
// (connected or failed), connection, conversation, team and, on failure,
// code.
func DefaultConnectionPage(ret OAuthReturn) string {
	q := url.Values{}
	if ret.Error == "" {
		q.Set("oauth", "connected")
	} else {
		q.Set("oauth", "failed")
		q.Set("code", string(ret.Error))
	}
	for k, v := range map[string]string{"connection": ret.ConnectionID, "conversation": ret.ConversationID, "team": ret.TeamID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return "/?" + q.Encode()
}

// bindingCookie names the cookie that ties a sign-in's callback to the
// browser that started it.
const bindingCookie = "askbi_oauth_"

// connectionSetup is GET /connections/setup?provider=&capability=: the
// setup card for a missing provider.
func (h *handler) connectionSetup(w http.ResponseWriter, r *http.Request, p access.Principal) {
	q := struct {
		Provider   string `query:"provider" validate:"max=100"`
		Capability string `query:"capability" validate:"max=40"`
	}{Provider: r.URL.Query().Get("provider"), Capability: r.URL.Query().Get("capability")}
	err := httpjson.Check(&q)
	if err == nil && h.resolver == nil {
		err = askbi.Errorf(askbi.Unsupported, "connection setup is not enabled here")
	}
	if err == nil {
		p, err = h.conns.Begin(r.Context(), p)
	}
	var setup connresolve.Setup
	if err == nil {
		setup, err = h.resolver.Setup(r.Context(), p, q.Provider, connresolve.Capability(q.Capability))
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"setup": setup})
}

// connectBody is POST /connections/connect: a verified provider by name
// (its endpoint comes from the catalog, never from the client), or a
// connection of the MCP form (name and URL), with the conversation the
// setup card is in.
type connectBody struct {
	Provider       string `json:"provider" validate:"max=100"`
	Name           string `json:"name" validate:"max=64"`
	URL            string `json:"url" validate:"max=2048"`
	ToolFocus      string `json:"tool_focus" validate:"max=500"`
	ConversationID string `json:"conversation_id" validate:"max=100"`
}

// saveAndConnect saves an inactive OAuth connection and starts its
// sign-in, in one request. 201 with the connection and the
// authorization_url when both worked (200 when Connect used a saved
// connection again: OAuthStart.Reused); a failed save is an error and starts nothing;
// a failed start answers 201 with the saved connection and its error, so
// the client offers the retry (POST .../oauth/start).
func (h *handler) saveAndConnect(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body connectBody
	err := httpjson.Decode(w, r, &body, false)
	in := connections.Input{Name: body.Name, URL: body.URL, ToolFocus: body.ToolFocus, Auth: connections.AuthOAuth}
	switch {
	case err != nil:
	case body.Provider != "" && body.URL != "":
		err = askbi.Errorf(askbi.InvalidArgument, "url: give a verified provider or a URL, not both")
	case body.Provider != "":
		if h.resolver == nil {
			err = askbi.Errorf(askbi.Unsupported, "connection setup is not enabled here")
			break
		}
		v, ok := h.resolver.OAuthProvider(body.Provider)
		if !ok {
			err = askbi.Errorf(askbi.InvalidArgument, "provider: not a verified provider with OAuth sign-in; set the connection up by its URL")
			break
		}
		in.Name, in.URL, in.Provider = orDefault(body.Name, v.Name), v.MCPURL, v.Name
	case body.URL == "" || body.Name == "":
		err = askbi.Errorf(askbi.InvalidArgument, "name and url: required without a provider")
	}
	if err == nil {
		err = h.checkConversation(r.Context(), p, body.ConversationID)
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	c, start, err := h.signin.Connect(r.Context(), p, in, body.ConversationID)
	if c.ID == "" {
		h.error(w, r, err)
		return
	}
	status := http.StatusCreated
	if start.Reused {
		status = http.StatusOK
	}
	doc := map[string]any{"connection": c}
	if err != nil {
		doc["error"] = httpjson.Body(r, h.o.Logger, err)
	} else if start.AuthorizationURL != "" {
		h.setBinding(w, r, start)
		doc["authorization_url"], doc["expires_at"] = start.AuthorizationURL, start.ExpiresAt
	}
	httpjson.WriteJSON(w, status, doc)
}

// startOAuth is POST /connections/{id}/oauth/start: the sign-in of a
// saved OAuth connection (retry after a failed start, or sign in again).
func (h *handler) startOAuth(w http.ResponseWriter, r *http.Request, p access.Principal) {
	var body struct {
		ConversationID string `json:"conversation_id" validate:"max=100"`
	}
	err := httpjson.Decode(w, r, &body, true)
	if err == nil {
		err = h.checkConversation(r.Context(), p, body.ConversationID)
	}
	var start signin.OAuthStart
	if err == nil {
		start, err = h.signin.StartOAuth(r.Context(), p, r.PathValue("id"), body.ConversationID)
	}
	if err != nil {
		h.error(w, r, err)
		return
	}
	h.setBinding(w, r, start)
	httpjson.WriteJSON(w, http.StatusOK, map[string]any{"authorization_url": start.AuthorizationURL, "expires_at": start.ExpiresAt})
}

// setBinding keeps the sign-in's binding in the browser: an HttpOnly
// cookie for the callback path only, that lasts as long as the sign-in.
// SameSite=Lax: the provider's redirect is a top-level navigation, which
// carries it.
func (h *handler) setBinding(w http.ResponseWriter, r *http.Request, start signin.OAuthStart) {
	http.SetCookie(w, &http.Cookie{Name: bindingCookie + start.FlowID, Value: start.Binding, Path: h.callbackPath(),
		Expires: start.ExpiresAt, MaxAge: max(int(time.Until(start.ExpiresAt).Seconds()), 1), HttpOnly: true,
		Secure: h.o.SecureCookies || r.TLS != nil, SameSite: http.SameSiteLaxMode})
}

// oauthCallback is GET /connections/oauth/callback: it completes the
// sign-in (signin.Service.CompleteOAuth: state, binding, code, iss,
// token, discovery) and redirects (303) to the connection page, on
// failure with the error's code. The binding cookie is cleared on
// success and on a final failure, and kept when the failure may pass. It
// never opens the chat or asks the model anything.
func (h *handler) oauthCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cb := signin.OAuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss"), Error: q.Get("error")}
	flow := signin.FlowOfState(cb.State)
	if flow != "" {
		if c, err := r.Cookie(bindingCookie + flow); err == nil {
			cb.Binding = c.Value
		}
	}
	// A host whose product session reaches this request (a cookie) must
	// be the user who started.
	if p, err := h.authn(r); err == nil {
		cb.Caller = &p
	}
	res, err := h.signin.CompleteOAuth(r.Context(), cb)
	// The binding goes once the outcome is final; after a failure that
	// may pass, a reload of this callback completes the sign-in.
	if flow != "" && !res.Retry {
		http.SetCookie(w, &http.Cookie{Name: bindingCookie + flow, Value: "", Path: h.callbackPath(), MaxAge: -1, HttpOnly: true,
			Secure: h.o.SecureCookies || r.TLS != nil, SameSite: http.SameSiteLaxMode})
	}
	ret := OAuthReturn{ConnectionID: res.ConnectionID, ConversationID: res.ConversationID, TeamID: res.TeamID}
	if err != nil {
		ret.Error = askbi.ErrorCode(err)
		if ret.Error == askbi.Internal {
			httpjson.LogInternal(r, h.o.Logger, err)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, h.o.ConnectionPage(ret), http.StatusSeeOther)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
